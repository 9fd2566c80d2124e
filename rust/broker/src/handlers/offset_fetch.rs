//! OffsetFetch (v1-10): committed offsets with their metadata; -1 where nothing is
//! committed; null topics (v2+) for everything the group committed; v8 batches groups; v9
//! names the asking member and its epoch (KIP-848), which only consumer-protocol groups
//! check (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH): classic groups answer as at v8, as
//! Kafka's classic groups do.
//! With `require_stable` (v7+), a partition with offsets of an open transaction pending
//! answers UNSTABLE_OFFSET_COMMIT (the client retries until the transaction ends).
//! Topics the principal may not DESCRIBE are left out of an all-topics answer and
//! answered TOPIC_AUTHORIZATION_FAILED when named, as Kafka does (DESCRIBE on the group
//! is checked before, in `security::gate`).
//! v10 (KIP-848) names topics by id: an id no topic has is answered UNKNOWN_TOPIC_ID for
//! each partition asked, after the group's topics (Kafka's order) and only when the group
//! has no error; an all-topics answer gives each topic's id and leaves out committed
//! topics that no longer exist (no id to give).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, RequestHeader, TopicName};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::codes;
use crate::groups::coordinator::FetchedTopic;
use crate::groups::{errors, Committed};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = OffsetFetchRequest::decode(&mut body, version)?;
    let with_epoch = version >= 5;
    let response = if version >= 8 {
        let by_id = version >= 10;
        let groups = request
            .groups
            .iter()
            .map(|g| {
                // v10: named topics by id; the ids no topic has are answered apart.
                let mut unknown_ids = Vec::new();
                let wanted = g.topics.as_ref().map(|topics| {
                    let mut wanted = Vec::with_capacity(topics.len());
                    for t in topics {
                        if !by_id {
                            wanted.push((t.name.0.to_string(), t.partition_indexes.clone()));
                        } else if let Some(topic) = state.topic_by_id(t.topic_id) {
                            wanted.push((topic.name.clone(), t.partition_indexes.clone()));
                        } else {
                            unknown_ids.push((t.topic_id, t.partition_indexes.clone()));
                        }
                    }
                    wanted
                });
                let explicit = wanted.is_some();
                let member = g
                    .member_id
                    .as_ref()
                    .filter(|_| version >= 9)
                    .map(|m| (m.as_str(), g.member_epoch));
                let (fetched, error) =
                    split(state.groups.fetch_offsets_as(&g.group_id.0, wanted, member));
                let mut topics: Vec<OffsetFetchResponseTopics> =
                    described(state, ctx, fetched, explicit)
                        .into_iter()
                        .filter_map(|(topic, partitions)| {
                            let id = if by_id {
                                state.topic(&topic).map(|t| t.id)?
                            } else {
                                uuid::Uuid::nil()
                            };
                            Some(
                                OffsetFetchResponseTopics::default()
                                    .with_name(TopicName(StrBytes::from_string(topic.clone())))
                                    .with_topic_id(id)
                                    .with_partitions(
                                        partitions
                                            .into_iter()
                                            .map(|(p, c)| {
                                                let denied = matches!(c, Err(()));
                                                let (offset, epoch, metadata) =
                                                    fields(c.ok().flatten(), true);
                                                let unstable = request.require_stable
                                                    && state.groups.has_pending_offsets(
                                                        &g.group_id,
                                                        &topic,
                                                        p,
                                                    );
                                                OffsetFetchResponsePartitions::default()
                                                    .with_error_code(if denied {
                                                        codes::TOPIC_AUTHORIZATION_FAILED
                                                    } else if unstable {
                                                        errors::UNSTABLE_OFFSET_COMMIT
                                                    } else {
                                                        errors::NONE
                                                    })
                                                    .with_partition_index(p)
                                                    .with_committed_offset(offset)
                                                    .with_committed_leader_epoch(epoch)
                                                    .with_metadata(Some(metadata))
                                            })
                                            .collect(),
                                    ),
                            )
                        })
                        .collect();
                if error == errors::NONE {
                    topics.extend(unknown_ids.into_iter().map(|(id, partitions)| {
                        OffsetFetchResponseTopics::default()
                            .with_topic_id(id)
                            .with_partitions(
                                partitions
                                    .into_iter()
                                    .map(|p| {
                                        OffsetFetchResponsePartitions::default()
                                            .with_partition_index(p)
                                            .with_committed_offset(-1)
                                            .with_committed_leader_epoch(-1)
                                            .with_metadata(Some(StrBytes::default()))
                                            .with_error_code(errors::UNKNOWN_TOPIC_ID)
                                    })
                                    .collect(),
                            )
                    }));
                }
                OffsetFetchResponseGroup::default()
                    .with_group_id(g.group_id.clone())
                    .with_topics(topics)
                    .with_error_code(error)
            })
            .collect();
        OffsetFetchResponse::default().with_groups(groups)
    } else {
        let wanted = request.topics.as_ref().map(|topics| {
            topics
                .iter()
                .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
                .collect()
        });
        let explicit = wanted.is_some();
        let (fetched, error) = split(state.groups.fetch_offsets(&request.group_id.0, wanted));
        let topics = described(state, ctx, fetched, explicit)
            .into_iter()
            .map(|(topic, partitions)| {
                OffsetFetchResponseTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic.clone())))
                    .with_partitions(
                        partitions
                            .into_iter()
                            .map(|(p, c)| {
                                let denied = matches!(c, Err(()));
                                let (offset, epoch, metadata) =
                                    fields(c.ok().flatten(), with_epoch);
                                let unstable = request.require_stable
                                    && state.groups.has_pending_offsets(
                                        &request.group_id,
                                        &topic,
                                        p,
                                    );
                                OffsetFetchResponsePartition::default()
                                    .with_error_code(if denied {
                                        codes::TOPIC_AUTHORIZATION_FAILED
                                    } else if unstable {
                                        errors::UNSTABLE_OFFSET_COMMIT
                                    } else {
                                        errors::NONE
                                    })
                                    .with_partition_index(p)
                                    .with_committed_offset(offset)
                                    .with_committed_leader_epoch(epoch)
                                    .with_metadata(Some(metadata))
                            })
                            .collect(),
                    )
            })
            .collect();
        // v1 has no group-level error: a client of it sees no offsets instead.
        OffsetFetchResponse::default()
            .with_topics(topics)
            .with_error_code(error)
    };
    encode(&response, version).map(Some)
}

