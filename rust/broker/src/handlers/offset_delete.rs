//! OffsetDelete (v0): drop a group's committed offsets of some partitions. A group with
//! members keeps those of topics it subscribes to (GROUP_SUBSCRIBED_TO_TOPIC).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse, RequestHeader};
use kafka_protocol::protocol::Decodable;

use crate::groups::errors;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = OffsetDeleteRequest::decode(&mut body, version)?;
    // Partitions of unknown topics are answered here; the group decides on the rest.
    let mut known = Vec::new();
    let mut slots: Vec<Vec<Option<usize>>> = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let count = state
            .topic(&topic.name.0)
            .map_or(0, |t| t.partition_count());
        let mut topic_slots = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            if (0..count).contains(&p.partition_index) {
                topic_slots.push(Some(known.len()));
                known.push((topic.name.0.to_string(), p.partition_index));
            } else {
                topic_slots.push(None);
            }
        }
        slots.push(topic_slots);
    }
    let response = match state.groups.delete_offsets(&request.group_id.0, &known) {
        Err(error) => OffsetDeleteResponse::default().with_error_code(error),
        Ok(results) => {
            let topics = request
                .topics
                .iter()
                .zip(slots)
                .map(|(topic, topic_slots)| {
                    let partitions = topic
                        .partitions
                        .iter()
                        .zip(topic_slots)
                        .map(|(p, slot)| {
                            OffsetDeleteResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(
                                    slot.map_or(errors::UNKNOWN_TOPIC_OR_PARTITION, |i| results[i]),
                                )
                        })
                        .collect();
                    OffsetDeleteResponseTopic::default()
                        .with_name(topic.name.clone())
                        .with_partitions(partitions)
                })
                .collect();
            OffsetDeleteResponse::default().with_topics(topics)
        }
    };
    encode(&response, version).map(Some)
}
