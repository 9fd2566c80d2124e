//! DescribeLogDirs (v1-v5): every log dir of this broker with the replicas it hosts there
//! (the partitions whose replica list names this broker), each with its size on disk and
//! offset lag (Kafka's: how far the log end trails the high watermark, 0 for a replica
//! that has all committed records), plus the dir's filesystem capacity (v4). A replica
//! being moved to another dir (AlterReplicaLogDirs) is also listed in its destination as
//! a future replica, lagging by what was appended since its copy began; v5 says whether
//! the dir is cordoned (KIP-1066: named in `cordoned.log.dirs`, or every dir for `*`).
//! Needs DESCRIBE on the cluster, as in Kafka.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{
    DescribeLogDirsRequest, DescribeLogDirsResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::cluster::log_dir_placement::capacity;
use crate::cluster::replica_move::Moves;
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::{BrokerState, Partition};

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DescribeLogDirsRequest::decode(&mut body, version)?;
    if !authz::cluster(state, ctx, authz::operation::DESCRIBE) {
        let refused =
            DescribeLogDirsResponse::default().with_error_code(codes::CLUSTER_AUTHORIZATION_FAILED);
        return encode(&refused, version).map(Some);
    }
    let node = state.config.node_id;
    // Null topics: every replica; a list: only the partitions it names.
    let wanted = |p: &Partition| match &request.topics {
        None => true,
        Some(topics) => topics
            .iter()
            .any(|t| t.topic.0.as_str() == p.topic && t.partitions.contains(&p.index)),
    };
    let hosted: Vec<Arc<Partition>> = state
        .topics
        .partitions(None)
        .into_iter()
        .filter(|p| p.replica_state().replicas.contains(&node) && wanted(p))
        .collect();
    let cordoned = state.dynamic.live().settings.list("cordoned.log.dirs");
    let results = state
        .config
        .log_dirs
        .iter()
        .map(|dir| {
            describe_dir(dir, &hosted, state.topics.moves())
                .with_is_cordoned(is_cordoned(dir, &cordoned))
        })
        .collect();
    encode(
        &DescribeLogDirsResponse::default().with_results(results),
        version,
    )
    .map(Some)
}

/// Whether `cordoned.log.dirs` (its entries) names `dir`; `*` names every dir.
fn is_cordoned(dir: &Path, cordoned: &[String]) -> bool {
    cordoned
        .iter()
        .any(|entry| entry.trim() == "*" || Path::new(entry.trim()) == dir)
}

fn describe_dir(dir: &Path, hosted: &[Arc<Partition>], moves: &Moves) -> DescribeLogDirsResult {
    let mut topics: Vec<DescribeLogDirsTopic> = Vec::new();
    let mut add = |topic: &str, partition: DescribeLogDirsPartition| match topics
        .iter_mut()
        .find(|t| t.name.0.as_str() == topic)
    {
        Some(t) => t.partitions.push(partition),
        None => topics.push(
            DescribeLogDirsTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(vec![partition]),
        ),
    };
    for p in hosted {
        let here = p.dir().parent() == Some(dir);
        let future = moves.future(&p.topic, p.index).filter(|f| f.log_dir == dir);
        if !here && future.is_none() {
            continue;
        }
        let (size, end) = {
            let log = p.log.lock().expect("lock");
            (log.size_bytes(), log.log_end_offset())
        };
        if here {
            let partition = DescribeLogDirsPartition::default()
                .with_partition_index(p.index)
                .with_partition_size(i64::try_from(size).unwrap_or(i64::MAX))
                .with_offset_lag((p.high_watermark() - end).max(0));
            add(&p.topic, partition);
        }
        if let Some(future) = future {
            let partition = DescribeLogDirsPartition::default()
                .with_partition_index(p.index)
                .with_partition_size(i64::try_from(future.size).unwrap_or(i64::MAX))
                .with_offset_lag((end - future.copied_from_end).max(0))
                .with_is_future_key(true);
            add(&p.topic, partition);
        }
    }
    for t in &mut topics {
        t.partitions.sort_by_key(|p| p.partition_index);
    }
    let (error_code, total, usable) = match capacity(dir) {
        Some((total, usable)) => (codes::NONE, total, usable),
        None => (codes::KAFKA_STORAGE_ERROR, -1, -1),
    };
    DescribeLogDirsResult::default()
        .with_error_code(error_code)
        .with_log_dir(StrBytes::from_string(dir.display().to_string()))
        .with_topics(topics)
        .with_total_bytes(total)
        .with_usable_bytes(usable)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::is_cordoned;

    #[test]
    fn cordoned_dirs_are_the_ones_named_or_all_for_a_star() {
        let dir = Path::new("/data/kafka-1");
        let named = |entries: &[&str]| {
            let entries: Vec<String> = entries.iter().map(|e| (*e).to_string()).collect();
            is_cordoned(dir, &entries)
        };
        assert!(!named(&[]));
        assert!(named(&["/data/kafka-1"]));
        assert!(named(&["/data/kafka-0", " /data/kafka-1 "]));
        assert!(!named(&["/data/kafka-0"]));
        assert!(named(&["*"]));
    }
}