/// A partition's commit, or `Err` when the principal may not DESCRIBE its topic.
type Seen = Result<Option<Committed>, ()>;

/// The fetched topics the principal may see: an undescribable topic is dropped from an
/// all-topics fetch, and its partitions marked refused when the client named it.
fn described(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    fetched: Vec<FetchedTopic>,
    explicit: bool,
) -> Vec<(String, Vec<(i32, Seen)>)> {
    fetched
        .into_iter()
        .filter_map(|(topic, partitions)| {
            let allowed = authz::topic(state, ctx, authz::operation::DESCRIBE, &topic);
            if !allowed && !explicit {
                return None;
            }
            let partitions = partitions
                .into_iter()
                .map(|(p, c)| (p, if allowed { Ok(c) } else { Err(()) }))
                .collect();
            Some((topic, partitions))
        })
        .collect()
}

/// The fetched offsets and the group-level error (NOT_COORDINATOR and the like: nothing).
fn split(fetched: Result<Vec<FetchedTopic>, i16>) -> (Vec<FetchedTopic>, i16) {
    match fetched {
        Ok(topics) => (topics, errors::NONE),
        Err(code) => (Vec::new(), code),
    }
}

/// (offset, leader epoch, metadata) of a commit, or Kafka's "nothing committed".
fn fields(c: Option<Committed>, with_epoch: bool) -> (i64, i32, StrBytes) {
    match c {
        Some(c) => (
            c.offset,
            if with_epoch { c.leader_epoch } else { -1 },
            StrBytes::from_string(c.metadata),
        ),
        None => (-1, -1, StrBytes::default()),
    }
}
