//! JoinGroup (v0-9): the answer waits until the group's join phase completes, so every
//! member of a rebalance gets the same generation (the leader with all members' metadata).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::groups::{errors, JoinRequest, JoinResult, Reply};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = JoinGroupRequest::decode(&mut body, version)?;
    // A share group's id is not a classic group's (Kafka: GroupIdNotFoundException).
    if state.share.is_share_group(&request.group_id) {
        let refused = JoinGroupResponse::default()
            .with_error_code(crate::errors::codes::GROUP_ID_NOT_FOUND)
            .with_generation_id(-1);
        return encode(&refused, version).map(Some);
    }
    let member_id = request.member_id.to_string();
    let join = JoinRequest {
        member_id: member_id.clone(),
        group_instance_id: request.group_instance_id.as_ref().map(ToString::to_string),
        require_known_member_id: version >= 4,
        supports_skip_assignment: version >= 9,
        client_id: ctx.client_id.to_string(),
        // Kafka keeps the client's address with the member (DescribeGroups shows it).
        client_host: ctx.connection.client_host(),
        // v0 has no rebalance timeout: the session timeout serves for both.
        rebalance_timeout_ms: if version >= 1 {
            request.rebalance_timeout_ms
        } else {
            request.session_timeout_ms
        },
        session_timeout_ms: request.session_timeout_ms,
        protocol_type: request.protocol_type.to_string(),
        protocols: request
            .protocols
            .iter()
            .map(|p| (p.name.to_string(), p.metadata.clone()))
            .collect(),
    };
    let result = match state.groups.join(&request.group_id.0, join) {
        Reply::Now(result) => result,
        // Superseded by a newer JoinGroup of the same member: that one gets the answer.
        Reply::Later(rx) => rx
            .await
            .unwrap_or_else(|_| JoinResult::error(&member_id, errors::REBALANCE_IN_PROGRESS)),
    };
    encode(&response(result, version), version).map(Some)
}

fn response(r: JoinResult, version: i16) -> JoinGroupResponse {
    // Before v7 the protocol name is not nullable: "" stands for none.
    let protocol_name = match r.protocol_name {
        None if version < 7 => Some(StrBytes::default()),
        name => name.map(StrBytes::from_string),
    };
    JoinGroupResponse::default()
        .with_error_code(r.error)
        .with_generation_id(r.generation_id)
        .with_protocol_type(r.protocol_type.map(StrBytes::from_string))
        .with_protocol_name(protocol_name)
        .with_leader(StrBytes::from_string(r.leader))
        .with_skip_assignment(r.skip_assignment && version >= 9)
        .with_member_id(StrBytes::from_string(r.member_id))
        .with_members(
            r.members
                .into_iter()
                .map(|m| {
                    JoinGroupResponseMember::default()
                        .with_member_id(StrBytes::from_string(m.member_id))
                        .with_group_instance_id(m.group_instance_id.map(StrBytes::from_string))
                        .with_metadata(m.metadata)
                })
                .collect(),
        )
}
