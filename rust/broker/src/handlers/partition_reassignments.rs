//! AlterPartitionReassignments (v0-v1) and ListPartitionReassignments (v0). The controller
//! side keeps reassignments in ZooKeeper as Kafka did (`/admin/reassign_partitions`, then
//! the adding/removing replicas of the topic znode) and answers through
//! `AdminOp::Controller` with JSON. A single node has no other broker to move to.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, RequestHeader,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::cluster::AdminOp;
use crate::errors::{codes, ApiError};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

#[derive(Deserialize)]
struct AlterOutcome {
    topic: String,
    partition: i32,
    error_code: i16,
    message: Option<String>,
}

#[derive(Deserialize)]
struct Ongoing {
    topic: String,
    partition: i32,
    replicas: Vec<i32>,
    adding: Vec<i32>,
    removing: Vec<i32>,
}

fn ask<T: DeserializeOwned>(
    state: &BrokerState,
    op: &str,
    args: serde_json::Value,
    wait_ms: u64,
) -> Result<T, ApiError> {
    if state.cluster.is_none() {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            "partition reassignment needs a cluster (zookeeper.connect is not set)",
        ));
    }
    let answer = state.ask_controller_within(
        AdminOp::Controller {
            op: op.into(),
            args: args.to_string(),
        },
        wait_ms,
    )?;
    serde_json::from_str(&answer).map_err(|e| {
        ApiError::new(
            codes::UNKNOWN_SERVER_ERROR,
            format!("the controller's answer is not understood: {e}"),
        )
    })
}

fn name(topic: String) -> TopicName {
    TopicName(StrBytes::from_string(topic))
}

pub async fn alter(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = AlterPartitionReassignmentsRequest::decode(&mut body, version)?;
    // v0 has no such field: a replication factor change was always allowed.
    let allow_rf_change = version == 0 || request.allow_replication_factor_change;
    let wanted: Vec<serde_json::Value> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                serde_json::json!({
                    "topic": t.name.0.as_str(),
                    "partition": p.partition_index,
                    "replicas": p.replicas.as_ref().map(|r| r.iter().map(|b| b.0).collect::<Vec<_>>()),
                })
            })
        })
        .collect();
    let args = serde_json::json!({
        "partitions": wanted,
        "allow_replication_factor_change": allow_rf_change,
        "timeout_ms": request.timeout_ms,
    });
    let mut response = AlterPartitionReassignmentsResponse::default()
        .with_allow_replication_factor_change(allow_rf_change);
    let wait_ms = crate::state::admin_wait_for(request.timeout_ms);
    let outcomes = if state.cluster.is_none() {
        Ok(alter_single_node(state, &request))
    } else {
        ask::<Vec<AlterOutcome>>(state, "alter_reassignments", args, wait_ms)
    };
    match outcomes {
        Ok(outcomes) => {
            let mut topics: Vec<ReassignableTopicResponse> = Vec::new();
            for o in outcomes {
                let result = ReassignablePartitionResponse::default()
                    .with_partition_index(o.partition)
                    .with_error_code(o.error_code)
                    .with_error_message(o.message.map(StrBytes::from_string));
                match topics.iter_mut().find(|t| t.name.0.as_str() == o.topic) {
                    Some(t) => t.partitions.push(result),
                    None => topics.push(
                        ReassignableTopicResponse::default()
                            .with_name(name(o.topic))
                            .with_partitions(vec![result]),
                    ),
                }
            }
            // Kafka sends a null message with no error (the codec's default is ""), but ""
            // when the request named no partition at all (Kafka 4.1.1, checked by the
            // conformance runner).
            let message = wanted.is_empty().then(|| StrBytes::from_static_str(""));
            response = response.with_error_message(message).with_responses(topics);
        }
        Err(e) => {
            response = response
                .with_error_code(e.code)
                .with_error_message(Some(StrBytes::from_string(e.message)));
        }
    }
    encode(&response, version).map(Some)
}

