//! TxnOffsetCommit (v0–5), sent to the group's coordinator: offsets of a transaction,
//! written to `__consumer_offsets` as the producer's transactional batch and committed to
//! the group when the transaction's marker commits them (dropped when it aborts;
//! `groups::txn_offsets`). Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION, metadata
//! over `offset.metadata.max.bytes` OFFSET_METADATA_TOO_LARGE, the rest one verdict:
//! NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS from the group coordinator, and when this
//! broker also coordinates the transactional id, the transaction coordinator's
//! (INVALID_TXN_STATE when the group was not added with AddOffsetsToTxn; PRODUCER_FENCED,
//! INVALID_PRODUCER_EPOCH before v3 as Kafka maps it). Topics the principal may not READ
//! get TOPIC_AUTHORIZATION_FAILED before anything else (the transactional id and the group
//! are checked before, by `security::gate_txn`); when every partition is refused or
//! unknown the answer is those errors alone, as Kafka's, which then asks no coordinator.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{RequestHeader, TxnOffsetCommitRequest, TxnOffsetCommitResponse};
use kafka_protocol::protocol::Decodable;

use crate::errors::codes;
use crate::groups::offsets_topic::partition_for;
use crate::groups::Committed;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::{BrokerState, INTERNAL_OFFSETS_TOPIC};

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = TxnOffsetCommitRequest::decode(&mut body, version)?;
    let now = kafkalite_core::storage::clock::now_ms();
    let max_metadata = state.groups.config().offset_metadata_max_bytes;
    let group = request.group_id.to_string();
    let mut pending = Vec::new();
    let mut errors: Vec<Vec<Option<i16>>> = Vec::new();
    for topic in &request.topics {
        if !authz::topic(state, ctx, authz::operation::READ, &topic.name) {
            errors.push(vec![
                Some(codes::TOPIC_AUTHORIZATION_FAILED);
                topic.partitions.len()
            ]);
            continue;
        }
        let known = state.topic(&topic.name);
        errors.push(
            topic
                .partitions
                .iter()
                .map(|p| {
                    let metadata = p
                        .committed_metadata
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    match &known {
                        Some(t) if (0..t.partition_count()).contains(&p.partition_index) => {
                            if metadata.len() > max_metadata {
                                return Some(codes::OFFSET_METADATA_TOO_LARGE);
                            }
                            pending.push((
                                topic.name.to_string(),
                                p.partition_index,
                                Committed {
                                    offset: p.committed_offset,
                                    leader_epoch: p.committed_leader_epoch,
                                    metadata,
                                    commit_ms: now,
                                    expire_ms: None,
                                },
                            ));
                            None
                        }
                        _ => Some(codes::UNKNOWN_TOPIC_OR_PARTITION),
                    }
                })
                .collect(),
        );
    }
    let settled = |e: &Option<i16>| {
        matches!(
            e,
            Some(codes::TOPIC_AUTHORIZATION_FAILED | codes::UNKNOWN_TOPIC_OR_PARTITION)
        )
    };
    if errors.iter().flatten().all(settled) {
        return answer(&request, errors, codes::NONE, version);
    }
    // v5 (transaction version 2): the group's offsets partition joins the transaction
    // implicitly, as AddOffsetsToTxn did before (when this broker coordinates the id).
    let id = request.transactional_id.as_str();
    let (pid, epoch) = (request.producer_id.0, request.producer_epoch);
    let implicit = if version >= 5 && state.transactions.coordinates(id) {
        let partitions = state.groups.config().offsets_topic_partitions;
        state.transactions.add_offsets(
            id,
            pid,
            epoch,
            &group,
            (
                INTERNAL_OFFSETS_TOPIC.to_string(),
                partition_for(&group, partitions),
            ),
        )
    } else {
        Ok(())
    };
    let checked = implicit.and_then(|()| {
        state
            .transactions
            .verify_offsets(id, pid, epoch, &group)
            .unwrap_or(Ok(()))
    });
    let groups = std::sync::Arc::clone(&state.groups);
    let commit = checked.map(|()| {
        // Waits for the ISR in cluster mode: off the async workers.
        tokio::task::spawn_blocking(move || groups.txn_offset_commit(&group, pid, epoch, pending))
    });
    let verdict = match commit {
        Ok(task) => match task.await? {
            Ok(()) => codes::NONE,
            Err(code) => code,
        },
        Err(codes::PRODUCER_FENCED) if version < 3 => codes::INVALID_PRODUCER_EPOCH,
        Err(code) => code,
    };
    answer(&request, errors, verdict, version)
}

/// Each partition's own error, else the verdict on the whole commit.
fn answer(
    request: &TxnOffsetCommitRequest,
    errors: Vec<Vec<Option<i16>>>,
    verdict: i16,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let topics = request
        .topics
        .iter()
        .zip(errors)
        .map(|(t, errs)| {
            TxnOffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .zip(errs)
                        .map(|(p, e)| {
                            TxnOffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(e.unwrap_or(verdict))
                        })
                        .collect(),
                )
        })
        .collect();
    encode(
        &TxnOffsetCommitResponse::default().with_topics(topics),
        version,
    )
    .map(Some)
}
