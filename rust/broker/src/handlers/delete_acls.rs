//! DeleteAcls: every ACL each filter matches is removed and reported; needs ALTER on the
//! cluster.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::{DeleteAclsRequest, DeleteAclsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::acl::{op, AclFilter};
use crate::security::authz;
use crate::security::shared_store;
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let r = DeleteAclsRequest::decode(&mut body, version)?;
    let refusal = authz::acl_api_refusal(state, ctx, op::ALTER);
    let filters: Vec<AclFilter> = r
        .filters
        .iter()
        .map(|f| AclFilter {
            resource_type: f.resource_type_filter,
            resource_name: f.resource_name_filter.as_ref().map(|s| s.to_string()),
            pattern_type: f.pattern_type_filter,
            principal: f.principal_filter.as_ref().map(|s| s.to_string()),
            host: f.host_filter.as_ref().map(|s| s.to_string()),
            operation: f.operation,
            permission: f.permission_type,
        })
        .collect();
    let failed = |code: i16, message: String| {
        DeleteAclsFilterResult::default()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(message)))
    };
    let results: Vec<DeleteAclsFilterResult> = if let Some((code, message)) = refusal {
        filters
            .iter()
            .map(|_| failed(code, message.into()))
            .collect()
    } else {
        let usable: Vec<AclFilter> = filters
            .iter()
            .filter(|f| f.invalid().is_none())
            .cloned()
            .collect();
        let mut removed = match shared_store::delete_acls(state, &usable) {
            Ok(removed) => removed.into_iter(),
            Err(e) => {
                let message = format!("cannot store ACLs: {e}");
                let all = filters
                    .iter()
                    .map(|_| failed(codes::UNKNOWN_SERVER_ERROR, message.clone()));
                return encode(
                    &DeleteAclsResponse::default().with_filter_results(all.collect()),
                    version,
                )
                .map(Some);
            }
        };
        filters
            .iter()
            .map(|f| match f.invalid() {
                Some(why) => failed(codes::INVALID_REQUEST, why),
                // Kafka sends a null message with no error (the codec's default is "").
                None => DeleteAclsFilterResult::default()
                    .with_error_message(None)
                    .with_matching_acls(
                        removed
                            .next()
                            .unwrap_or_default()
                            .into_iter()
                            .map(|b| {
                                DeleteAclsMatchingAcl::default()
                                    .with_error_message(None)
                                    .with_resource_type(b.resource_type)
                                    .with_resource_name(StrBytes::from_string(b.resource_name))
                                    .with_pattern_type(b.pattern_type)
                                    .with_principal(StrBytes::from_string(b.principal))
                                    .with_host(StrBytes::from_string(b.host))
                                    .with_operation(b.operation)
                                    .with_permission_type(b.permission)
                            })
                            .collect(),
                    ),
            })
            .collect()
    };
    encode(
        &DeleteAclsResponse::default().with_filter_results(results),
        version,
    )
    .map(Some)
}
