//! DescribeAcls: the ACLs a filter matches, grouped by resource pattern; needs DESCRIBE on
//! the cluster.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{DescribeAclsRequest, DescribeAclsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::acl::{op, AclFilter};
use crate::security::authz;
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let r = DescribeAclsRequest::decode(&mut body, version)?;
    let error = |code: i16, message: &str| {
        encode(
            &DescribeAclsResponse::default()
                .with_error_code(code)
                .with_error_message(Some(StrBytes::from_string(message.to_string()))),
            version,
        )
        .map(Some)
    };
    if let Some((code, message)) = authz::acl_api_refusal(state, ctx, op::DESCRIBE) {
        return error(code, message);
    }
    let filter = AclFilter {
        resource_type: r.resource_type_filter,
        resource_name: r.resource_name_filter.map(|s| s.to_string()),
        pattern_type: r.pattern_type_filter,
        principal: r.principal_filter.map(|s| s.to_string()),
        host: r.host_filter.map(|s| s.to_string()),
        operation: r.operation,
        permission: r.permission_type,
    };
    if let Some(why) = filter.invalid() {
        return error(codes::INVALID_REQUEST, &why);
    }
    let mut grouped: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
    for b in state.security.authorizer.describe(&filter) {
        grouped
            .entry((b.resource_type, b.resource_name, b.pattern_type))
            .or_default()
            .push(
                AclDescription::default()
                    .with_principal(StrBytes::from_string(b.principal))
                    .with_host(StrBytes::from_string(b.host))
                    .with_operation(b.operation)
                    .with_permission_type(b.permission),
            );
    }
    let resources = grouped
        .into_iter()
        .map(|((rt, name, pt), acls)| {
            DescribeAclsResource::default()
                .with_resource_type(rt)
                .with_resource_name(StrBytes::from_string(name))
                .with_pattern_type(pt)
                .with_acls(acls)
        })
        .collect();
    encode(
        &DescribeAclsResponse::default().with_resources(resources),
        version,
    )
    .map(Some)
}
