//! IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT on a topic's overrides; SET
//! and DELETE on a broker entity's dynamic configs (`config::dynamic_apply`).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, RequestHeader,
};
use kafka_protocol::protocol::Decodable;
use kafkalite_core::config::Type;

use crate::config::dynamic_apply;
use crate::config::group as group_configs;
use crate::config::topic as topic_configs;
use crate::config::{broker_logger, client_metrics, client_metrics_apply};
use crate::errors::{codes, ApiError};
use crate::handlers::alter_configs::{apply, error_fields, no_duplicates};
use crate::handlers::describe_configs::{RESOURCE_BROKER, RESOURCE_TOPIC};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::{validate_topic_name, BrokerState};

const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = IncrementalAlterConfigsRequest::decode(&mut body, version)?;
    let responses = request
        .resources
        .iter()
        .map(|r| {
            let op = authz::operation::ALTER_CONFIGS;
            let allowed = authz::configs(state, ctx, op, r.resource_type, &r.resource_name);
            let logger = r.resource_type == broker_logger::RESOURCE_BROKER_LOGGER;
            let outcome = if logger {
                allowed.and_then(|()| broker_logger::alter(state, r, request.validate_only))
            } else if r.resource_type == RESOURCE_BROKER {
                allowed.and_then(|()| broker_change(r)).and_then(|change| {
                    dynamic_apply::alter(state, &r.resource_name, change, request.validate_only)
                })
            } else if r.resource_type == client_metrics::RESOURCE_CLIENT_METRICS {
                allowed
                    .and_then(|()| client_metrics_merged(state, r))
                    .and_then(|configs| {
                        let name = &r.resource_name;
                        client_metrics_apply::alter(state, name, configs, request.validate_only)
                    })
            } else {
                allowed.and_then(|()| merged(state, r)).and_then(|configs| {
                    apply(
                        state,
                        r.resource_type,
                        &r.resource_name,
                        configs,
                        request.validate_only,
                    )
                })
            };
            let (code, message) = error_fields(outcome);
            AlterConfigsResourceResponse::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone())
                .with_error_code(code)
                .with_error_message(message)
        })
        .collect();
    encode(
        &IncrementalAlterConfigsResponse::default().with_responses(responses),
        version,
    )
    .map(Some)
}

/// The broker entity's SET and DELETE operations (APPEND and SUBTRACT are topic-only here).
fn broker_change(r: &AlterConfigsResource) -> Result<dynamic_apply::Change, ApiError> {
    no_duplicates(r.configs.iter().map(|c| c.name.as_str()))?;
    let mut set = BTreeMap::new();
    let mut delete = Vec::new();
    for c in &r.configs {
        let name = c.name.to_string();
        match (c.config_operation, c.value.as_ref()) {
            (DELETE, _) => delete.push(name),
            (SET, Some(value)) => {
                set.insert(name, value.to_string());
            }
            (SET, None) => {
                return Err(ApiError::new(
                    codes::INVALID_CONFIG,
                    format!("null value not supported for operation {SET} on {name}"),
                ))
            }
            (op, _) => {
                return Err(ApiError::new(
                    codes::INVALID_REQUEST,
                    format!(
                    "operation {op} on broker config {name} is not supported (SET and DELETE are)"
                ),
                ))
            }
        }
    }
    Ok(dynamic_apply::Change::Incremental { set, delete })
}

/// The topic's or group's override set after the operations.
fn merged(
    state: &BrokerState,
    r: &AlterConfigsResource,
) -> Result<BTreeMap<String, String>, ApiError> {
    no_duplicates(r.configs.iter().map(|c| c.name.as_str()))?;
    let mut configs = match r.resource_type {
        RESOURCE_TOPIC => {
            validate_topic_name(&r.resource_name)?;
            let topic = super::alter_configs::require_topic(state, &r.resource_name)?;
            let configs = topic.configs.read().expect("lock").clone();
            configs
        }
        group_configs::RESOURCE_GROUP => {
            // Kafka's words for the default (unnamed) group here.
            group_configs::check_name(&r.resource_name)
                .map_err(|e| ApiError::new(e.code, "Default group resources are not allowed."))?;
            state.group_configs.get(&r.resource_name)
        }
        // Not a resource type configs exist for: `apply` names it.
        _ => return Ok(BTreeMap::new()),
    };
    for c in &r.configs {
        let name = c.name.to_string();
        let op = c.config_operation;
        if op == DELETE {
            configs.remove(&name);
            continue;
        }
        let Some(value) = c.value.as_ref().map(ToString::to_string) else {
            return Err(ApiError::new(
                codes::INVALID_CONFIG,
                format!("null value not supported for operation {op} on {name}"),
            ));
        };
        match op {
            SET => {
                configs.insert(name, value);
            }
            APPEND | SUBTRACT => {
                // No group key is a list.
                let key = topic_configs::find(&name)
                    .filter(|k| k.ty == Type::List && r.resource_type == RESOURCE_TOPIC);
                let Some(key) = key else {
                    return Err(ApiError::new(
                        codes::INVALID_CONFIG,
                        format!(
                            "Can't {} to key {name} because its type is not LIST.",
                            if op == APPEND { "APPEND" } else { "SUBTRACT" }
                        ),
                    ));
                };
                let current = configs
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| topic_configs::broker_default(&state.dynamic.live(), key).0);
                configs.insert(name, list_op(&current, &value, op == APPEND));
            }
            _ => {
                return Err(ApiError::new(
                    codes::INVALID_REQUEST,
                    format!("unknown config operation {op} for {name}"),
                ))
            }
        }
    }
    Ok(configs)
}

/// A subscription's keys after SET and DELETE. Kafka 4.1.1 has no LIST schema for these
/// keys in its controller, so APPEND and SUBTRACT are refused even on `metrics` and `match`.
fn client_metrics_merged(
    state: &BrokerState,
    r: &AlterConfigsResource,
) -> Result<BTreeMap<String, String>, ApiError> {
    no_duplicates(r.configs.iter().map(|c| c.name.as_str()))?;
    let mut configs = state.client_metrics.get(&r.resource_name);
    for c in &r.configs {
        let name = c.name.to_string();
        match (c.config_operation, c.value.as_ref()) {
            (DELETE, _) => {
                configs.remove(&name);
            }
            (SET, Some(value)) => {
                configs.insert(name, value.to_string());
            }
            (SET, None) => {
                return Err(ApiError::new(
                    codes::INVALID_REQUEST,
                    format!("Null value not supported for client metrics config: {name}"),
                ))
            }
            (op @ (APPEND | SUBTRACT), _) => {
                let verb = if op == APPEND { "APPEND" } else { "SUBTRACT" };
                return Err(ApiError::new(
                    codes::INVALID_CONFIG,
                    format!("Can't {verb} to key {name} because its type is not LIST."),
                ));
            }
            (op, _) => {
                return Err(ApiError::new(
                    codes::INVALID_REQUEST,
                    format!("unknown config operation {op} for {name}"),
                ))
            }
        }
    }
    Ok(configs)
}

fn list_op(current: &str, change: &str, append: bool) -> String {
    let items = |s: &str| -> Vec<String> {
        s.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    let mut out = items(current);
    for v in items(change) {
        if append && !out.contains(&v) {
            out.push(v);
        } else if !append {
            out.retain(|i| *i != v);
        }
    }
    out.join(",")
}
