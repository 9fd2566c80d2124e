//! OffsetCommit for simple consumers (generation -1, no member id: assign()-mode clients).
//! Group-managed commits need the group coordinator, which is not here yet, so a commit
//! that names a member or generation is refused with UNKNOWN_MEMBER_ID.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, RequestHeader};
use kafka_protocol::protocol::Decodable;

use crate::groups::Committed;
use crate::response::{encode, ResponseBody};
use crate::state::{codes, BrokerState};

const INVALID_GROUP_ID: i16 = 24;
const UNKNOWN_MEMBER_ID: i16 = 25;

pub async fn handle(
    state: &Arc<BrokerState>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = OffsetCommitRequest::decode(&mut body, version)?;
    let group = request.group_id.0.to_string();
    let group_error = if group.is_empty() {
        Some(INVALID_GROUP_ID)
    } else if request.generation_id_or_member_epoch >= 0 || !request.member_id.is_empty() {
        Some(UNKNOWN_MEMBER_ID)
    } else {
        None
    };
    let now = kafkalite_core::storage::log::now_ms();
    let mut accepted = Vec::new();
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let name = topic.name.0.to_string();
        let known = state.topic(&name);
        let partitions = topic
            .partitions
            .iter()
            .map(|p| {
                let error = group_error.unwrap_or_else(|| match &known {
                    Some(t)
                        if p.partition_index >= 0 && p.partition_index < t.partition_count() =>
                    {
                        let metadata = p.committed_metadata.as_ref().map(|m| m.to_string());
                        let commit = Committed {
                            offset: p.committed_offset,
                            leader_epoch: p.committed_leader_epoch,
                            metadata,
                            commit_ms: now,
                        };
                        accepted.push((name.clone(), p.partition_index, commit));
                        0
                    }
                    _ => codes::UNKNOWN_TOPIC_OR_PARTITION,
                });
                OffsetCommitResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(error)
            })
            .collect();
        topics.push(
            OffsetCommitResponseTopic::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions),
        );
    }
    if let Err(e) = state.offsets.commit(&group, &accepted) {
        // Nothing was published: report the storage failure on every accepted partition.
        for t in &mut topics {
            for p in &mut t.partitions {
                if p.error_code == 0 {
                    p.error_code = e.kafka_code();
                }
            }
        }
    }
    encode(
        &OffsetCommitResponse::default().with_topics(topics),
        version,
    )
    .map(Some)
}
