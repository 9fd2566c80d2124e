//! CreateTopics: partitions and configs validated; a single node only takes replication 1.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::handlers::topic_configs;
use crate::response::{encode, ResponseBody};
use crate::state::{ApiError, BrokerState};

const INVALID_REPLICATION_FACTOR: i16 = 38;
const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
const INVALID_REQUEST: i16 = 42;

pub async fn handle(
    state: &Arc<BrokerState>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = CreateTopicsRequest::decode(&mut body, version)?;
    let mut seen = std::collections::HashSet::new();
    let duplicated: std::collections::HashSet<String> = request
        .topics
        .iter()
        .map(|t| t.name.0.to_string())
        .filter(|n| !seen.insert(n.clone()))
        .collect();
    let mut results = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let name = topic.name.0.to_string();
        let mut result = CreatableTopicResult::default().with_name(topic.name.clone());
        let outcome = if duplicated.contains(&name) {
            Err(ApiError::new(
                INVALID_REQUEST,
                format!("topic '{name}' appears more than once in the request"),
            ))
        } else {
            create_one(state, topic, request.validate_only)
        };
        match outcome {
            Ok((partitions, configs)) => {
                if let Some(t) = state.topic(&name) {
                    result = result.with_topic_id(t.id);
                }
                result = result
                    .with_num_partitions(partitions)
                    .with_replication_factor(1);
                if version >= 5 {
                    result = result.with_configs(Some(describe(state, &configs)));
                }
            }
            Err(e) => {
                result = result
                    .with_error_code(e.code)
                    .with_error_message(Some(StrBytes::from_string(e.message)))
                    .with_num_partitions(-1)
                    .with_replication_factor(-1);
            }
        }
        results.push(result);
    }
    encode(
        &CreateTopicsResponse::default().with_topics(results),
        version,
    )
    .map(Some)
}

fn create_one(
    state: &BrokerState,
    topic: &kafka_protocol::messages::create_topics_request::CreatableTopic,
    validate_only: bool,
) -> Result<(i32, BTreeMap<String, String>), ApiError> {
    if !topic.assignments.is_empty() {
        return Err(ApiError::new(
            INVALID_REPLICA_ASSIGNMENT,
            "manual replica assignment is not supported on a single node",
        ));
    }
    let factor = topic.replication_factor;
    if factor != -1 && factor != 1 {
        return Err(ApiError::new(
            INVALID_REPLICATION_FACTOR,
            format!("replication factor {factor} is larger than the 1 available broker"),
        ));
    }
    let partitions = if topic.num_partitions == -1 {
        state.config.num_partitions
    } else {
        topic.num_partitions
    };
    let mut configs = BTreeMap::new();
    for c in &topic.configs {
        let Some(value) = &c.value else { continue };
        configs.insert(c.name.to_string(), value.to_string());
    }
    topic_configs::validate_all(&configs)?;
    state.create_topic(&topic.name.0, partitions, configs.clone(), validate_only)?;
    Ok((partitions, configs))
}

fn describe(
    state: &BrokerState,
    overrides: &BTreeMap<String, String>,
) -> Vec<CreatableTopicConfigs> {
    topic_configs::effective(&state.config, overrides)
        .into_iter()
        .map(|(key, value, source)| {
            CreatableTopicConfigs::default()
                .with_name(StrBytes::from_static_str(key.name))
                .with_value(Some(StrBytes::from_string(value)))
                .with_config_source(source)
        })
        .collect()
}
