//! AlterConfigs: replaces a topic's whole override set, or a broker entity's whole set of
//! dynamic configs (`config::dynamic_apply`).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::config::group as group_configs;
use crate::config::topic as topic_configs;
use crate::config::{client_metrics, client_metrics_apply, dynamic_apply};
use crate::errors::{codes, ApiError};
use crate::handlers::describe_configs::{RESOURCE_BROKER, RESOURCE_TOPIC};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::{validate_topic_name, BrokerState};

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = AlterConfigsRequest::decode(&mut body, version)?;
    let responses = request
        .resources
        .iter()
        .map(|r| {
            let names = r.configs.iter().map(|c| c.name.as_str());
            let configs: BTreeMap<String, String> = r
                .configs
                .iter()
                .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
                .collect();
            let op = authz::operation::ALTER_CONFIGS;
            let allowed = authz::configs(state, ctx, op, r.resource_type, &r.resource_name);
            let outcome = allowed.and_then(|()| no_duplicates(names));
            let outcome = outcome.and_then(|()| no_null_value(r)).and_then(|()| {
                apply(
                    state,
                    r.resource_type,
                    &r.resource_name,
                    configs,
                    request.validate_only,
                )
            });
            let (code, message) = error_fields(outcome);
            AlterConfigsResourceResponse::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone())
                .with_error_code(code)
                .with_error_message(message)
        })
        .collect();
    encode(
        &AlterConfigsResponse::default().with_responses(responses),
        version,
    )
    .map(Some)
}

/// The topic an alteration names, or UNKNOWN_TOPIC_OR_PARTITION in Kafka's words.
pub fn require_topic(
    state: &BrokerState,
    name: &str,
) -> Result<std::sync::Arc<crate::cluster::Topic>, ApiError> {
    state.topic(name).ok_or_else(|| {
        ApiError::new(
            codes::UNKNOWN_TOPIC_OR_PARTITION,
            format!("The topic '{name}' does not exist."),
        )
    })
}

pub fn no_duplicates<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), ApiError> {
    let mut seen = HashSet::new();
    match names.into_iter().find(|n| !seen.insert(*n)) {
        // Kafka's words name no key.
        Some(_) => Err(ApiError::new(
            codes::INVALID_REQUEST,
            "Error due to duplicate config keys",
        )),
        None => Ok(()),
    }
}

/// Kafka 4.1.1 refuses a null value in the legacy API with INVALID_REQUEST rather than
/// dropping the key (the conformance fuzzer found kafkalite dropping it).
fn no_null_value(
    resource: &kafka_protocol::messages::alter_configs_request::AlterConfigsResource,
) -> Result<(), ApiError> {
    match resource.configs.iter().find(|c| c.value.is_none()) {
        Some(c) => Err(ApiError::new(
            codes::INVALID_REQUEST,
            format!("Null value not supported for : {}", c.name.as_str()),
        )),
        None => Ok(()),
    }
}

/// Validate and (unless `validate_only`) make `configs` a resource's whole override set.
pub fn apply(
    state: &BrokerState,
    resource_type: i8,
    name: &str,
    configs: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), ApiError> {
    match resource_type {
        RESOURCE_TOPIC => {
            validate_topic_name(name)?;
            require_topic(state, name)?;
            let configs = topic_configs::normalize_all(&state.dynamic.live(), &configs)?;
            state.set_topic_configs(name, configs, validate_only)
        }
        RESOURCE_BROKER => dynamic_apply::alter(
            state,
            name,
            dynamic_apply::Change::Replace(configs),
            validate_only,
        ),
        client_metrics::RESOURCE_CLIENT_METRICS => {
            client_metrics_apply::alter(state, name, configs, validate_only)
        }
        group_configs::RESOURCE_GROUP => alter_group(state, name, configs, validate_only),
        other => Err(ApiError::new(
            codes::INVALID_REQUEST,
            format!("unsupported resource type {other}"),
        )),
    }
}

/// Make `configs` a group's whole override set, checked against the broker's bounds.
pub fn alter_group(
    state: &BrokerState,
    name: &str,
    configs: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), ApiError> {
    group_configs::check_name(name)?;
    let stored = group_configs::validate(&configs, &state.dynamic.live().settings)?;
    if validate_only {
        return Ok(());
    }
    crate::config::group_apply::alter(state, name, stored)
}

pub fn error_fields(outcome: Result<(), ApiError>) -> (i16, Option<StrBytes>) {
    match outcome {
        Ok(()) => (codes::NONE, None),
        Err(e) => (e.code, Some(StrBytes::from_string(e.message))),
    }
}