pub async fn list(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = ListPartitionReassignmentsRequest::decode(&mut body, version)?;
    let named: Option<Vec<(String, Vec<i32>)>> = request.topics.as_ref().map(|ts| {
        ts.iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
            .collect()
    });
    let args = serde_json::json!({ "partitions": named });
    let mut response = ListPartitionReassignmentsResponse::default();
    // A single node has nowhere to move a replica: nothing is ever being reassigned (Kafka's
    // 4.x `kafka-topics --describe` lists reassignments on every describe).
    let wait_ms = crate::state::admin_wait_for(request.timeout_ms);
    let ongoing = if state.cluster.is_none() {
        Ok(Vec::new())
    } else {
        ask::<Vec<Ongoing>>(state, "list_reassignments", args, wait_ms)
    };
    match ongoing {
        Ok(ongoing) => {
            let ids = |v: Vec<i32>| v.into_iter().map(BrokerId).collect::<Vec<_>>();
            let mut topics: Vec<OngoingTopicReassignment> = Vec::new();
            for o in ongoing {
                let p = OngoingPartitionReassignment::default()
                    .with_partition_index(o.partition)
                    .with_replicas(ids(o.replicas))
                    .with_adding_replicas(ids(o.adding))
                    .with_removing_replicas(ids(o.removing));
                match topics.iter_mut().find(|t| t.name.0.as_str() == o.topic) {
                    Some(t) => t.partitions.push(p),
                    None => topics.push(
                        OngoingTopicReassignment::default()
                            .with_name(name(o.topic))
                            .with_partitions(vec![p]),
                    ),
                }
            }
            response = response.with_error_message(None).with_topics(topics);
        }
        Err(e) => {
            response = response
                .with_error_code(e.code)
                .with_error_message(Some(StrBytes::from_string(e.message)));
        }
    }
    encode(&response, version).map(Some)
}

/// A single node (no cluster): the only assignment a partition can have is this node, so
/// asking for it succeeds with nothing to do and anything else is refused, with Kafka's
/// codes and messages for each case.
fn alter_single_node(
    state: &BrokerState,
    request: &AlterPartitionReassignmentsRequest,
) -> Vec<AlterOutcome> {
    let me = state.config.node_id;
    let mut out = Vec::new();
    for t in &request.topics {
        let name = t.name.0.to_string();
        let topic = state.topic(&name);
        for p in &t.partitions {
            let partition = p.partition_index;
            let refused = |code: i16, message: String| (code, Some(message));
            let (error_code, message) = match (&topic, &p.replicas) {
                (None, _) => refused(
                    codes::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("Unable to find a topic named {name}."),
                ),
                (Some(t), _) if t.partition(partition).is_none() => refused(
                    codes::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("Unable to find partition {name}:{partition}."),
                ),
                (Some(_), None) => (codes::NO_REASSIGNMENT_IN_PROGRESS, None),
                (Some(_), Some(replicas)) => {
                    let ids: Vec<i32> = replicas.iter().map(|b| b.0).collect();
                    let twice = ids
                        .iter()
                        .enumerate()
                        .find(|(i, id)| ids[..*i].contains(id));
                    if ids.is_empty() {
                        refused(
                            codes::INVALID_REPLICA_ASSIGNMENT,
                            "The manual partition assignment includes an empty replica list."
                                .into(),
                        )
                    } else if let Some((_, id)) = twice {
                        refused(
                            codes::INVALID_REPLICA_ASSIGNMENT,
                            format!(
                                "The manual partition assignment includes the broker {id} more \
                                 than once."
                            ),
                        )
                    } else if let Some(id) = ids.iter().find(|&&id| id != me) {
                        refused(
                            codes::INVALID_REPLICA_ASSIGNMENT,
                            format!(
                                "The manual partition assignment includes broker {id}, but no \
                                 such broker is registered."
                            ),
                        )
                    } else {
                        (codes::NONE, None)
                    }
                }
            };
            out.push(AlterOutcome {
                topic: name.clone(),
                partition,
                error_code,
                message,
            });
        }
    }
    out
}
