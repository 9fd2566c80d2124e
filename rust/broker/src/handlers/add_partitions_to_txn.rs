//! AddPartitionsToTxn (v0–5): v0–3 is the client's form (one transaction), v4+ the
//! brokers' batched form (many transactions, `verify_only` to check that a partition is
//! already in one). Per partition: UNKNOWN_TOPIC_OR_PARTITION for one this cluster lacks
//! (the others then OPERATION_NOT_ATTEMPTED, as Kafka answers), otherwise the
//! coordinator's verdict for the whole transaction. PRODUCER_FENCED is
//! INVALID_PRODUCER_EPOCH before v2, as Kafka maps it for older clients.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, RequestHeader,
};
use kafka_protocol::protocol::Decodable;

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = AddPartitionsToTxnRequest::decode(&mut body, version)?;
    let mut response = AddPartitionsToTxnResponse::default();
    if version <= 3 {
        response.results_by_topic_v3_and_below = add(
            state,
            &request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id.0,
            request.v3_and_below_producer_epoch,
            &request.v3_and_below_topics,
            false,
            version,
        );
    } else {
        response.results_by_transaction = request
            .transactions
            .iter()
            .map(|t| {
                AddPartitionsToTxnResult::default()
                    .with_transactional_id(t.transactional_id.clone())
                    .with_topic_results(add(
                        state,
                        &t.transactional_id,
                        t.producer_id.0,
                        t.producer_epoch,
                        &t.topics,
                        t.verify_only,
                        version,
                    ))
            })
            .collect();
    }
    encode(&response, version).map(Some)
}

fn add(
    state: &BrokerState,
    id: &str,
    producer_id: i64,
    epoch: i16,
    topics: &[AddPartitionsToTxnTopic],
    verify_only: bool,
    version: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    // A partition of the cluster, hosted here or not.
    let exists = |name: &str, p: i32| {
        state
            .topic(name)
            .is_some_and(|t| (0..t.partition_count()).contains(&p))
    };
    let unknown = topics
        .iter()
        .any(|t| t.partitions.iter().any(|p| !exists(&t.name, *p)));
    let verdict = if unknown {
        codes::OPERATION_NOT_ATTEMPTED
    } else {
        let partitions: Vec<(String, i32)> = topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| (t.name.to_string(), *p)))
            .collect();
        match state
            .transactions
            .add_partitions(id, producer_id, epoch, &partitions, verify_only)
        {
            Ok(()) => codes::NONE,
            Err(codes::PRODUCER_FENCED) if version < 2 => codes::INVALID_PRODUCER_EPOCH,
            Err(code) => code,
        }
    };
    topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let code = if unknown && !exists(&t.name, *p) {
                        codes::UNKNOWN_TOPIC_OR_PARTITION
                    } else {
                        verdict
                    };
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(*p)
                        .with_partition_error_code(code)
                })
                .collect();
            AddPartitionsToTxnTopicResult::default()
                .with_name(t.name.clone())
                .with_results_by_partition(partitions)
        })
        .collect()
}
