//! ListConfigResources (v0–1; v0 was KIP-714's ListClientMetricsResources): the config
//! resources that exist. v0 lists client-metrics subscriptions only; v1 lists the resource
//! types asked for (none asked: every type it knows), one lister per type, and answers
//! UNSUPPORTED_VERSION to a type it does not list, as Kafka 4.1.1 does. Needs
//! DESCRIBE_CONFIGS on the cluster.
//!
//! GROUP lists the groups with dynamic configs (`config::group`).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::list_config_resources_response::ConfigResource;
use kafka_protocol::messages::{
    ListConfigResourcesRequest, ListConfigResourcesResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::config::broker_logger::RESOURCE_BROKER_LOGGER;
use crate::config::client_metrics::RESOURCE_CLIENT_METRICS;
use crate::errors::codes;
use crate::handlers::describe_configs::{RESOURCE_BROKER, RESOURCE_TOPIC};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::acl::op;
use crate::security::authz;
use crate::state::BrokerState;

/// `ConfigResource.Type.GROUP`.
const RESOURCE_GROUP: i8 = 32;

type Lister = fn(&BrokerState, &RequestContext<'_>) -> Vec<String>;

/// Every type v1 lists, in the order Kafka 4.1.1 answers with them.
const LISTERS: [(i8, Lister); 5] = [
    (RESOURCE_GROUP, groups),
    (RESOURCE_CLIENT_METRICS, client_metrics),
    (RESOURCE_BROKER_LOGGER, brokers),
    (RESOURCE_BROKER, brokers),
    (RESOURCE_TOPIC, topics),
];

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = ListConfigResourcesRequest::decode(&mut body, version)?;
    let response = ListConfigResourcesResponse::default();
    let response = if !authz::cluster(state, ctx, op::DESCRIBE_CONFIGS) {
        response.with_error_code(codes::CLUSTER_AUTHORIZATION_FAILED)
    } else if version == 0 {
        response.with_config_resources(resources(state, ctx, RESOURCE_CLIENT_METRICS))
    } else {
        let asked = &request.resource_types;
        if asked
            .iter()
            .any(|t| !LISTERS.iter().any(|(known, _)| known == t))
        {
            response.with_error_code(codes::UNSUPPORTED_VERSION)
        } else {
            let listed = LISTERS
                .iter()
                .filter(|(t, _)| asked.is_empty() || asked.contains(t))
                .flat_map(|(t, _)| resources(state, ctx, *t))
                .collect();
            response.with_config_resources(listed)
        }
    };
    encode(&response, version).map(Some)
}

fn resources(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    resource_type: i8,
) -> Vec<ConfigResource> {
    let Some((_, lister)) = LISTERS.iter().find(|(t, _)| *t == resource_type) else {
        return Vec::new();
    };
    lister(state, ctx)
        .into_iter()
        .map(|name| {
            ConfigResource::default()
                .with_resource_name(StrBytes::from_string(name))
                .with_resource_type(resource_type)
        })
        .collect()
}

fn groups(state: &BrokerState, _ctx: &RequestContext<'_>) -> Vec<String> {
    state.group_configs.group_names()
}

fn client_metrics(state: &BrokerState, _ctx: &RequestContext<'_>) -> Vec<String> {
    state.client_metrics.all().into_keys().collect()
}

fn brokers(state: &BrokerState, ctx: &RequestContext<'_>) -> Vec<String> {
    state
        .live_brokers_on(ctx.listener_name())
        .into_iter()
        .map(|b| b.node_id.to_string())
        .collect()
}

fn topics(state: &BrokerState, _ctx: &RequestContext<'_>) -> Vec<String> {
    state.topic_names()
}
