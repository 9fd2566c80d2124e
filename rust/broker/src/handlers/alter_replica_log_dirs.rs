//! AlterReplicaLogDirs (v1-v2): move replicas hosted here to another of this broker's log
//! dirs (`cluster::replica_move`). As in Kafka the answer comes at once and the move runs
//! in the background; DescribeLogDirs shows the copy as a future replica until it is done.
//! Needs ALTER on the cluster.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
};
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::cluster::log_dir_placement::partition_dir_name;
use crate::cluster::partition_dirs::FUTURE_SUFFIX;
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::BrokerState;

/// A future replica's dir name (`<topic>-<index>.<32 hex>-future`) must fit a file name.
const MAX_NAME: usize = 255;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = AlterReplicaLogDirsRequest::decode(&mut body, version)?;
    let allowed = authz::cluster(state, ctx, authz::operation::ALTER);
    // As Kafka reads the request: one destination per partition, the last named wins.
    let mut wanted: Vec<(String, i32, String)> = Vec::new();
    for dir in &request.dirs {
        for topic in &dir.topics {
            for &index in &topic.partitions {
                let name = topic.name.0.to_string();
                wanted.retain(|(t, i, _)| !(*t == name && *i == index));
                wanted.push((name, index, dir.path.to_string()));
            }
        }
    }
    let mut results: Vec<AlterReplicaLogDirTopicResult> = Vec::new();
    for (topic, index, path) in wanted {
        let code = if allowed {
            alter(state, &topic, index, &path)
        } else {
            codes::CLUSTER_AUTHORIZATION_FAILED
        };
        let result = AlterReplicaLogDirPartitionResult::default()
            .with_partition_index(index)
            .with_error_code(code);
        match results
            .iter_mut()
            .find(|r| r.topic_name.0.as_str() == topic)
        {
            Some(r) => r.partitions.push(result),
            None => results.push(
                AlterReplicaLogDirTopicResult::default()
                    .with_topic_name(TopicName(StrBytes::from_string(topic)))
                    .with_partitions(vec![result]),
            ),
        }
    }
    encode(
        &AlterReplicaLogDirsResponse::default().with_results(results),
        version,
    )
    .map(Some)
}

/// Kafka's checks in its order: the name fits a future dir, the dir is one of this
/// broker's, the replica is hosted here.
fn alter(state: &BrokerState, topic: &str, index: i32, path: &str) -> i16 {
    let future_name = format!(
        "{}.{}{FUTURE_SUFFIX}",
        partition_dir_name(topic, index),
        "0".repeat(32)
    );
    if future_name.len() > MAX_NAME {
        return codes::INVALID_TOPIC_EXCEPTION;
    }
    let Some(dest) = state.topics.log_dir(path) else {
        return codes::LOG_DIR_NOT_FOUND;
    };
    let Some(found) = state.topics.get(topic) else {
        return codes::UNKNOWN_TOPIC_OR_PARTITION;
    };
    if index < 0 || index >= found.partition_count() {
        return codes::UNKNOWN_TOPIC_OR_PARTITION;
    }
    let Some(partition) = found.partition(index) else {
        // Known here, hosted by other brokers: Kafka keeps REPLICA_NOT_AVAILABLE.
        return codes::REPLICA_NOT_AVAILABLE;
    };
    match state.topics.moves().request(&partition, &dest) {
        Ok(_) => codes::NONE,
        Err(_) => codes::KAFKA_STORAGE_ERROR,
    }
}
