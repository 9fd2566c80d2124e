//! Metadata: this node as the only broker, leader and ISR of every partition; unknown topics
//! are created on request when `auto.create.topics.enable` allows it.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, MetadataRequest, MetadataResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::response::{encode, ResponseBody};
use crate::state::{codes, validate_topic_name, BrokerState, Topic};

/// Kafka's "authorized operations not requested" marker.
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

pub async fn handle(
    state: &Arc<BrokerState>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = MetadataRequest::decode(&mut body, version)?;
    let node = BrokerId(state.config.node_id);
    let brokers = state
        .advertised_endpoint()
        .map(|(host, port)| {
            vec![MetadataResponseBroker::default()
                .with_node_id(node)
                .with_host(StrBytes::from_string(host))
                .with_port(port)]
        })
        .unwrap_or_default();
    // v1-3 always allow auto-creation; from v4 the client says.
    let allow_create =
        (version < 4 || request.allow_auto_topic_creation) && state.config.auto_create_topics;
    let names: Vec<String> = match &request.topics {
        None => state.topic_names(),
        Some(topics) => topics
            .iter()
            .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
            .collect(),
    };
    let topics = names
        .into_iter()
        .map(|name| describe(state, &name, allow_create, version))
        .collect();
    let response = MetadataResponse::default()
        .with_brokers(brokers)
        .with_cluster_id(Some(StrBytes::from_string(state.cluster_id.clone())))
        .with_controller_id(node)
        .with_topics(topics)
        .with_cluster_authorized_operations(OPERATIONS_NOT_REQUESTED);
    encode(&response, version).map(Some)
}

fn describe(
    state: &BrokerState,
    name: &str,
    allow_create: bool,
    version: i16,
) -> MetadataResponseTopic {
    let base = MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))
        .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED);
    if let Err(e) = validate_topic_name(name) {
        return base.with_error_code(e.code);
    }
    let topic = match state.topic(name) {
        Some(t) => t,
        None if allow_create => {
            match state.create_topic(name, state.config.num_partitions, BTreeMap::new(), false) {
                Ok(Some(t)) => t,
                // Created concurrently by another request: describe that one.
                Ok(None) | Err(_) => match state.topic(name) {
                    Some(t) => t,
                    None => return base.with_error_code(codes::UNKNOWN_TOPIC_OR_PARTITION),
                },
            }
        }
        None => return base.with_error_code(codes::UNKNOWN_TOPIC_OR_PARTITION),
    };
    partitions_of(state, &topic, base, version)
}

fn partitions_of(
    state: &BrokerState,
    topic: &Topic,
    base: MetadataResponseTopic,
    version: i16,
) -> MetadataResponseTopic {
    let node = BrokerId(state.config.node_id);
    let partitions = (0..topic.partition_count())
        .map(|index| {
            MetadataResponsePartition::default()
                .with_partition_index(index)
                .with_leader_id(node)
                .with_leader_epoch(if version >= 7 { 0 } else { -1 })
                .with_replica_nodes(vec![node])
                .with_isr_nodes(vec![node])
        })
        .collect();
    base.with_topic_id(topic.id)
        .with_is_internal(topic.name.starts_with("__"))
        .with_partitions(partitions)
}
