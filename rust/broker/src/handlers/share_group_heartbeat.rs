//! ShareGroupHeartbeat (v1, KIP-932): join, heartbeat and leave a share group in one
//! request; the answer carries the member's epoch, the heartbeat interval
//! (`share.heartbeat.interval.ms`) and, when it changed or on a join, the assignment.
//! Authorization as Kafka's: READ on the group, then DESCRIBE on every subscribed topic
//! (else TOPIC_AUTHORIZATION_FAILED, the group untouched).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    RequestHeader, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::share::group::Heartbeat;
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let r = ShareGroupHeartbeatRequest::decode(&mut body, version)?;
    let refuse = |code: i16, message: String| {
        ShareGroupHeartbeatResponse::default()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(message)))
    };
    if r.group_id.is_empty() {
        let bad = refuse(codes::INVALID_REQUEST, "GroupId can't be empty.".into());
        return encode(&bad, version).map(Some);
    }
    if !authz::group(state, ctx, authz::operation::READ, &r.group_id) {
        let denied = ShareGroupHeartbeatResponse::default()
            .with_error_code(codes::GROUP_AUTHORIZATION_FAILED);
        return encode(&denied, version).map(Some);
    }
    let mut subscribed = r.subscribed_topic_names.iter().flatten();
    if subscribed.any(|t| !authz::topic(state, ctx, authz::operation::DESCRIBE, t)) {
        let denied = ShareGroupHeartbeatResponse::default()
            .with_error_code(codes::TOPIC_AUTHORIZATION_FAILED);
        return encode(&denied, version).map(Some);
    }
    let hb = Heartbeat {
        member_id: r.member_id.to_string(),
        member_epoch: r.member_epoch,
        rack_id: r.rack_id.as_ref().map(ToString::to_string),
        subscribed: r
            .subscribed_topic_names
            .as_ref()
            .map(|names| names.iter().map(|n| n.0.to_string()).collect()),
        client_id: ctx.client_id.to_string(),
        client_host: ctx.connection.client_host(),
    };
    let response = match state.share.heartbeat(&r.group_id.0, hb) {
        Ok((beat, interval_ms)) => ShareGroupHeartbeatResponse::default()
            .with_member_id(Some(StrBytes::from_string(beat.member_id)))
            .with_member_epoch(beat.member_epoch)
            .with_heartbeat_interval_ms(interval_ms)
            .with_assignment(beat.assignment.map(|assigned| {
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
        Err(e) => refuse(e.code, e.message),
    };
    encode(&response, version).map(Some)
}
