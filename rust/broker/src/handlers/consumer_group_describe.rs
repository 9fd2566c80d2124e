//! ConsumerGroupDescribe (v0-1, KIP-848): a consumer-protocol group's epochs, assignor and
//! members with their current and target assignments. A classic group or an unknown id is
//! GROUP_ID_NOT_FOUND with Kafka's message (the admin client then asks DescribeGroups).
//! v1 adds each member's type: the consumer protocol, or the classic one (a mixed group).
//! Authorization, as Kafka's: DESCRIBE on each group, and a group whose members' current
//! or target assignments hold a topic the principal may not DESCRIBE is answered
//! TOPIC_AUTHORIZATION_FAILED without its members (no topic leaks through a group).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use uuid::Uuid;

use crate::groups::errors;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::BrokerState;

/// Kafka's "authorized operations not requested" marker.
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;
/// What Kafka 4.1 lists for a group when no authorizer limits it (as DescribeGroups).
const GROUP_OPERATIONS: i32 = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11);
/// `MemberType` of a member using the classic or the consumer protocol (v1).
const CLASSIC_MEMBER: i8 = 0;
const CONSUMER_MEMBER: i8 = 1;

fn assignment(parts: Vec<(Uuid, String, Vec<i32>)>) -> Assignment {
    Assignment::default().with_topic_partitions(
        parts
            .into_iter()
            .map(|(id, name, ps)| {
                TopicPartitions::default()
                    .with_topic_id(id)
                    .with_topic_name(TopicName(StrBytes::from_string(name)))
                    .with_partitions(ps)
            })
            .collect(),
    )
}

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = ConsumerGroupDescribeRequest::decode(&mut body, version)?;
    let operations = if request.include_authorized_operations {
        GROUP_OPERATIONS
    } else {
        OPERATIONS_NOT_REQUESTED
    };
    if !state.groups.consumer_protocol_enabled() {
        // `group.coordinator.rebalance.protocols` without `consumer`: every group, before
        // authorization, as Kafka answers it.
        let off = request.group_ids.iter().map(|id| {
            DescribedGroup::default()
                .with_group_id(id.clone())
                .with_error_code(errors::UNSUPPORTED_VERSION)
                .with_authorized_operations(OPERATIONS_NOT_REQUESTED)
        });
        let response = ConsumerGroupDescribeResponse::default().with_groups(off.collect());
        return encode(&response, version).map(Some);
    }
    // Kafka answers the groups it refuses first, then the ones its coordinator described.
    let (allowed, refused): (Vec<_>, Vec<_>) = request
        .group_ids
        .iter()
        .partition(|id| authz::group(state, ctx, authz::operation::DESCRIBE, id));
    let refused = refused.into_iter().map(|id| {
        DescribedGroup::default()
            .with_group_id(id.clone())
            .with_error_code(errors::GROUP_AUTHORIZATION_FAILED)
            .with_authorized_operations(OPERATIONS_NOT_REQUESTED)
    });
    let described = allowed
        .into_iter()
        .map(|id| {
            let base = DescribedGroup::default().with_group_id(id.clone());
            let d = match state.groups.consumer_describe(&id.0) {
                Ok(d) => d,
                Err(refusal) => {
                    return base
                        .with_error_code(refusal.code)
                        .with_error_message(
                            (!refusal.message.is_empty())
                                .then(|| StrBytes::from_string(refusal.message)),
                        )
                        .with_authorized_operations(OPERATIONS_NOT_REQUESTED)
                }
            };
            let members = d
                .members
                .into_iter()
                .map(|m| {
                    Member::default()
                        .with_member_id(StrBytes::from_string(m.member_id))
                        .with_instance_id(m.instance_id.map(StrBytes::from_string))
                        .with_rack_id(m.rack_id.map(StrBytes::from_string))
                        .with_member_epoch(m.member_epoch)
                        .with_client_id(StrBytes::from_string(m.client_id))
                        .with_client_host(StrBytes::from_string(m.client_host))
                        .with_subscribed_topic_names(
                            m.subscribed_topic_names
                                .into_iter()
                                .map(|n| TopicName(StrBytes::from_string(n)))
                                .collect(),
                        )
                        .with_subscribed_topic_regex(
                            m.subscribed_topic_regex.map(StrBytes::from_string),
                        )
                        .with_assignment(assignment(m.assignment))
                        .with_target_assignment(assignment(m.target_assignment))
                        .with_member_type(match (version >= 1, m.classic) {
                            (false, _) => -1,
                            (true, true) => CLASSIC_MEMBER,
                            (true, false) => CONSUMER_MEMBER,
                        })
                })
                .collect();
            base.with_group_state(StrBytes::from_static_str(d.state.name()))
                .with_group_epoch(d.group_epoch)
                .with_assignment_epoch(d.assignment_epoch)
                .with_assignor_name(StrBytes::from_string(d.assignor_name))
                .with_members(members)
                .with_authorized_operations(authz::operations_or(state, ctx, operations, 3, id))
        })
        .map(|g| hide_undescribable(state, ctx, g));
    let groups = refused.chain(described).collect();
    encode(
        &ConsumerGroupDescribeResponse::default().with_groups(groups),
        version,
    )
    .map(Some)
}

/// `group`, or Kafka's refusal in its place when an assignment in it holds a topic the
/// principal may not DESCRIBE.
fn hide_undescribable(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    group: DescribedGroup,
) -> DescribedGroup {
    let hidden = group
        .members
        .iter()
        .flat_map(|m| [&m.assignment, &m.target_assignment])
        .flat_map(|a| &a.topic_partitions)
        .any(|tp| !authz::topic(state, ctx, authz::operation::DESCRIBE, &tp.topic_name));
    if !hidden {
        return group;
    }
    DescribedGroup::default()
        .with_group_id(group.group_id)
        .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED)
        .with_error_message(Some(StrBytes::from_static_str(
            "The group has described topic(s) that the client is not authorized to describe.",
        )))
}
