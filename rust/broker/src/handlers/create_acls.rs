//! CreateAcls: needs ALTER on the cluster; each creation is checked (Kafka's rules) and
//! stored, or answered with INVALID_REQUEST naming why. SECURITY_DISABLED without an
//! authorizer.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::{CreateAclsRequest, CreateAclsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::acl::{op, AclBinding};
use crate::security::authz;
use crate::security::shared_store;
use crate::state::BrokerState;

fn failed(code: i16, message: String) -> AclCreationResult {
    AclCreationResult::default()
        .with_error_code(code)
        .with_error_message(Some(StrBytes::from_string(message)))
}

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = CreateAclsRequest::decode(&mut body, version)?;
    let refusal = authz::acl_api_refusal(state, ctx, op::ALTER);
    let mut results = Vec::with_capacity(request.creations.len());
    let mut valid = Vec::new();
    for c in &request.creations {
        let binding = AclBinding {
            resource_type: c.resource_type,
            resource_name: c.resource_name.to_string(),
            pattern_type: c.resource_pattern_type,
            principal: c.principal.to_string(),
            host: c.host.to_string(),
            operation: c.operation,
            permission: c.permission_type,
        };
        if let Some((code, message)) = refusal {
            results.push(failed(code, message.into()));
        } else if let Some(why) = binding.invalid() {
            results.push(failed(codes::INVALID_REQUEST, why));
        } else {
            results.push(AclCreationResult::default());
            valid.push(binding);
        }
    }
    if let Err(e) = shared_store::create_acls(state, &valid) {
        for r in &mut results {
            if r.error_code == 0 {
                *r = failed(
                    codes::UNKNOWN_SERVER_ERROR,
                    format!("cannot store ACLs: {e}"),
                );
            }
        }
    }
    encode(
        &CreateAclsResponse::default().with_results(results),
        version,
    )
    .map(Some)
}
