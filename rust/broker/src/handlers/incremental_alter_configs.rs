//! IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT on a topic's overrides.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, RequestHeader,
};
use kafka_protocol::protocol::Decodable;

use crate::handlers::alter_configs;
use crate::handlers::describe_configs::RESOURCE_TOPIC;
use crate::handlers::topic_configs::{self, Kind};
use crate::response::{encode, ResponseBody};
use crate::state::{codes, ApiError, BrokerState};

const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

pub async fn handle(
    state: &Arc<BrokerState>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = IncrementalAlterConfigsRequest::decode(&mut body, version)?;
    let responses = request
        .resources
        .iter()
        .map(|r| {
            let outcome = merged(state, r).and_then(|configs| {
                alter_configs::apply(
                    state,
                    r.resource_type,
                    &r.resource_name,
                    configs,
                    request.validate_only,
                )
            });
            let generic = alter_configs::respond(r.resource_type, r.resource_name.clone(), outcome);
            AlterConfigsResourceResponse::default()
                .with_error_code(generic.error_code)
                .with_error_message(generic.error_message)
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone())
        })
        .collect();
    encode(
        &IncrementalAlterConfigsResponse::default().with_responses(responses),
        version,
    )
    .map(Some)
}

/// The topic's overrides after applying the operations.
fn merged(
    state: &BrokerState,
    r: &kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
) -> Result<std::collections::BTreeMap<String, String>, ApiError> {
    if r.resource_type != RESOURCE_TOPIC {
        return Ok(r
            .configs
            .iter()
            .filter_map(|c| {
                c.value
                    .as_ref()
                    .map(|v| (c.name.to_string(), v.to_string()))
            })
            .collect());
    }
    let topic = state.require_topic(&r.resource_name)?;
    let mut configs = topic.configs.read().expect("lock").clone();
    for c in &r.configs {
        let name = c.name.to_string();
        let value = c.value.as_ref().map(|v| v.to_string()).unwrap_or_default();
        let is_list = topic_configs::find(&name).is_some_and(|k| k.kind == Kind::List);
        match c.config_operation {
            SET => {
                configs.insert(name, value);
            }
            DELETE => {
                configs.remove(&name);
            }
            APPEND | SUBTRACT if is_list => {
                let current = configs.get(&name).cloned().unwrap_or_else(|| {
                    topic_configs::find(&name)
                        .map(|k| topic_configs::broker_default(&state.config, k).0)
                        .unwrap_or_default()
                });
                let mut items: Vec<String> = current
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                for v in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    if c.config_operation == APPEND {
                        if !items.iter().any(|i| i == v) {
                            items.push(v.to_string());
                        }
                    } else {
                        items.retain(|i| i != v);
                    }
                }
                configs.insert(name, items.join(","));
            }
            op => {
                return Err(ApiError::new(
                    codes::INVALID_CONFIG,
                    format!("operation {op} is not valid for configuration {name}"),
                ))
            }
        }
    }
    Ok(configs)
}
