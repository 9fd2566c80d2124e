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

use kafkalite_core::config::{self as schema, Type};

use crate::config::group as group_configs;
use crate::config::source;
use crate::config::topic::{self as topic_configs, Synonym};
use crate::config::{broker_logger, client_metrics};
use crate::config::{dynamic, dynamic_apply, layers};
use crate::errors::{codes, ApiError};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::{validate_topic_name, BrokerState};

pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;

struct Entry {
    name: String,
    /// `None` where Kafka's default is null.
    value: Option<String>,
    source: i8,
    kind: Type,
    /// Kafka's flag: the key cannot be altered without a restart.
    read_only: bool,
    sensitive: bool,
    synonyms: Vec<Synonym>,
}

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DescribeConfigsRequest::decode(&mut body, version)?;
    let results = request
        .resources
        .iter()
        .map(|r| describe(state, ctx, r, request.include_synonyms, version))
        .collect();
    encode(
        &DescribeConfigsResponse::default().with_results(results),
        version,
    )
    .map(Some)
}

fn describe(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    r: &DescribeConfigsResource,
    synonyms: bool,
    version: i16,
) -> DescribeConfigsResult {
    let result = DescribeConfigsResult::default()
        .with_resource_type(r.resource_type)
        .with_resource_name(r.resource_name.clone());
    let op = authz::operation::DESCRIBE_CONFIGS;
    let allowed = authz::configs(state, ctx, op, r.resource_type, &r.resource_name);
    let entries = allowed.and_then(|()| match r.resource_type {
        RESOURCE_TOPIC => topic_entries(state, &r.resource_name),
        RESOURCE_BROKER => broker_entries(state, &r.resource_name),
        broker_logger::RESOURCE_BROKER_LOGGER => logger_entries(state, &r.resource_name),
        client_metrics::RESOURCE_CLIENT_METRICS => client_metrics_entries(state, &r.resource_name),
        group_configs::RESOURCE_GROUP => group_entries(state, &r.resource_name),
        other => Err(ApiError::new(
            codes::INVALID_REQUEST,
            format!("unsupported resource type {other}"),
        )),
    });
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

fn logger_entries(state: &BrokerState, name: &str) -> Result<Vec<Entry>, ApiError> {
    Ok(broker_logger::describe(state, name)?
        .into_iter()
        .map(|(logger, level)| Entry {
            name: logger,
            value: Some(level),
            source: broker_logger::SOURCE,
            kind: Type::String,
            read_only: false,
            sensitive: false,
            synonyms: Vec::new(),
        })
        .collect())
}

/// Kafka lists every key of a subscription, its own values and the defaults, for any
/// name (one that does not exist shows the defaults).
fn client_metrics_entries(state: &BrokerState, name: &str) -> Result<Vec<Entry>, ApiError> {
    if name.is_empty() {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            "Client metrics subscription name must not be empty",
        ));
    }
    let set = state.client_metrics.get(name);
    Ok(client_metrics::KEYS
        .iter()
        .map(|(key, kind, default)| {
            let (value, source, synonyms) = match set.get(*key) {
                Some(value) => {
                    let source = client_metrics::SOURCE_CLIENT_METRICS;
                    let synonym = Synonym {
                        name: key.to_string(),
                        value: value.clone(),
                        source,
                    };
                    (value.clone(), source, vec![synonym])
                }
                None => (default.to_string(), source::DEFAULT_CONFIG, Vec::new()),
            };
            Entry {
                name: key.to_string(),
                value: Some(value),
                source,
                kind: *kind,
                read_only: false,
                sensitive: false,
                synonyms,
            }
        })
        .collect())
}

