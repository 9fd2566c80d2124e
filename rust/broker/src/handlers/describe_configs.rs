//! DescribeConfigs for topics (every key, with defaults, sources and synonyms, so tools that
//! diff configs see what Kafka would show) and for this broker.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::handlers::topic_configs::{self, source, Kind, Synonym};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::{validate_topic_name, ApiError, BrokerState};

pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;
pub const INVALID_REQUEST: i16 = 42;

struct Entry {
    name: String,
    value: String,
    source: i8,
    kind: Kind,
    /// Broker configs come from server.properties and cannot be altered while running.
    read_only: bool,
    sensitive: bool,
    synonyms: Vec<Synonym>,
}

pub async fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DescribeConfigsRequest::decode(&mut body, version)?;
    let results = request
        .resources
        .iter()
        .map(|r| describe(state, r, request.include_synonyms, version))
        .collect();
    encode(
        &DescribeConfigsResponse::default().with_results(results),
        version,
    )
    .map(Some)
}

fn describe(
    state: &BrokerState,
    r: &DescribeConfigsResource,
    synonyms: bool,
    version: i16,
) -> DescribeConfigsResult {
    let result = DescribeConfigsResult::default()
        .with_resource_type(r.resource_type)
        .with_resource_name(r.resource_name.clone());
    let entries = match r.resource_type {
        RESOURCE_TOPIC => topic_entries(state, &r.resource_name),
        RESOURCE_BROKER => broker_entries(state, &r.resource_name),
        other => Err(ApiError::new(
            INVALID_REQUEST,
            format!("unsupported resource type {other}"),
        )),
    };
    match entries {
        Err(e) => result
            .with_error_code(e.code)
            .with_error_message(Some(StrBytes::from_string(e.message))),
        Ok(entries) => {
            let wanted = r.configuration_keys.as_ref();
            let configs = entries
                .into_iter()
                .filter(|e| wanted.is_none_or(|keys| keys.iter().any(|k| k.as_str() == e.name)))
                .map(|e| to_result(e, synonyms, version))
                .collect();
            result.with_configs(configs)
        }
    }
}

fn topic_entries(state: &BrokerState, name: &str) -> Result<Vec<Entry>, ApiError> {
    validate_topic_name(name)?;
    let topic = state.require_topic(name)?;
    let overrides = topic.configs.read().expect("lock").clone();
    Ok(topic_configs::effective(&state.config, &overrides)
        .into_iter()
        .map(|e| Entry {
            name: e.key.name.to_string(),
            value: e.value,
            source: e.source,
            kind: e.key.kind,
            read_only: false,
            sensitive: false,
            synonyms: e.synonyms,
        })
        .collect())
}

/// Kafka's PASSWORD-typed keys (and JAAS configs, which embed passwords): never echoed.
fn is_sensitive(key: &str) -> bool {
    key.contains("password")
        || key.contains("secret")
        || key.ends_with("jaas.config")
        || key.ends_with("keystore.key")
}

fn broker_entries(state: &BrokerState, name: &str) -> Result<Vec<Entry>, ApiError> {
    let c = &state.config;
    if !name.is_empty() && name.trim().parse::<i32>() != Ok(c.node_id) {
        return Err(ApiError::new(
            INVALID_REQUEST,
            format!(
                "unexpected broker id, expected {} or empty string, but received {name}",
                c.node_id
            ),
        ));
    }
    let join = |items: Vec<String>| items.join(",");
    let mut defaults: Vec<(String, String, Kind)> = vec![
        ("node.id".into(), c.node_id.to_string(), Kind::Int),
        ("broker.id".into(), c.node_id.to_string(), Kind::Int),
        (
            "listeners".into(),
            join(
                c.listeners
                    .iter()
                    .map(|l| format!("{}://{}", l.name, l.bind))
                    .collect(),
            ),
            Kind::String,
        ),
        (
            "log.dirs".into(),
            join(c.log_dirs.iter().map(|d| d.display().to_string()).collect()),
            Kind::String,
        ),
        (
            "num.partitions".into(),
            c.num_partitions.to_string(),
            Kind::Int,
        ),
        (
            "default.replication.factor".into(),
            c.default_replication_factor.to_string(),
            Kind::Int,
        ),
        (
            "auto.create.topics.enable".into(),
            c.auto_create_topics.to_string(),
            Kind::Boolean,
        ),
        (
            "message.max.bytes".into(),
            c.message_max_bytes.to_string(),
            Kind::Int,
        ),
        (
            "socket.request.max.bytes".into(),
            c.socket_request_max_bytes.to_string(),
            Kind::Int,
        ),
        ("log.retention.hours".into(), "168".into(), Kind::Int),
        ("log.roll.hours".into(), "168".into(), Kind::Int),
        ("delete.topic.enable".into(), "true".into(), Kind::Boolean),
    ];
    if let Some(advertised) = state.advertised.get() {
        defaults.push((
            "advertised.listeners".into(),
            join(
                advertised
                    .iter()
                    .map(|(n, h, p)| format!("{n}://{h}:{p}"))
                    .collect(),
            ),
            Kind::String,
        ));
    }
    let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
    for (name, value, kind) in defaults {
        entries.entry(name.clone()).or_insert(Entry {
            name,
            value,
            source: source::DEFAULT_CONFIG,
            kind,
            read_only: true,
            sensitive: false,
            synonyms: Vec::new(),
        });
    }
    // The broker key behind each topic key, at the value new topics get and with the
    // synonyms (e.g. log.retention.hours) that set it.
    for e in topic_configs::effective(c, &BTreeMap::new()) {
        if let Some(primary) = e.key.broker_keys.first() {
            entries.insert(
                (*primary).to_string(),
                Entry {
                    name: (*primary).to_string(),
                    value: e.value,
                    source: e.source,
                    kind: e.key.kind,
                    read_only: true,
                    sensitive: false,
                    synonyms: e.synonyms,
                },
            );
        }
    }
    for (name, value) in &c.raw {
        let kind = entries.get(name).map_or(Kind::String, |e| e.kind);
        entries.insert(
            name.clone(),
            Entry {
                name: name.clone(),
                value: value.clone(),
                source: source::STATIC_BROKER_CONFIG,
                kind,
                read_only: true,
                sensitive: is_sensitive(name),
                synonyms: Vec::new(),
            },
        );
    }
    Ok(entries
        .into_values()
        .map(|mut e| {
            if e.synonyms.is_empty() {
                e.synonyms = vec![Synonym {
                    name: e.name.clone(),
                    value: e.value.clone(),
                    source: e.source,
                }];
            }
            e
        })
        .collect())
}

fn to_result(e: Entry, synonyms: bool, version: i16) -> DescribeConfigsResourceResult {
    let shown = |v: String| (!e.sensitive).then(|| StrBytes::from_string(v));
    let mut out = DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_string(e.name.clone()))
        .with_value(shown(e.value.clone()))
        .with_read_only(e.read_only)
        .with_config_source(e.source)
        .with_is_sensitive(e.sensitive)
        .with_documentation(None);
    if version >= 3 {
        out = out.with_config_type(e.kind as i8);
    }
    if synonyms {
        let list = e
            .synonyms
            .iter()
            .map(|s| {
                DescribeConfigsSynonym::default()
                    .with_name(StrBytes::from_string(s.name.clone()))
                    .with_value(shown(s.value.clone()))
                    .with_source(s.source)
            })
            .collect();
        out = out.with_synonyms(list);
    }
    out
}
