//! The gate's refusals of the cluster operations: ElectLeaders and
//! AlterPartitionReassignments (ALTER on the cluster), ListPartitionReassignments
//! (DESCRIBE), WriteTxnMarkers (CLUSTER_ACTION, or ALTER). Kafka refuses them by throwing
//! ClusterAuthorizationException before the request is looked at, so each answer is the
//! request's `getErrorResponse`: CLUSTER_AUTHORIZATION_FAILED at the top and on every
//! partition the request names.

use bytes::Bytes;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ElectLeadersRequest,
    ElectLeadersResponse, ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
    WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use super::acl::op;
use super::authz;
use super::refusal::Refusal;
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::encode;
use crate::state::BrokerState;

const DENIED: i16 = codes::CLUSTER_AUTHORIZATION_FAILED;

/// Kafka's message names the request and the operation it lacked.
fn message(api: &str, operation: &str) -> StrBytes {
    StrBytes::from_string(format!("Request {api} needs {operation} permission."))
}

/// ElectLeaders: ALTER on the cluster. v0 has no top-level error code.
pub fn elect_leaders(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    body: &mut Bytes,
    version: i16,
) -> anyhow::Result<Refusal> {
    let r = ElectLeadersRequest::decode(body, version)?;
    if authz::cluster(state, ctx, op::ALTER) {
        return Ok(None);
    }
    let text = message("ElectLeaders", "ALTER");
    let results = r
        .topic_partitions
        .iter()
        .flatten()
        .map(|t| {
            ReplicaElectionResult::default()
                .with_topic(t.topic.clone())
                .with_partition_result(
                    t.partitions
                        .iter()
                        .map(|&p| {
                            PartitionResult::default()
                                .with_partition_id(p)
                                .with_error_code(DENIED)
                                .with_error_message(Some(text.clone()))
                        })
                        .collect(),
                )
        })
        .collect();
    let response = ElectLeadersResponse::default()
        .with_error_code(if version >= 1 { DENIED } else { 0 })
        .with_replica_election_results(results);
    Ok(Some(encode(&response, version)))
}

/// AlterPartitionReassignments: ALTER on the cluster.
pub fn alter_reassignments(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    body: &mut Bytes,
    version: i16,
) -> anyhow::Result<Refusal> {
    let r = AlterPartitionReassignmentsRequest::decode(body, version)?;
    if authz::cluster(state, ctx, op::ALTER) {
        return Ok(None);
    }
    let text = message("AlterPartitionReassignments", "ALTER");
    let topics = r
        .topics
        .iter()
        .map(|t| {
            ReassignableTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            ReassignablePartitionResponse::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(DENIED)
                                .with_error_message(Some(text.clone()))
                        })
                        .collect(),
                )
        })
        .collect();
    // allow_replication_factor_change stays at its default (true), as Kafka leaves it.
    let response = AlterPartitionReassignmentsResponse::default()
        .with_error_code(DENIED)
        .with_error_message(Some(text))
        .with_responses(topics);
    Ok(Some(encode(&response, version)))
}

/// ListPartitionReassignments: DESCRIBE on the cluster. The partitions asked for are
/// echoed with no replicas.
pub fn list_reassignments(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    body: &mut Bytes,
    version: i16,
) -> anyhow::Result<Refusal> {
    let r = ListPartitionReassignmentsRequest::decode(body, version)?;
    if authz::cluster(state, ctx, op::DESCRIBE) {
        return Ok(None);
    }
    let topics = r
        .topics
        .iter()
        .flatten()
        .map(|t| {
            OngoingTopicReassignment::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partition_indexes
                        .iter()
                        .map(|&p| OngoingPartitionReassignment::default().with_partition_index(p))
                        .collect(),
                )
        })
        .collect();
    let response = ListPartitionReassignmentsResponse::default()
        .with_error_code(DENIED)
        .with_error_message(Some(message("ListPartitionReassignments", "DESCRIBE")))
        .with_topics(topics);
    Ok(Some(encode(&response, version)))
}

/// WriteTxnMarkers, sent by transaction coordinators: CLUSTER_ACTION on the cluster, or
/// ALTER (Kafka accepts either, ALTER first).
pub fn write_txn_markers(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    body: &mut Bytes,
    version: i16,
) -> anyhow::Result<Refusal> {
    let r = WriteTxnMarkersRequest::decode(body, version)?;
    if authz::cluster(state, ctx, op::ALTER) || authz::cluster(state, ctx, op::CLUSTER_ACTION) {
        return Ok(None);
    }
    let markers = r
        .markers
        .iter()
        .map(|m| {
            WritableTxnMarkerResult::default()
                .with_producer_id(m.producer_id)
                .with_topics(
                    m.topics
                        .iter()
                        .map(|t| {
                            WritableTxnMarkerTopicResult::default()
                                .with_name(t.name.clone())
                                .with_partitions(
                                    t.partition_indexes
                                        .iter()
                                        .map(|&p| {
                                            WritableTxnMarkerPartitionResult::default()
                                                .with_partition_index(p)
                                                .with_error_code(DENIED)
                                        })
                                        .collect(),
                                )
                        })
                        .collect(),
                )
        })
        .collect();
    let response = WriteTxnMarkersResponse::default().with_markers(markers);
    Ok(Some(encode(&response, version)))
}
