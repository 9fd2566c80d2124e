//! Metadata: brokers, leaders, epochs, replicas and ISR from the cluster view
//! (`cluster::metadata_view`; on a single node this node is the only broker, leader and ISR
//! of every partition, in epoch 0); unknown topics are created on request when
//! `auto.create.topics.enable` allows it. In cluster mode the view is the controller's, as
//! last pushed in (`cluster_sync`), and auto-creation asks the controller.
//!
//! Versions 0-13: v0 asks for every topic with an empty list (it has no null list); v13
//! adds a top-level error code (KIP-1102), always NONE from a broker that answers.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, MetadataRequest, MetadataResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::cluster::TopicView;
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::{validate_topic_name, BrokerState, Topic};

/// Kafka's "authorized operations not requested" marker.
pub const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

/// Without an authorizer Kafka reports every operation a resource type supports, as a bit
/// field of ACL operation codes.
const fn bits(ops: &[u8]) -> i32 {
    let mut out = 0;
    let mut i = 0;
    while i < ops.len() {
        out |= 1 << ops[i];
        i += 1;
    }
    out
}
/// READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
pub const TOPIC_OPERATIONS: i32 = bits(&[3, 4, 5, 6, 7, 8, 10, 11]);
/// CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
pub const CLUSTER_OPERATIONS: i32 = bits(&[5, 7, 8, 9, 10, 11, 12]);

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = MetadataRequest::decode(&mut body, version)?;
    let brokers = state
        .live_brokers_on(ctx.listener_name())
        .into_iter()
        .map(|b| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(b.node_id))
                .with_host(StrBytes::from_string(b.host))
                .with_port(b.port)
                .with_rack(b.rack.map(StrBytes::from_string))
        })
        .collect();
    // v1-3 always allow auto-creation; from v4 the client says.
    let allow_create =
        (version < 4 || request.allow_auto_topic_creation) && state.config.auto_create_topics;
    // v0 has no null list: an empty one asks for every topic.
    let all_topics = match &request.topics {
        None => true,
        Some(requested) => version == 0 && requested.is_empty(),
    };
    let mut topics: Vec<MetadataResponseTopic> =
        match request.topics.as_ref().filter(|_| !all_topics) {
            None => state
                .topic_names()
                .iter()
                .filter_map(|name| state.topic(name))
                // In cluster mode a broker's own offsets topic is not the cluster's.
                .filter(|t| state.cluster.is_none() || !t.is_internal())
                .filter(|t| authz::topic(state, ctx, authz::operation::DESCRIBE, &t.name))
                .map(|t| describe_topic(&t))
                .collect(),
            Some(requested) => {
                let mut seen = std::collections::HashSet::new();
                requested
                    .iter()
                    .filter(|t| seen.insert((t.name.clone(), t.topic_id)))
                    .map(
                        |t| match authz::metadata_denied(state, ctx, t, allow_create) {
                            Some(code) => {
                                named(t.name.as_deref().map(|n| n.as_str())).with_error_code(code)
                            }
                            None => lookup(state, t, allow_create),
                        },
                    )
                    .collect()
            }
        };
    let topic_ops = if request.include_topic_authorized_operations && version >= 8 {
        TOPIC_OPERATIONS
    } else {
        OPERATIONS_NOT_REQUESTED
    };
    for t in &mut topics {
        t.topic_authorized_operations = if t.error_code == codes::NONE {
            authz::operations_or(
                state,
                ctx,
                topic_ops,
                2,
                t.name.as_deref().map_or("", |n| n.as_str()),
            )
        } else {
            OPERATIONS_NOT_REQUESTED
        };
    }
    let mut response = MetadataResponse::default()
        .with_brokers(brokers)
        .with_cluster_id(Some(StrBytes::from_string(state.cluster_id())))
        .with_controller_id(BrokerId(state.controller_id()))
        .with_topics(topics);
    // The field exists only in v8-10; the encoder rejects it elsewhere.
    if request.include_cluster_authorized_operations && (8..=10).contains(&version) {
        response = response.with_cluster_authorized_operations(authz::operations_or(
            state,
            ctx,
            CLUSTER_OPERATIONS,
            4,
            "kafka-cluster",
        ));
    }
    encode(&response, version).map(Some)
}

fn named(name: Option<&str>) -> MetadataResponseTopic {
    MetadataResponseTopic::default()
        .with_name(name.map(|n| TopicName(StrBytes::from_string(n.to_string()))))
        .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED)
}

/// One requested topic: by id (v12 clients may send no name), else by name.
fn lookup(
    state: &BrokerState,
    requested: &MetadataRequestTopic,
    allow_create: bool,
) -> MetadataResponseTopic {
    // A topic id, when given, is what Kafka looks up: a name next to it is ignored (the
    // conformance fuzzer found kafkalite describing the named topic for an unknown id).
    let name = requested.name.as_ref().map(|n| n.0.to_string());
    let by_id = !requested.topic_id.is_nil();
    let Some(name) = name.filter(|_| !by_id) else {
        if requested.topic_id.is_nil() {
            return named(None).with_error_code(codes::INVALID_REQUEST);
        }
        return match state.topic_by_id(requested.topic_id) {
            Some(t) => describe_topic(&t),
            None => named(None)
                .with_topic_id(requested.topic_id)
                .with_error_code(codes::UNKNOWN_TOPIC_ID),
        };
    };
    if let Err(e) = validate_topic_name(&name) {
        return named(Some(&name)).with_error_code(e.code);
    }
    if let Some(t) = state.topic(&name) {
        return describe_topic(&t);
    }
    if !allow_create {
        return named(Some(&name)).with_error_code(codes::UNKNOWN_TOPIC_OR_PARTITION);
    }
    let created = state.create_topic(&name, state.config.num_partitions, BTreeMap::new(), false);
    // A concurrent request may have created it first: describe that one.
    match (created, state.topic(&name)) {
        (Ok(Some(t)), _) | (_, Some(t)) => describe_topic(&t),
        (Err(e), None) if e.code != codes::TOPIC_ALREADY_EXISTS => {
            named(Some(&name)).with_error_code(e.code)
        }
        _ => named(Some(&name)).with_error_code(codes::UNKNOWN_TOPIC_OR_PARTITION),
    }
}

fn describe_topic(topic: &Topic) -> MetadataResponseTopic {
    let view = TopicView::of(topic);
    let ids = |nodes: Vec<i32>| nodes.into_iter().map(BrokerId).collect::<Vec<_>>();
    let partitions = view
        .partitions
        .into_iter()
        .map(|p| {
            MetadataResponsePartition::default()
                .with_partition_index(p.index)
                // In cluster mode a partition whose replicas are all down has no leader.
                .with_error_code(if p.replica.leader < 0 {
                    codes::LEADER_NOT_AVAILABLE
                } else {
                    codes::NONE
                })
                .with_leader_id(BrokerId(p.replica.leader))
                .with_leader_epoch(p.replica.leader_epoch)
                .with_replica_nodes(ids(p.replica.replicas))
                .with_isr_nodes(ids(p.replica.isr))
        })
        .collect();
    named(Some(&view.name))
        .with_topic_id(view.id)
        .with_is_internal(view.is_internal)
        .with_partitions(partitions)
}
