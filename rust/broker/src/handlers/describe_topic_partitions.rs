//! DescribeTopicPartitions (v0, KIP-966): topics and their partitions (leader, epoch,
//! replicas, ISR) as Metadata gives them, paginated, as Kafka 4's `kafka-topics --describe`
//! and the admin clients' `describe_topic_partitions` ask for them.
//!
//! Topics go out sorted by name: every topic the client may describe when the request names
//! none (internal ones included, as Kafka lists them), else the named ones (unknown:
//! UNKNOWN_TOPIC_OR_PARTITION, invalid name: INVALID_TOPIC_EXCEPTION, not allowed:
//! TOPIC_AUTHORIZATION_FAILED). At most `response_partition_limit` partitions are answered
//! (capped by the broker's `max.request.partition.size.limit`, 2000 by default); when more
//! remain, `next_cursor` names the topic and partition to continue from, and a request
//! carrying that cursor starts there. A cursor naming a topic the request does not list is an invalid
//! request, as Kafka answers it. No eligible leader replicas (KIP-966's ELR is not built):
//! those lists are empty, as Kafka sends them for a partition without any.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, RequestHeader,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::cluster::TopicView;
use crate::errors::codes;
use crate::handlers::metadata::TOPIC_OPERATIONS;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::{validate_topic_name, BrokerState};

fn name(n: &str) -> TopicName {
    TopicName(StrBytes::from_string(n.to_string()))
}

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DescribeTopicPartitionsRequest::decode(&mut body, version)?;
    let all = request.topics.is_empty();
    let cursor = request
        .cursor
        .as_ref()
        .map(|c| (c.topic_name.to_string(), c.partition_index.max(0)));
    let mut names: Vec<String> = if all {
        state
            .topic_names()
            .into_iter()
            .filter(|n| authz::topic(state, ctx, authz::operation::DESCRIBE, n))
            .collect()
    } else {
        request.topics.iter().map(|t| t.name.to_string()).collect()
    };
    names.sort();
    names.dedup();
    let mut response = DescribeTopicPartitionsResponse::default();
    if let Some((topic, _)) = &cursor {
        if !all && !names.contains(topic) {
            // Kafka's InvalidRequestException, answered for every requested topic.
            response.topics = names
                .iter()
                .map(|n| error_topic(state, ctx, n, codes::INVALID_REQUEST))
                .collect();
            return encode(&response, version).map(Some);
        }
        names.retain(|n| n >= topic);
    }
    // `max.request.partition.size.limit`: the most partitions one answer holds.
    let limit_max = state
        .config
        .settings
        .int("max.request.partition.size.limit");
    let mut remaining = request.response_partition_limit.clamp(1, limit_max);
    for topic_name in names {
        if remaining == 0 {
            // Every partition of the previous topics went out: continue at this one.
            response.next_cursor = Some(Cursor::default().with_topic_name(name(&topic_name)));
            break;
        }
        if !all && !authz::topic(state, ctx, authz::operation::DESCRIBE, &topic_name) {
            response.topics.push(error_topic(
                state,
                ctx,
                &topic_name,
                codes::TOPIC_AUTHORIZATION_FAILED,
            ));
            continue;
        }
        let Some(topic) = state.topic(&topic_name) else {
            let code = match validate_topic_name(&topic_name) {
                Ok(()) => codes::UNKNOWN_TOPIC_OR_PARTITION,
                Err(_) => codes::INVALID_TOPIC_EXCEPTION,
            };
            response
                .topics
                .push(error_topic(state, ctx, &topic_name, code));
            continue;
        };
        let view = TopicView::of(&topic);
        let start = match &cursor {
            Some((t, p)) if *t == topic_name => *p,
            _ => 0,
        };
        let mut partitions = Vec::new();
        let mut next = None;
        for p in view.partitions.into_iter().filter(|p| p.index >= start) {
            if remaining == 0 {
                next = Some(p.index);
                break;
            }
            remaining -= 1;
            let ids = |nodes: Vec<i32>| nodes.into_iter().map(BrokerId).collect::<Vec<_>>();
            partitions.push(
                DescribeTopicPartitionsResponsePartition::default()
                    .with_error_code(if p.replica.leader < 0 {
                        codes::LEADER_NOT_AVAILABLE
                    } else {
                        codes::NONE
                    })
                    .with_partition_index(p.index)
                    .with_leader_id(BrokerId(p.replica.leader))
                    .with_leader_epoch(p.replica.leader_epoch)
                    .with_replica_nodes(ids(p.replica.replicas))
                    .with_isr_nodes(ids(p.replica.isr))
                    .with_eligible_leader_replicas(Some(Vec::new()))
                    .with_last_known_elr(Some(Vec::new())),
            );
        }
        response.topics.push(
            DescribeTopicPartitionsResponseTopic::default()
                .with_name(Some(name(&view.name)))
                .with_topic_id(view.id)
                .with_is_internal(view.is_internal)
                .with_partitions(partitions)
                .with_topic_authorized_operations(authz::operations_or(
                    state,
                    ctx,
                    TOPIC_OPERATIONS,
                    2,
                    &view.name,
                )),
        );
        if let Some(index) = next {
            response.next_cursor = Some(
                Cursor::default()
                    .with_topic_name(name(&topic_name))
                    .with_partition_index(index),
            );
            break;
        }
    }
    encode(&response, version).map(Some)
}

/// A topic answered with an error. For a topic that does not exist (or cannot) Kafka still
/// reports the operations the client may do on the name; a refused request reports none.
fn error_topic(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    topic: &str,
    code: i16,
) -> DescribeTopicPartitionsResponseTopic {
    let operations =
        if code == codes::UNKNOWN_TOPIC_OR_PARTITION || code == codes::INVALID_TOPIC_EXCEPTION {
            authz::operations_or(state, ctx, TOPIC_OPERATIONS, 2, topic)
        } else {
            crate::handlers::metadata::OPERATIONS_NOT_REQUESTED
        };
    DescribeTopicPartitionsResponseTopic::default()
        .with_error_code(code)
        .with_name(Some(name(topic)))
        .with_is_internal(matches!(
            topic,
            "__consumer_offsets" | "__transaction_state"
        ))
        .with_topic_authorized_operations(operations)
}
