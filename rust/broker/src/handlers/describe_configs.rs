//! DescribeConfigs for topics (every key, with defaults and where each value came from) and
//! for this broker.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::handlers::topic_configs::{self, source, Kind};
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;
const INVALID_REQUEST: i16 = 42;

struct Entry {
    name: String,
    value: String,
    source: i8,
    kind: Kind,
    /// The broker-level value beneath a topic override, for synonyms.
    below: Option<(String, String, i8)>,
}

pub async fn handle(
    state: &Arc<BrokerState>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DescribeConfigsRequest::decode(&mut body, version)?;
    let results = request
        .resources
        .iter()
        .map(|r| {
            let name = r.resource_name.to_string();
            let result = DescribeConfigsResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name.clone());
            let entries = match r.resource_type {
                RESOURCE_TOPIC => topic_entries(state, &name),
                RESOURCE_BROKER => broker_entries(state, &name),
                other => Err((
                    INVALID_REQUEST,
                    format!("unsupported resource type {other}"),
                )),
            };
            match entries {
                Err((code, message)) => result
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_string(message))),
                Ok(entries) => {
                    let wanted = r.configuration_keys.as_ref();
                    let configs = entries
                        .into_iter()
                        .filter(|e| {
                            wanted.is_none_or(|keys| keys.iter().any(|k| k.as_str() == e.name))
                        })
                        .map(|e| to_result(e, request.include_synonyms, version))
                        .collect();
                    result.with_configs(configs)
                }
            }
        })
        .collect();
    encode(
        &DescribeConfigsResponse::default().with_results(results),
        version,
    )
    .map(Some)
}

fn topic_entries(state: &BrokerState, name: &str) -> Result<Vec<Entry>, (i16, String)> {
    let topic = state.require_topic(name).map_err(|e| (e.code, e.message))?;
    let overrides = topic.configs.read().expect("lock").clone();
    Ok(topic_configs::effective(&state.config, &overrides)
        .into_iter()
        .map(|(key, value, src)| {
            let (broker_value, broker_source) = topic_configs::broker_default(&state.config, key);
            Entry {
                name: key.name.to_string(),
                value,
                source: src,
                kind: key.kind,
                below: Some((key.broker_key.to_string(), broker_value, broker_source)),
            }
        })
        .collect())
}

fn broker_entries(state: &BrokerState, name: &str) -> Result<Vec<Entry>, (i16, String)> {
    if !name.is_empty() && name != state.config.node_id.to_string() {
        return Err((INVALID_REQUEST, format!("unknown broker {name}")));
    }
    let mut entries: Vec<Entry> = state
        .config
        .raw
        .iter()
        .map(|(k, v)| Entry {
            name: k.clone(),
            value: v.clone(),
            source: source::STATIC_BROKER_CONFIG,
            kind: Kind::String,
            below: None,
        })
        .collect();
    let c = &state.config;
    let defaults = [
        ("node.id", c.node_id.to_string(), Kind::Int),
        ("num.partitions", c.num_partitions.to_string(), Kind::Int),
        (
            "default.replication.factor",
            c.default_replication_factor.to_string(),
            Kind::Int,
        ),
        (
            "auto.create.topics.enable",
            c.auto_create_topics.to_string(),
            Kind::Boolean,
        ),
        (
            "message.max.bytes",
            c.message_max_bytes.to_string(),
            Kind::Int,
        ),
        (
            "socket.request.max.bytes",
            c.socket_request_max_bytes.to_string(),
            Kind::Int,
        ),
        (
            "log.dirs",
            c.log_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(","),
            Kind::String,
        ),
        (
            "log.retention.ms",
            c.log_defaults.retention_ms.to_string(),
            Kind::Long,
        ),
        (
            "log.retention.bytes",
            c.log_defaults.retention_bytes.to_string(),
            Kind::Long,
        ),
        (
            "log.segment.bytes",
            c.log_defaults.segment_bytes.to_string(),
            Kind::Int,
        ),
    ];
    for (key, value, kind) in defaults {
        if !c.raw.contains_key(key) {
            entries.push(Entry {
                name: key.into(),
                value,
                source: source::DEFAULT_CONFIG,
                kind,
                below: None,
            });
        }
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

fn to_result(e: Entry, synonyms: bool, version: i16) -> DescribeConfigsResourceResult {
    let mut out = DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_string(e.name.clone()))
        .with_value(Some(StrBytes::from_string(e.value.clone())))
        .with_read_only(false)
        .with_config_source(e.source)
        .with_is_sensitive(false);
    if version >= 3 {
        out = out.with_config_type(e.kind as i8);
    }
    if synonyms {
        let mut list = vec![DescribeConfigsSynonym::default()
            .with_name(StrBytes::from_string(e.name))
            .with_value(Some(StrBytes::from_string(e.value)))
            .with_source(e.source)];
        if let Some((name, value, src)) = e.below {
            if e.source == source::DYNAMIC_TOPIC_CONFIG || src == source::STATIC_BROKER_CONFIG {
                list.push(
                    DescribeConfigsSynonym::default()
                        .with_name(StrBytes::from_string(name))
                        .with_value(Some(StrBytes::from_string(value)))
                        .with_source(src),
                );
            }
        }
        // The first synonym repeats the entry itself only when it is not a plain default.
        list.retain(|s| s.source != source::DEFAULT_CONFIG);
        out = out.with_synonyms(list);
    }
    out
}
