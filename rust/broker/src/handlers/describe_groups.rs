//! DescribeGroups (v0-6): state, protocol type and protocol, and members (client id and
//! host; their metadata and assignment once the group is Stable). An unknown group is
//! described as Dead before v6 and answered GROUP_ID_NOT_FOUND (69) with a message from
//! v6 (KIP-1043), as Kafka does; so is a consumer-protocol group, with "is not a classic
//! group." from v6.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::groups::{errors, GroupState};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::BrokerState;

/// Kafka's "authorized operations not requested" marker.
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;
/// READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS and ALTER_CONFIGS: what Kafka 4.1 lists for a
/// group when no authorizer limits it (group configs arrived with KIP-848).
const GROUP_OPERATIONS: i32 = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11);

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DescribeGroupsRequest::decode(&mut body, version)?;
    let operations = if version >= 3 && request.include_authorized_operations {
        GROUP_OPERATIONS
    } else {
        OPERATIONS_NOT_REQUESTED
    };
    let groups = request
        .groups
        .iter()
        .map(|id| {
            let base = DescribedGroup::default()
                .with_error_code(errors::NONE)
                .with_group_id(id.clone())
                .with_authorized_operations(authz::operations_or(state, ctx, operations, 3, id));
            if !authz::group(state, ctx, authz::operation::DESCRIBE, id) {
                return base
                    .with_error_code(errors::GROUP_AUTHORIZATION_FAILED)
                    .with_authorized_operations(OPERATIONS_NOT_REQUESTED);
            }
            // A share group (KIP-932) is not a classic group either.
            let share = state.share.is_share_group(&id.0);
            let d = match state.groups.describe_classic(&id.0) {
                Ok(None) if share => match version >= 6 {
                    true => {
                        return base
                            .with_group_state(StrBytes::from_static_str(GroupState::Dead.name()))
                            .with_error_code(errors::GROUP_ID_NOT_FOUND)
                            .with_error_message(Some(StrBytes::from_string(format!(
                                "Group {} is not a classic group.",
                                id.0
                            ))))
                    }
                    false => {
                        return base
                            .with_group_state(StrBytes::from_static_str(GroupState::Dead.name()))
                    }
                },
                Ok(Some(Some(d))) => d,
                // A consumer-protocol group (KIP-848) is not described here.
                Ok(Some(None)) if version >= 6 => {
                    return base
                        .with_group_state(StrBytes::from_static_str(GroupState::Dead.name()))
                        .with_error_code(errors::GROUP_ID_NOT_FOUND)
                        .with_error_message(Some(StrBytes::from_string(format!(
                            "Group {} is not a classic group.",
                            id.0
                        ))))
                }
                Ok(Some(None)) => {
                    return base
                        .with_group_state(StrBytes::from_static_str(GroupState::Dead.name()))
                }
                Ok(None) if version >= 6 => {
                    return base
                        .with_group_state(StrBytes::from_static_str(GroupState::Dead.name()))
                        .with_error_code(errors::GROUP_ID_NOT_FOUND)
                        .with_error_message(Some(StrBytes::from_string(format!(
                            "Group {} not found.",
                            id.0
                        ))))
                }
                Ok(None) => {
                    return base
                        .with_group_state(StrBytes::from_static_str(GroupState::Dead.name()))
                }
                // Not this broker's group (any more): Kafka answers with an empty state.
                Err(code) => return base.with_error_code(code),
            };
            let members = d
                .members
                .into_iter()
                .map(|m| {
                    DescribedGroupMember::default()
                        .with_member_id(StrBytes::from_string(m.member_id))
                        .with_group_instance_id(
                            m.group_instance_id
                                .filter(|_| version >= 4)
                                .map(StrBytes::from_string),
                        )
                        .with_client_id(StrBytes::from_string(m.client_id))
                        .with_client_host(StrBytes::from_string(m.client_host))
                        .with_member_metadata(m.metadata)
                        .with_member_assignment(m.assignment)
                })
                .collect();
            base.with_group_state(StrBytes::from_static_str(d.state.name()))
                .with_protocol_type(StrBytes::from_string(d.protocol_type))
                .with_protocol_data(StrBytes::from_string(d.protocol))
                .with_members(members)
        })
        .collect();
    encode(
        &DescribeGroupsResponse::default().with_groups(groups),
        version,
    )
    .map(Some)
}
