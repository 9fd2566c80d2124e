//! ShareGroupDescribe (v1): each share group's state, epochs, assignor and members with
//! their subscriptions and assignments (topic ids and names). A group that is not a share
//! group, or none at all, gets GROUP_ID_NOT_FOUND, as Kafka answers; DESCRIBE on the group
//! is required (else GROUP_AUTHORIZATION_FAILED for that group).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::share_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    RequestHeader, ShareGroupDescribeRequest, ShareGroupDescribeResponse, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::share::assignor;
use crate::state::BrokerState;

fn assignment(state: &BrokerState, a: &assignor::Assignment) -> Assignment {
    Assignment::default().with_topic_partitions(
        a.iter()
            .map(|(id, ps)| {
                let name = state
                    .topic_by_id(*id)
                    .map(|t| t.name.clone())
                    .unwrap_or_default();
                TopicPartitions::default()
                    .with_topic_id(*id)
                    .with_topic_name(TopicName(StrBytes::from_string(name)))
                    .with_partitions(ps.iter().copied().collect())
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
    let r = ShareGroupDescribeRequest::decode(&mut body, version)?;
    let mut groups = Vec::new();
    for id in &r.group_ids {
        let base = DescribedGroup::default().with_group_id(id.clone());
        if !authz::group(state, ctx, authz::operation::DESCRIBE, id) {
            groups.push(base.with_error_code(codes::GROUP_AUTHORIZATION_FAILED));
            continue;
        }
        let described = state.share.with_group(id, |g| {
            let members = g
                .members
                .values()
                .map(|m| {
                    Member::default()
                        .with_member_id(StrBytes::from_string(m.member_id.clone()))
                        .with_rack_id(m.rack_id.clone().map(StrBytes::from_string))
                        .with_member_epoch(m.member_epoch)
                        .with_client_id(StrBytes::from_string(m.client_id.clone()))
                        .with_client_host(StrBytes::from_string(m.client_host.clone()))
                        .with_subscribed_topic_names(
                            m.subscribed
                                .iter()
                                .map(|t| TopicName(StrBytes::from_string(t.clone())))
                                .collect(),
                        )
                        .with_assignment(assignment(state, &m.assignment))
                })
                .collect();
            base.clone()
                .with_group_state(StrBytes::from_static_str(g.state()))
                .with_group_epoch(g.group_epoch)
                .with_assignment_epoch(g.assignment_epoch)
                .with_assignor_name(StrBytes::from_static_str("simple"))
                .with_members(members)
                .with_authorized_operations(if r.include_authorized_operations {
                    authz::authorized_operations(
                        state,
                        ctx,
                        crate::security::acl::resource::GROUP,
                        id,
                    )
                } else {
                    i32::MIN
                })
        });
        groups.push(described.unwrap_or_else(|| {
            base.with_error_code(codes::GROUP_ID_NOT_FOUND)
                .with_error_message(Some(StrBytes::from_string(format!(
                    "Group {} not found.",
                    id.0
                ))))
        }));
    }
    let response = ShareGroupDescribeResponse::default().with_groups(groups);
    encode(&response, version).map(Some)
}