/// Kafka 4.1's `createGroupConfigEntry`: every group key, its one synonym the value
/// itself, GROUP_CONFIG where the group sets it and DEFAULT_CONFIG (the broker's value)
/// where not.
fn group_entries(state: &BrokerState, name: &str) -> Result<Vec<Entry>, ApiError> {
    group_configs::check_name(name)?;
    let overrides = state.group_configs.get(name);
    let live = state.dynamic.live();
    Ok(group_configs::effective(&overrides, &live.settings)
        .into_iter()
        .map(|(key, (value, set))| {
            let source = if set {
                group_configs::SOURCE_GROUP_CONFIG
            } else {
                source::DEFAULT_CONFIG
            };
            Entry {
                name: key.to_string(),
                value: Some(value.clone()),
                source,
                kind: group_configs::key(key).map_or(Type::String, |k| k.ty),
                read_only: false,
                sensitive: false,
                synonyms: vec![Synonym {
                    name: key.to_string(),
                    value,
                    source,
                }],
            }
        })
        .collect())
}

fn topic_entries(state: &BrokerState, name: &str) -> Result<Vec<Entry>, ApiError> {
    validate_topic_name(name)?;
    // Kafka names no topic in this answer: its message is empty.
    let topic = state
        .topic(name)
        .ok_or_else(|| ApiError::new(codes::UNKNOWN_TOPIC_OR_PARTITION, String::new()))?;
    let overrides = topic.configs.read().expect("lock").clone();
    Ok(topic_configs::effective(&state.dynamic.live(), &overrides)
        .into_iter()
        .map(|e| Entry {
            name: e.key.name.to_string(),
            value: Some(e.value),
            source: e.source,
            kind: e.key.ty,
            read_only: false,
            sensitive: false,
            synonyms: e.synonyms,
        })
        .collect())
}

fn broker_entries(state: &BrokerState, name: &str) -> Result<Vec<Entry>, ApiError> {
    let live = state.dynamic.live();
    let layers = &live.layers;
    if dynamic_apply::entity(state, name)? == dynamic_apply::Entity::Default {
        // Kafka: the cluster-wide entity shows only its own dynamic values.
        return Ok(layers
            .default
            .iter()
            .map(|(key, value)| {
                let source = source::DYNAMIC_DEFAULT_BROKER_CONFIG;
                dynamic_entry(key, value, source, Vec::new())
            })
            .collect());
    }
    let c = &state.config;
    let static_raw = &state.dynamic.static_raw;
    // Every schema key but Kafka's internal ones: dynamic, else as given in
    // server.properties, else its default.
    let mut entries: BTreeMap<String, Entry> = schema::BROKER_KEYS
        .iter()
        .filter(|key| !schema::is_internal(key.name))
        .map(|key| {
            let mut synonyms = layer_synonyms(layers, static_raw, key.name);
            let (value, source) = match synonyms.first() {
                Some(first) => (Some(first.value.clone()), first.source),
                None => (live.settings.get(key.name), source::DEFAULT_CONFIG),
            };
            if let Some(default) = schema::default_value(key) {
                synonyms.push(Synonym {
                    name: key.name.to_string(),
                    value: default,
                    source: source::DEFAULT_CONFIG,
                });
            }
            let entry = Entry {
                name: key.name.to_string(),
                value,
                source,
                kind: key.ty,
                read_only: key.read_only(),
                sensitive: key.sensitive(),
                synonyms,
            };
            (key.name.to_string(), entry)
        })
        .collect();
    // Where the broker runs with something other than the key's default text: the node id
    // taken from broker.id, the addresses actually bound and advertised, the data dirs.
    let join = |items: Vec<String>| items.join(",");
    let mut running = vec![
        ("node.id", c.node_id.to_string()),
        (
            "listeners",
            join(
                c.listeners
                    .iter()
                    .map(|l| format!("{}://{}", l.name, l.bind))
                    .collect(),
            ),
        ),
        (
            "log.dirs",
            join(c.log_dirs.iter().map(|d| d.display().to_string()).collect()),
        ),
    ];
    if let Some(advertised) = state.advertised.get() {
        let value = advertised
            .iter()
            .map(|(n, h, p)| format!("{n}://{h}:{p}"))
            .collect();
        running.push(("advertised.listeners", join(value)));
    }
    for (key, value) in running {
        if let Some(e) = entries.get_mut(key) {
            if e.source == source::DEFAULT_CONFIG {
                e.value = Some(value);
            }
        }
    }
    // The broker key behind each topic key, where server.properties sets it, with the
    // less specific synonyms beneath it (e.g. log.retention.hours). As Kafka's
    // `ConfigHelper` does, a key describes its own value only: log.retention.ms left unset
    // is null with no synonyms, whatever log.retention.hours makes of retention.ms.
    for e in topic_configs::effective(&live, &BTreeMap::new()) {
        if let Some(primary) = schema::broker_synonyms(e.key.name).first() {
            if let Some(entry) = entries.get_mut(primary.name) {
                if entry.source != source::STATIC_BROKER_CONFIG {
                    continue; // dynamic: its own synonyms stand; unset: its own default
                }
                entry.value = Some(e.value);
                entry.source = e.source;
                entry.synonyms = e.synonyms;
            }
        }
    }
    // Keys the schema does not know (listener-prefixed security settings among them), as
    // given: dynamic first, then server.properties.
    let unknown = layers
        .broker
        .keys()
        .chain(layers.default.keys())
        .chain(static_raw.keys())
        .filter(|name| schema::broker_key(name).is_none());
    for name in unknown {
        if entries.contains_key(name) {
            continue;
        }
        let synonyms = layer_synonyms(layers, static_raw, name);
        let first = synonyms.first().expect("the key is in some layer").clone();
        entries.insert(
            name.clone(),
            dynamic_entry(name, &first.value, first.source, synonyms),
        );
    }
    Ok(entries
        .into_values()
        .map(|mut e| {
            if let (true, Some(value)) = (e.synonyms.is_empty(), &e.value) {
                e.synonyms = vec![Synonym {
                    name: e.name.clone(),
                    value: value.clone(),
                    source: e.source,
                }];
            }
            e
        })
        .collect())
}

