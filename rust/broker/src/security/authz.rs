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
