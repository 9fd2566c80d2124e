//! AddPartitionsToTxn (v0–5): v0–3 is the client's form (one transaction), v4+ the
//! brokers' batched form (many transactions, `verify_only` to check that a partition is
//! already in one). Per partition: TOPIC_AUTHORIZATION_FAILED for a client's topic it may
//! not WRITE (always for an internal topic, as Kafka: a client never adds one), then
//! UNKNOWN_TOPIC_OR_PARTITION for one this cluster lacks (the others then
//! OPERATION_NOT_ATTEMPTED, as Kafka answers), otherwise the coordinator's verdict for the
//! whole transaction, or, verifying, for each partition (TRANSACTION_ABORTABLE for one not
//! in it). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2, as Kafka maps
//! it for older clients. The transactional id (v0-3) and CLUSTER_ACTION (v4+) are checked
//! before, by `security::gate_txn`.

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
use crate::security::authz;
use crate::state::{BrokerState, INTERNAL_OFFSETS_TOPIC, INTERNAL_TXN_TOPIC};

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = AddPartitionsToTxnRequest::decode(&mut body, version)?;
    let mut response = AddPartitionsToTxnResponse::default();
    if version <= 3 {
        let may_write = |name: &str| {
            name != INTERNAL_OFFSETS_TOPIC
                && name != INTERNAL_TXN_TOPIC
                && authz::topic(state, ctx, authz::operation::WRITE, name)
        };
        let txn = Txn {
            id: &request.v3_and_below_transactional_id,
            producer_id: request.v3_and_below_producer_id.0,
            epoch: request.v3_and_below_producer_epoch,
            verify_only: false,
        };
        response.results_by_topic_v3_and_below = add(
            state,
            &txn,
            &request.v3_and_below_topics,
            &may_write,
            version,
        );
    } else {
        response.results_by_transaction = request
            .transactions
            .iter()
            .map(|t| {
                let txn = Txn {
                    id: &t.transactional_id,
                    producer_id: t.producer_id.0,
                    epoch: t.producer_epoch,
                    verify_only: t.verify_only,
                };
                // Only brokers send these (CLUSTER_ACTION): no topic is checked.
                AddPartitionsToTxnResult::default()
                    .with_transactional_id(t.transactional_id.clone())
                    .with_topic_results(add(state, &txn, &t.topics, &|_: &str| true, version))
            })
            .collect();
    }
    encode(&response, version).map(Some)
}

/// The transaction partitions are added to, and whether only to check they are in it.
struct Txn<'a> {
    id: &'a str,
    producer_id: i64,
    epoch: i16,
    verify_only: bool,
}

fn add(
    state: &BrokerState,
    txn: &Txn<'_>,
    topics: &[AddPartitionsToTxnTopic],
    may_write: &dyn Fn(&str) -> bool,
    version: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let denied: Vec<&str> = topics
        .iter()
        .map(|t| t.name.as_str())
        .filter(|name| !may_write(name))
        .collect();
    // A partition of the cluster, hosted here or not.
    let exists = |name: &str, p: i32| {
        state
            .topic(name)
            .is_some_and(|t| (0..t.partition_count()).contains(&p))
    };
    // Why a partition cannot join, if it cannot: then none of the others is tried.
    let refused = |name: &str, p: i32| {
        if denied.contains(&name) {
            Some(codes::TOPIC_AUTHORIZATION_FAILED)
        } else if !exists(name, p) {
            Some(codes::UNKNOWN_TOPIC_OR_PARTITION)
        } else {
            None
        }
    };
    let partitions: Vec<(String, i32)> = topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.name.to_string(), *p)))
        .collect();
    let refusals: Vec<Option<i16>> = partitions.iter().map(|(t, p)| refused(t, *p)).collect();
    let failed = refusals.iter().any(Option::is_some);
    // Each partition's code, in request order.
    let outcome: Vec<i16> = if failed {
        refusals
            .iter()
            .map(|r| r.unwrap_or(codes::OPERATION_NOT_ATTEMPTED))
            .collect()
    } else if txn.verify_only {
        state
            .transactions
            .verify_partitions(txn.id, txn.producer_id, txn.epoch, &partitions)
            .unwrap_or_else(|code| vec![code; partitions.len()])
    } else {
        let verdict =
            match state
                .transactions
                .add_partitions(txn.id, txn.producer_id, txn.epoch, &partitions)
            {
                Ok(()) => codes::NONE,
                Err(codes::PRODUCER_FENCED) if version < 2 => codes::INVALID_PRODUCER_EPOCH,
                Err(code) => code,
            };
        vec![verdict; partitions.len()]
    };
    let mut outcome = outcome.into_iter();
    topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(*p)
                        .with_partition_error_code(outcome.next().unwrap_or(codes::NONE))
                })
                .collect();
            AddPartitionsToTxnTopicResult::default()
                .with_name(t.name.clone())
                .with_results_by_partition(partitions)
        })
        .collect()
}
