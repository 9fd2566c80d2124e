//! What handlers call to authorize: one call per check, named by resource, so each
//! handler states Kafka's check in one line (`authz::topic(state, ctx, op::WRITE, t)`).

use super::acl::{op, operations_of, resource, CLUSTER_NAME};
use crate::net::RequestContext;
use crate::state::BrokerState;

pub use super::acl::op as operation;

/// Whether the request's principal may do `operation` on the resource.
#[must_use]
pub fn allowed(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    operation: i8,
    resource_type: i8,
    name: &str,
) -> bool {
    state.security.authorizer.authorize(
        ctx.principal(),
        &ctx.peer().ip().to_string(),
        operation,
        resource_type,
        name,
    )
}

#[must_use]
pub fn topic(state: &BrokerState, ctx: &RequestContext<'_>, operation: i8, name: &str) -> bool {
    allowed(state, ctx, operation, resource::TOPIC, name)
}

#[must_use]
pub fn group(state: &BrokerState, ctx: &RequestContext<'_>, operation: i8, name: &str) -> bool {
    allowed(state, ctx, operation, resource::GROUP, name)
}

#[must_use]
pub fn cluster(state: &BrokerState, ctx: &RequestContext<'_>, operation: i8) -> bool {
    allowed(state, ctx, operation, resource::CLUSTER, CLUSTER_NAME)
}

#[must_use]
pub fn transactional_id(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    operation: i8,
    id: &str,
) -> bool {
    allowed(state, ctx, operation, resource::TRANSACTIONAL_ID, id)
}

/// Why an ACL API (CreateAcls, DescribeAcls, DeleteAcls) is refused, if it is: no
/// authorizer (SECURITY_DISABLED), or no `operation` (ALTER to change, DESCRIBE to read)
/// on the cluster.
#[must_use]
pub fn acl_api_refusal(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    operation: i8,
) -> Option<(i16, &'static str)> {
    use crate::errors::codes;
    if !state.security.authorizer.enabled {
        Some((
            codes::SECURITY_DISABLED,
            "No Authorizer is configured on the broker",
        ))
    } else if !cluster(state, ctx, operation) {
        Some((
            codes::CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.",
        ))
    } else {
        None
    }
}

/// Kafka's `authorized_operations` bit field for a resource: bit n set when operation n
/// is allowed (only the resource type's own operations are checked).
#[must_use]
pub fn authorized_operations(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    resource_type: i8,
    name: &str,
) -> i32 {
    operations_of(resource_type)
        .iter()
        .filter(|&&o| allowed(state, ctx, o, resource_type, name))
        .fold(0, |bits, &o| bits | (1 << o))
}

/// Creating a topic: CREATE on the cluster, or on the topic itself (Kafka checks both).
#[must_use]
pub fn may_create_topic(state: &BrokerState, ctx: &RequestContext<'_>, name: &str) -> bool {
    cluster(state, ctx, op::CREATE) || topic(state, ctx, op::CREATE, name)
}

/// Fetch: take out of `request` the topics the principal may not READ (a follower's
/// fetch needs CLUSTER_ACTION instead) and return their TOPIC_AUTHORIZATION_FAILED
/// answers, so the rest is served as usual.
pub fn fetch_denied(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    request: &mut kafka_protocol::messages::FetchRequest,
) -> Vec<crate::response::fetch::TopicResult> {
    use crate::errors::codes;
    use crate::response::fetch::{PartitionResult, TopicResult};
    if !state.security.authorizer.enabled {
        return Vec::new();
    }
    let follower = request.replica_id.0 >= 0 || request.replica_state.replica_id.0 >= 0;
    let follower_ok = follower && cluster(state, ctx, op::CLUSTER_ACTION);
    let mut denied = Vec::new();
    request.topics.retain(|t| {
        let ok = if follower {
            follower_ok
        } else {
            topic(state, ctx, op::READ, &t.topic)
        };
        if !ok {
            denied.push(TopicResult {
                name: t.topic.to_string(),
                topic_id: t.topic_id,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| PartitionResult::error(p.partition, codes::TOPIC_AUTHORIZATION_FAILED))
                    .collect(),
            });
        }
        ok
    });
    denied
}

/// `authorized_operations` as a handler answers it: `all` (the type's full set, or the
/// "not requested" marker) without an authorizer or when not requested, else computed.
#[must_use]
pub fn operations_or(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    all: i32,
    resource_type: i8,
    name: &str,
) -> i32 {
    if !state.security.authorizer.enabled || all == i32::MIN {
        return all;
    }
    authorized_operations(state, ctx, resource_type, name)
}

/// Metadata for a named topic: TOPIC_AUTHORIZATION_FAILED unless the principal may
/// DESCRIBE it, and, when it would be auto-created, CREATE it.
#[must_use]
pub fn metadata_denied(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    requested: &kafka_protocol::messages::metadata_request::MetadataRequestTopic,
    allow_create: bool,
) -> Option<i16> {
    use crate::errors::codes;
    let name = requested.name.as_deref()?.as_str();
    if name.is_empty() || !state.security.authorizer.enabled {
        return None;
    }
    if !topic(state, ctx, op::DESCRIBE, name) {
        return Some(codes::TOPIC_AUTHORIZATION_FAILED);
    }
    (allow_create && state.topic(name).is_none() && !may_create_topic(state, ctx, name))
        .then_some(codes::TOPIC_AUTHORIZATION_FAILED)
}

/// ListGroups shows every group to a principal that may DESCRIBE the cluster, else only
/// the groups it may DESCRIBE.
#[must_use]
pub fn may_list_group(state: &BrokerState, ctx: &RequestContext<'_>, group_id: &str) -> bool {
    cluster(state, ctx, op::DESCRIBE) || group(state, ctx, op::DESCRIBE, group_id)
}

/// Describe/Alter(Incremental)Configs on one resource: the operation on the topic, or on
/// the cluster for a broker (4) or broker logger (8) resource.
pub fn configs(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    operation: i8,
    resource_type: i8,
    name: &str,
) -> Result<(), crate::errors::ApiError> {
    use crate::errors::{codes, ApiError};
    if resource_type == crate::config::group::RESOURCE_GROUP {
        if !group(state, ctx, operation, name) {
            return Err(ApiError::new(
                codes::GROUP_AUTHORIZATION_FAILED,
                "Authorization failed.",
            ));
        }
    } else if resource_type == resource::TOPIC {
        if !topic(state, ctx, operation, name) {
            return Err(ApiError::new(
                codes::TOPIC_AUTHORIZATION_FAILED,
                "Authorization failed.",
            ));
        }
    } else if !cluster(state, ctx, operation) {
        return Err(ApiError::new(
            codes::CLUSTER_AUTHORIZATION_FAILED,
            "Authorization failed.",
        ));
    }
    Ok(())
}
