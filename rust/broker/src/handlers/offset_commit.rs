//! OffsetCommit (v2-10): group members commit for their generation; simple consumers
//! (generation -1, no member id: assign()-mode clients) commit to groups without members.
//! A member's commit (generation >= 0) to a group that does not exist is ILLEGAL_GENERATION
//! before v9 and GROUP_ID_NOT_FOUND from v9 (KIP-848), as Kafka answers. In a
//! consumer-protocol group the generation is the member epoch: an old one is
//! STALE_MEMBER_EPOCH.
//! Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION and metadata over
//! `offset.metadata.max.bytes` OFFSET_METADATA_TOO_LARGE, the rest the group's verdict.
//! v10 (KIP-848) names topics by id: an id no topic has is UNKNOWN_TOPIC_ID for each of
//! its partitions, before the topic ACL is asked (Kafka's order); the answer names the
//! topics by the ids asked. Offsets are kept by topic name either way.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    OffsetCommitRequest, OffsetCommitResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::groups::{errors, Committed};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::BrokerState;

/// Retention time "use the broker's" (v2-4).
const DEFAULT_RETENTION_TIME: i64 = -1;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = OffsetCommitRequest::decode(&mut body, version)?;
    let now = kafkalite_core::storage::clock::now_ms();
    let expire_ms = (version <= 4 && request.retention_time_ms != DEFAULT_RETENTION_TIME)
        .then(|| now.saturating_add(request.retention_time_ms));
    let max_metadata = state.groups.config().offset_metadata_max_bytes;
    // Per partition: an error already known, or None while it waits for the group's.
    let mut errors_by_topic: Vec<Vec<Option<i16>>> = Vec::with_capacity(request.topics.len());
    let mut commits = Vec::new();
    for topic in &request.topics {
        // v10: the topic by its id; the name stays empty when no topic has it.
        let (name, known) = if version >= 10 {
            match state.topic_by_id(topic.topic_id) {
                Some(t) => (TopicName(StrBytes::from_string(t.name.clone())), Some(t)),
                None => (TopicName::default(), None),
            }
        } else {
            (topic.name.clone(), state.topic(&topic.name.0))
        };
        let unknown_id = version >= 10 && known.is_none();
        let mut topic_errors = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            let metadata = p
                .committed_metadata
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            let error = match &known {
                _ if unknown_id => Some(errors::UNKNOWN_TOPIC_ID),
                _ if !authz::topic(state, ctx, authz::operation::READ, &name) => {
                    Some(errors::TOPIC_AUTHORIZATION_FAILED)
                }
                Some(t) if (0..t.partition_count()).contains(&p.partition_index) => {
                    if metadata.len() > max_metadata {
                        Some(errors::OFFSET_METADATA_TOO_LARGE)
                    } else {
                        commits.push((
                            name.0.to_string(),
                            p.partition_index,
                            Committed {
                                offset: p.committed_offset,
                                leader_epoch: p.committed_leader_epoch,
                                metadata,
                                commit_ms: now,
                                expire_ms,
                            },
                        ));
                        None
                    }
                }
                _ => Some(errors::UNKNOWN_TOPIC_OR_PARTITION),
            };
            topic_errors.push(error);
        }
        errors_by_topic.push(topic_errors);
    }
    // Kafka accepts "" as a group id here, for old clients.
    let verdict = if commits.is_empty() {
        None
    } else {
        state
            .groups
            .commit_offsets(
                &request.group_id.0,
                request.generation_id_or_member_epoch,
                &request.member_id,
                request.group_instance_id.as_deref(),
                commits,
                version,
            )
            .err()
    };
    let verdict = match verdict {
        Some(errors::ILLEGAL_GENERATION)
            if version >= 9
                && request.generation_id_or_member_epoch >= 0
                && matches!(state.groups.describe(&request.group_id.0), Ok(None)) =>
        {
            Some(errors::GROUP_ID_NOT_FOUND)
        }
        other => other,
    };
    let group_error = verdict.unwrap_or(errors::NONE);
    // As Kafka's response builder: one answer per topic (by id from v10, where every
    // unknown id is the same nil one; by name before), the partitions refused before the
    // group coordinator is asked (unknown, unauthorized) first, then the coordinator's.
    let refused_early = |e: &Option<i16>| {
        matches!(
            e,
            Some(
                errors::UNKNOWN_TOPIC_ID
                    | errors::TOPIC_AUTHORIZATION_FAILED
                    | errors::UNKNOWN_TOPIC_OR_PARTITION
            )
        )
    };
    let mut topics: Vec<OffsetCommitResponseTopic> = Vec::new();
    for early in [true, false] {
        for (topic, topic_errors) in request.topics.iter().zip(&errors_by_topic) {
            let partitions: Vec<OffsetCommitResponsePartition> = topic
                .partitions
                .iter()
                .zip(topic_errors)
                .filter(|(_, e)| refused_early(e) == early)
                .map(|(p, error)| {
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(error.unwrap_or(group_error))
                })
                .collect();
            if partitions.is_empty() && !(early && topic.partitions.is_empty()) {
                continue;
            }
            let same = |t: &&mut OffsetCommitResponseTopic| {
                if version >= 10 {
                    t.topic_id == topic.topic_id
                } else {
                    t.name == topic.name
                }
            };
            match topics.iter_mut().find(same) {
                Some(t) => t.partitions.extend(partitions),
                None => topics.push(
                    OffsetCommitResponseTopic::default()
                        .with_name(topic.name.clone())
                        .with_topic_id(topic.topic_id)
                        .with_partitions(partitions),
                ),
            }
        }
    }
    encode(
        &OffsetCommitResponse::default().with_topics(topics),
        version,
    )
    .map(Some)
}