/// The values `name` has in the dynamic layers and server.properties, most specific first.
fn layer_synonyms(
    layers: &layers::DynamicLayers,
    static_raw: &BTreeMap<String, String>,
    name: &str,
) -> Vec<Synonym> {
    let mut out: Vec<Synonym> = layers
        .sources(name)
        .into_iter()
        .map(|(value, source)| Synonym {
            name: name.to_string(),
            value,
            source,
        })
        .collect();
    if let Some(value) = static_raw.get(name) {
        out.push(Synonym {
            name: name.to_string(),
            value: value.clone(),
            source: source::STATIC_BROKER_CONFIG,
        });
    }
    out
}

/// An entry for a key named in a dynamic layer or server.properties.
fn dynamic_entry(name: &str, value: &str, source: i8, synonyms: Vec<Synonym>) -> Entry {
    let base = layers::base_key(name);
    Entry {
        name: name.to_string(),
        value: Some(value.to_string()),
        source,
        kind: base.map_or(Type::String, |(k, _)| k.ty),
        // Kafka 4.1.1 looks a listener-prefixed name up among its dynamic keys, finds none
        // and describes it read-only, though it changes it; so does kafkalite.
        read_only: base.is_none_or(|(k, prefixed)| prefixed || k.read_only()),
        sensitive: dynamic::is_sensitive(name),
        synonyms,
    }
}

fn to_result(e: Entry, synonyms: bool, version: i16) -> DescribeConfigsResourceResult {
    let shown = |v: Option<String>| v.filter(|_| !e.sensitive).map(StrBytes::from_string);
    let mut out = DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_string(e.name.clone()))
        .with_value(shown(e.value.clone()))
        .with_read_only(e.read_only)
        .with_config_source(e.source)
        .with_is_sensitive(e.sensitive)
        .with_documentation(None);
    if version >= 3 {
        out = out.with_config_type(e.kind.describe_code());
    }
    if synonyms {
        let list = e
            .synonyms
            .iter()
            .map(|s| {
                DescribeConfigsSynonym::default()
                    .with_name(StrBytes::from_string(s.name.clone()))
                    .with_value(shown(Some(s.value.clone())))
                    .with_source(s.source)
            })
            .collect();
        out = out.with_synonyms(list);
    }
    out
}
