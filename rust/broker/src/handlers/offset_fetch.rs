//! OffsetFetch (v1-7): committed offsets with their metadata; -1 where nothing is committed.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, RequestHeader, TopicName};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::groups::Committed;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = OffsetFetchRequest::decode(&mut body, version)?;
    let group = request.group_id.0.to_string();
    let wanted: Vec<(String, Vec<i32>)> = match &request.topics {
        Some(topics) => topics
            .iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
            .collect(),
        // Null topics (v2+): everything the group has committed.
        None => {
            let mut by_topic: std::collections::BTreeMap<String, Vec<i32>> =
                std::collections::BTreeMap::new();
            for (topic, partition, _) in state.offsets.of_group(&group) {
                by_topic.entry(topic).or_default().push(partition);
            }
            by_topic.into_iter().collect()
        }
    };
    let topics = wanted
        .into_iter()
        .map(|(topic, partitions)| {
            let partitions = partitions
                .into_iter()
                .map(|p| {
                    let c = state.offsets.get(&group, &topic, p).unwrap_or(Committed {
                        offset: -1,
                        leader_epoch: -1,
                        metadata: Some(String::new()),
                        commit_ms: -1,
                    });
                    OffsetFetchResponsePartition::default()
                        .with_partition_index(p)
                        .with_committed_offset(c.offset)
                        .with_committed_leader_epoch(if version >= 5 { c.leader_epoch } else { -1 })
                        .with_metadata(c.metadata.map(StrBytes::from_string))
                })
                .collect();
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic)))
                .with_partitions(partitions)
        })
        .collect();
    encode(&OffsetFetchResponse::default().with_topics(topics), version).map(Some)
}
