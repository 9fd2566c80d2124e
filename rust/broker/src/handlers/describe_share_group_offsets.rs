//! DescribeShareGroupOffsets (v0-1, KIP-932): each share-partition's start offset and,
//! from v1, its lag (records from the start offset to the high watermark not yet
//! acknowledged or archived), as `kafka-share-groups --describe` shows them. Every topic
//! with share state when the request names none; a named partition without state gets
//! start offset -1 (and lag -1). DESCRIBE on the group is required
//! (GROUP_AUTHORIZATION_FAILED) and on each topic (named ones:
//! TOPIC_AUTHORIZATION_FAILED; otherwise left out). An unknown group is
//! GROUP_ID_NOT_FOUND.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::{
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use uuid::Uuid;

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::BrokerState;

fn partition(index: i32, start: i64, lag: i64) -> DescribeShareGroupOffsetsResponsePartition {
    DescribeShareGroupOffsetsResponsePartition::default()
        .with_partition_index(index)
        .with_start_offset(start)
        .with_leader_epoch(if start < 0 { -1 } else { 0 })
        .with_lag(lag)
}

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let r = DescribeShareGroupOffsetsRequest::decode(&mut body, version)?;
    let mut groups = Vec::new();
    for g in &r.groups {
        let base =
            DescribeShareGroupOffsetsResponseGroup::default().with_group_id(g.group_id.clone());
        if !authz::group(state, ctx, authz::operation::DESCRIBE, &g.group_id) {
            groups.push(
                base.with_error_code(codes::GROUP_AUTHORIZATION_FAILED)
                    .with_error_message(Some(StrBytes::from_string(format!(
                        "Not authorized to access group: {}",
                        g.group_id.0
                    )))),
            );
            continue;
        }
        let offsets = state.share.describe_offsets(&g.group_id);
        if offsets.is_empty() && !state.share.is_share_group(&g.group_id) {
            groups.push(
                base.with_error_code(codes::GROUP_ID_NOT_FOUND)
                    .with_error_message(Some(StrBytes::from_string(format!(
                        "Group {} not found.",
                        g.group_id.0
                    )))),
            );
            continue;
        }
        let known: BTreeMap<(Uuid, i32), (i64, i64)> = offsets
            .iter()
            .map(|&(t, p, start, lag)| ((t, p), (start, lag)))
            .collect();
        let mut topics = Vec::new();
        match &g.topics {
            Some(named) => {
                for t in named {
                    let topic = state.topic(&t.topic_name);
                    let allowed =
                        authz::topic(state, ctx, authz::operation::DESCRIBE, &t.topic_name);
                    let partitions = t
                        .partitions
                        .iter()
                        .map(|&p| {
                            let (code, message) = match &topic {
                                _ if !allowed => (
                                    codes::TOPIC_AUTHORIZATION_FAILED,
                                    "Topic authorization failed.",
                                ),
                                None => (
                                    codes::UNKNOWN_TOPIC_OR_PARTITION,
                                    "This server does not host this topic-partition.",
                                ),
                                Some(_) => (codes::NONE, ""),
                            };
                            if code != codes::NONE {
                                return partition(p, -1, -1)
                                    .with_error_code(code)
                                    .with_error_message(Some(StrBytes::from_static_str(message)));
                            }
                            let id = topic.as_ref().map_or(Uuid::nil(), |t| t.id);
                            let (start, lag) = known.get(&(id, p)).copied().unwrap_or((-1, -1));
                            partition(p, start, lag)
                        })
                        .collect();
                    topics.push(
                        DescribeShareGroupOffsetsResponseTopic::default()
                            .with_topic_name(t.topic_name.clone())
                            .with_topic_id(topic.map_or(Uuid::nil(), |t| t.id))
                            .with_partitions(partitions),
                    );
                }
            }
            None => {
                let mut by_topic: BTreeMap<Uuid, Vec<DescribeShareGroupOffsetsResponsePartition>> =
                    BTreeMap::new();
                for (id, p, start, lag) in offsets {
                    by_topic
                        .entry(id)
                        .or_default()
                        .push(partition(p, start, lag));
                }
                for (id, partitions) in by_topic {
                    let Some(topic) = state.topic_by_id(id) else {
                        continue;
                    };
                    if !authz::topic(state, ctx, authz::operation::DESCRIBE, &topic.name) {
                        continue;
                    }
                    topics.push(
                        DescribeShareGroupOffsetsResponseTopic::default()
                            .with_topic_name(TopicName(StrBytes::from_string(topic.name.clone())))
                            .with_topic_id(id)
                            .with_partitions(partitions),
                    );
                }
            }
        }
        groups.push(base.with_topics(topics));
    }
    encode(
        &DescribeShareGroupOffsetsResponse::default().with_groups(groups),
        version,
    )
    .map(Some)
}
