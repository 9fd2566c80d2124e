//! AlterConfigs: replaces a topic's whole override set. Broker configs are static here
//! (read from server.properties at start), so altering them is refused by name.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::handlers::describe_configs::{RESOURCE_BROKER, RESOURCE_TOPIC};
use crate::handlers::topic_configs;
use crate::response::{encode, ResponseBody};
use crate::state::{codes, ApiError, BrokerState};

pub async fn handle(
    state: &Arc<BrokerState>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = AlterConfigsRequest::decode(&mut body, version)?;
    let responses = request
        .resources
        .iter()
        .map(|r| {
            let configs: BTreeMap<String, String> = r
                .configs
                .iter()
                .filter_map(|c| {
                    c.value
                        .as_ref()
                        .map(|v| (c.name.to_string(), v.to_string()))
                })
                .collect();
            let outcome = apply(
                state,
                r.resource_type,
                &r.resource_name,
                configs,
                request.validate_only,
            );
            respond(r.resource_type, r.resource_name.clone(), outcome)
        })
        .collect();
    encode(
        &AlterConfigsResponse::default().with_responses(responses),
        version,
    )
    .map(Some)
}

/// Validate and (unless `validate_only`) set a resource's overrides.
pub fn apply(
    state: &BrokerState,
    resource_type: i8,
    name: &str,
    configs: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), ApiError> {
    match resource_type {
        RESOURCE_TOPIC => {
            topic_configs::validate_all(&configs)?;
            state.set_topic_configs(name, configs, validate_only)
        }
        RESOURCE_BROKER => Err(ApiError::new(
            codes::INVALID_CONFIG,
            format!(
                "broker configs are static; set {} in server.properties",
                configs.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        )),
        other => Err(ApiError::new(
            codes::INVALID_CONFIG,
            format!("unsupported resource type {other}"),
        )),
    }
}

pub fn respond(
    resource_type: i8,
    name: StrBytes,
    outcome: Result<(), ApiError>,
) -> AlterConfigsResourceResponse {
    let response = AlterConfigsResourceResponse::default()
        .with_resource_type(resource_type)
        .with_resource_name(name);
    match outcome {
        Ok(()) => response,
        Err(e) => response
            .with_error_code(e.code)
            .with_error_message(Some(StrBytes::from_string(e.message))),
    }
}
