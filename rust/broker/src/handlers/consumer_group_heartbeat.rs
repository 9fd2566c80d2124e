//! ConsumerGroupHeartbeat (v0-1, KIP-848): join, heartbeat and leave a consumer-protocol
//! group in one request; the coordinator answers with the member's epoch and, when it
//! changed or the request was a full one, its assignment. From v1 the client names itself
//! (KIP-1082). Authorization, as Kafka's: READ on the group, then DESCRIBE on every topic
//! subscribed by name (else TOPIC_AUTHORIZATION_FAILED, the group untouched); a regex only
//! ever matches the topics the member's principal may DESCRIBE. Without `consumer` in
//! `group.coordinator.rebalance.protocols` every request is UNSUPPORTED_VERSION (before
//! authorization), as Kafka answers it.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::groups::consumer::member::TopicFilter;
use crate::groups::consumer::{self, HeartbeatRequest};
use crate::groups::errors;
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
    let r = ConsumerGroupHeartbeatRequest::decode(&mut body, version)?;
    if !state.groups.consumer_protocol_enabled() {
        let off =
            ConsumerGroupHeartbeatResponse::default().with_error_code(errors::UNSUPPORTED_VERSION);
        return encode(&off, version).map(Some);
    }
    if !authz::group(state, ctx, authz::operation::READ, &r.group_id) {
        let denied = ConsumerGroupHeartbeatResponse::default()
            .with_error_code(errors::GROUP_AUTHORIZATION_FAILED)
            .with_member_epoch(0);
        return encode(&denied, version).map(Some);
    }
    if state.share.is_share_group(&r.group_id) {
        let refused = ConsumerGroupHeartbeatResponse::default()
            .with_error_code(errors::GROUP_ID_NOT_FOUND)
            .with_error_message(Some(StrBytes::from_string(format!(
                "Group {} is not a consumer group.",
                r.group_id.0
            ))));
        return encode(&refused, version).map(Some);
    }
    let mut subscribed = r.subscribed_topic_names.iter().flatten();
    if subscribed.any(|t| !authz::topic(state, ctx, authz::operation::DESCRIBE, t)) {
        let denied = ConsumerGroupHeartbeatResponse::default()
            .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED);
        return encode(&denied, version).map(Some);
    }
    let owned = r.topic_partitions.as_ref().map(|tps| {
        let mut a = consumer::Assignment::new();
        for tp in tps {
            a.entry(tp.topic_id)
                .or_default()
                .extend(tp.partitions.iter().copied());
        }
        consumer::topics::normalized(a)
    });
    let request = HeartbeatRequest {
        member_id: r.member_id.to_string(),
        member_epoch: r.member_epoch,
        instance_id: r.instance_id.as_ref().map(ToString::to_string),
        rack_id: r.rack_id.as_ref().map(ToString::to_string),
        rebalance_timeout_ms: r.rebalance_timeout_ms,
        subscribed_topic_names: r
            .subscribed_topic_names
            .as_ref()
            .map(|names| names.iter().map(|n| n.0.to_string()).collect()),
        subscribed_topic_regex: r.subscribed_topic_regex.as_ref().map(ToString::to_string),
        server_assignor: r.server_assignor.as_ref().map(ToString::to_string),
        owned,
        client_id: ctx.client_id.to_string(),
        client_host: ctx.connection.client_host(),
        regex_filter: describable_topics(state, ctx),
    };
    let response = match state
        .groups
        .consumer_heartbeat(&r.group_id.0, request, version)
    {
        Ok(a) => ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(StrBytes::from_string(a.member_id)))
            .with_member_epoch(a.member_epoch)
            .with_heartbeat_interval_ms(a.heartbeat_interval_ms)
            .with_assignment(a.assignment.map(|assigned| {
                Assignment::default().with_topic_partitions(
                    assigned
                        .into_iter()
                        .map(|(topic_id, ps)| {
                            TopicPartitions::default()
                                .with_topic_id(topic_id)
                                .with_partitions(ps.into_iter().collect())
                        })
                        .collect(),
                )
            })),
        Err(refusal) => ConsumerGroupHeartbeatResponse::default()
            .with_error_code(refusal.code)
            .with_error_message(
                (!refusal.message.is_empty()).then(|| StrBytes::from_string(refusal.message)),
            ),
    };
    encode(&response, version).map(Some)
}

/// The topics this principal may DESCRIBE, for its regex (`None`: no authorizer).
fn describable_topics(state: &Arc<BrokerState>, ctx: &RequestContext<'_>) -> Option<TopicFilter> {
    if !state.security.authorizer.enabled {
        return None;
    }
    let state = Arc::clone(state);
    let principal = ctx.principal().clone();
    let host = ctx.peer().ip().to_string();
    Some(TopicFilter(Arc::new(move |topic: &str| {
        state.security.authorizer.authorize(
            &principal,
            &host,
            authz::operation::DESCRIBE,
            crate::security::acl::resource::TOPIC,
            topic,
        )
    })))
}
