//! ElectLeaders (v0-v2): preferred or unclean leader election, decided by the controller
//! side (`AdminOp::Controller`, op "elect_leaders"), which answers one result per
//! partition. v0 has no election type (always preferred) and no top-level error code, so
//! an error of the whole request is then given to every partition named.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{
    ElectLeadersRequest, ElectLeadersResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use serde::Deserialize;

use crate::cluster::AdminOp;
use crate::errors::{codes, ApiError};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

/// Kafka's ElectionType: 0 preferred, 1 unclean.
const PREFERRED: i8 = 0;
const UNCLEAN: i8 = 1;

/// One partition's outcome as the controller side answers it.
#[derive(Deserialize)]
struct Outcome {
    topic: String,
    partition: i32,
    error_code: i16,
    message: Option<String>,
}

pub async fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = ElectLeadersRequest::decode(&mut body, version)?;
    let election_type = if version == 0 {
        PREFERRED
    } else {
        request.election_type
    };
    let named: Option<Vec<(String, Vec<i32>)>> = request.topic_partitions.as_ref().map(|tps| {
        tps.iter()
            .map(|t| (t.topic.0.to_string(), t.partitions.clone()))
            .collect()
    });
    let outcome = elect(state, election_type, named.as_ref(), request.timeout_ms);
    let mut response = ElectLeadersResponse::default();
    let outcomes = match outcome {
        Ok(outcomes) => outcomes,
        Err(e) if version >= 1 => {
            return encode(&response.with_error_code(e.code), version).map(Some);
        }
        // v0: the request's error on every partition it named.
        Err(e) => named
            .iter()
            .flatten()
            .flat_map(|(topic, parts)| {
                parts.iter().map(|&partition| Outcome {
                    topic: topic.clone(),
                    partition,
                    error_code: e.code,
                    message: Some(e.message.clone()),
                })
            })
            .collect(),
    };
    let mut results: Vec<ReplicaElectionResult> = Vec::new();
    if state.cluster.is_none() && named.is_none() {
        // Every partition asked for on a single node: Kafka names every topic, each with
        // no partition results (nothing needed electing; not-needed is not reported then).
        results = state
            .topic_names()
            .into_iter()
            .map(|t| {
                ReplicaElectionResult::default().with_topic(TopicName(StrBytes::from_string(t)))
            })
            .collect();
    }
    for o in outcomes {
        let result = PartitionResult::default()
            .with_partition_id(o.partition)
            .with_error_code(o.error_code)
            .with_error_message(o.message.map(StrBytes::from_string));
        match results.iter_mut().find(|r| r.topic.0.as_str() == o.topic) {
            Some(r) => r.partition_result.push(result),
            None => results.push(
                ReplicaElectionResult::default()
                    .with_topic(TopicName(StrBytes::from_string(o.topic)))
                    .with_partition_result(vec![result]),
            ),
        }
    }
    response = response.with_replica_election_results(results);
    encode(&response, version).map(Some)
}

fn elect(
    state: &BrokerState,
    election_type: i8,
    named: Option<&Vec<(String, Vec<i32>)>>,
    timeout_ms: i32,
) -> Result<Vec<Outcome>, ApiError> {
    if election_type != PREFERRED && election_type != UNCLEAN {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            format!("unknown election type {election_type} (0 preferred, 1 unclean)"),
        ));
    }
    if state.cluster.is_none() {
        // A single node leads every partition it has: there is nothing to elect.
        let partitions = match named {
            Some(named) => named.clone(),
            None => Vec::new(),
        };
        return Ok(partitions
            .into_iter()
            .flat_map(|(topic, parts)| {
                let known = state.topic(&topic);
                parts.into_iter().map(move |partition| {
                    let exists = known
                        .as_ref()
                        .is_some_and(|t| t.partition(partition).is_some());
                    // Kafka's messages, word for word (clients show them).
                    let (error_code, message) = if exists {
                        (
                            codes::ELECTION_NOT_NEEDED,
                            "Leader election not needed for topic partition.".to_string(),
                        )
                    } else if known.is_some() {
                        (
                            codes::UNKNOWN_TOPIC_OR_PARTITION,
                            format!("No such partition as {topic}-{partition}"),
                        )
                    } else {
                        (
                            codes::UNKNOWN_TOPIC_OR_PARTITION,
                            format!("No such topic as {topic}"),
                        )
                    };
                    Outcome {
                        topic: topic.clone(),
                        partition,
                        error_code,
                        message: Some(message),
                    }
                })
            })
            .collect());
    }
    let args = serde_json::json!({
        "election_type": election_type,
        "partitions": named,
        "timeout_ms": timeout_ms,
    });
    let answer = state.ask_controller_within(
        AdminOp::Controller {
            op: "elect_leaders".into(),
            args: args.to_string(),
        },
        crate::state::admin_wait_for(timeout_ms),
    )?;
    serde_json::from_str(&answer).map_err(|e| {
        ApiError::new(
            codes::UNKNOWN_SERVER_ERROR,
            format!("the controller's answer is not understood: {e}"),
        )
    })
}
