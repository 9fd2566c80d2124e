//! LeaveGroup (v0-5): one member (v0-2) or a batch of members by member id or
//! group.instance.id (v3+); the group rebalances without them.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse, RequestHeader};
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
    let request = LeaveGroupRequest::decode(&mut body, version)?;
    let leaving: Vec<(String, Option<String>)> = if version >= 3 {
        request
            .members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.group_instance_id.as_ref().map(ToString::to_string),
                )
            })
            .collect()
    } else {
        vec![(request.member_id.to_string(), None)]
    };
    let response = match state.groups.leave(&request.group_id.0, &leaving) {
        Err(error) => LeaveGroupResponse::default().with_error_code(error),
        Ok(results) if version >= 3 => LeaveGroupResponse::default().with_members(
            request
                .members
                .iter()
                .zip(results)
                .map(|(m, error)| {
                    MemberResponse::default()
                        .with_member_id(m.member_id.clone())
                        .with_group_instance_id(m.group_instance_id.clone())
                        .with_error_code(error)
                })
                .collect(),
        ),
        // v0-2: the one member's error is the response's.
        Ok(results) => LeaveGroupResponse::default().with_error_code(
            results
                .into_iter()
                .find(|&e| e != errors::NONE)
                .unwrap_or(errors::NONE),
        ),
    };
    encode(&response, version).map(Some)
}
