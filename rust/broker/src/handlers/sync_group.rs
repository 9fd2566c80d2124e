//! SyncGroup (v0-5): the leader hands in every member's assignment; each member's answer
//! waits for it and carries its own, unread by the broker.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{RequestHeader, SyncGroupRequest, SyncGroupResponse};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::groups::{errors, Reply, SyncRequest, SyncResult};
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
    let request = SyncGroupRequest::decode(&mut body, version)?;
    let sync = SyncRequest {
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.as_ref().map(ToString::to_string),
        generation_id: request.generation_id,
        protocol_type: request.protocol_type.as_ref().map(ToString::to_string),
        protocol_name: request.protocol_name.as_ref().map(ToString::to_string),
        assignments: request
            .assignments
            .iter()
            .map(|a| (a.member_id.to_string(), a.assignment.clone()))
            .collect(),
    };
    let result = match state.groups.sync(&request.group_id.0, sync) {
        Reply::Now(result) => result,
        Reply::Later(rx) => rx
            .await
            .unwrap_or_else(|_| SyncResult::error(errors::REBALANCE_IN_PROGRESS)),
    };
    let ok = result.error == errors::NONE;
    let response = SyncGroupResponse::default()
        .with_error_code(result.error)
        .with_protocol_type(
            result
                .protocol_type
                .filter(|_| ok && version >= 5)
                .map(StrBytes::from_string),
        )
        .with_protocol_name(
            result
                .protocol_name
                .filter(|_| ok && version >= 5)
                .map(StrBytes::from_string),
        )
        .with_assignment(result.assignment);
    encode(&response, version).map(Some)
}
