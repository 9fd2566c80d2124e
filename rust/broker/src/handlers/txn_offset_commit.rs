//! TxnOffsetCommit (v0–6), sent to the group's coordinator: offsets of a transaction,
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
//! The committer (the consumer's generation or member epoch, member and instance id) is
//! checked by the group coordinator as Kafka checks a transactional commit
//! (`groups::txn_offsets::TxnCommitter`). v6 (KIP-1319) names topics by id (an id no
//! topic has is UNKNOWN_TOPIC_ID, before the topic ACL) and answers a member of a group
//! that does not exist GROUP_ID_NOT_FOUND and a stale member epoch STALE_MEMBER_EPOCH,
//! which older versions answer ILLEGAL_GENERATION.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{RequestHeader, TxnOffsetCommitRequest, TxnOffsetCommitResponse};
use kafka_protocol::protocol::Decodable;

use crate::errors::codes;
use crate::groups::offsets_topic::partition_for;
use crate::groups::txn_offsets::TxnCommitter;
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
        // v6: the topic by its id; an id no topic has fails its partitions first.
        let (name, known) = if version >= 6 {
            match state.topic_by_id(topic.topic_id) {
                Some(t) => (t.name.clone(), Some(t)),
                None => {
                    errors.push(vec![Some(codes::UNKNOWN_TOPIC_ID); topic.partitions.len()]);
                    continue;
                }
            }
        } else {
            (topic.name.to_string(), state.topic(&topic.name))
        };
        if !authz::topic(state, ctx, authz::operation::READ, &name) {
            errors.push(vec![
                Some(codes::TOPIC_AUTHORIZATION_FAILED);
                topic.partitions.len()
            ]);
            continue;
        }
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
                                name.clone(),
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
            Some(
                codes::TOPIC_AUTHORIZATION_FAILED
                    | codes::UNKNOWN_TOPIC_OR_PARTITION
                    | codes::UNKNOWN_TOPIC_ID
            )
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
    let committer = TxnCommitter {
        generation: request.generation_id,
        member_id: request.member_id.to_string(),
        instance: request.group_instance_id.as_ref().map(ToString::to_string),
        api_version: version,
    };
    let commit = checked.map(|()| {
        // Waits for the ISR in cluster mode: off the async workers.
        tokio::task::spawn_blocking(move || {
            groups.txn_offset_commit(&group, &committer, pid, epoch, pending)
        })
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
    // As Kafka's response builder: one answer per topic (by id from v6, where every
    // unknown id is the same nil one; by name before), the partitions refused before the
    // group coordinator is asked (unknown, unauthorized) first, then the coordinator's.
    let refused_early = |e: &Option<i16>| {
        matches!(
            e,
            Some(
                codes::UNKNOWN_TOPIC_ID
                    | codes::TOPIC_AUTHORIZATION_FAILED
                    | codes::UNKNOWN_TOPIC_OR_PARTITION
            )
        )
    };
    let mut topics: Vec<TxnOffsetCommitResponseTopic> = Vec::new();
    for early in [true, false] {
        for (t, errs) in request.topics.iter().zip(&errors) {
            let partitions: Vec<TxnOffsetCommitResponsePartition> = t
                .partitions
                .iter()
                .zip(errs)
                .filter(|(_, e)| refused_early(e) == early)
                .map(|(p, e)| {
                    TxnOffsetCommitResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(e.unwrap_or(verdict))
                })
                .collect();
            if partitions.is_empty() && !(early && t.partitions.is_empty()) {
                continue;
            }
            let same = |r: &&mut TxnOffsetCommitResponseTopic| {
                if version >= 6 {
                    r.topic_id == t.topic_id
                } else {
                    r.name == t.name
                }
            };
            match topics.iter_mut().find(same) {
                Some(r) => r.partitions.extend(partitions),
                None => topics.push(
                    TxnOffsetCommitResponseTopic::default()
                        .with_name(t.name.clone())
                        .with_topic_id(t.topic_id)
                        .with_partitions(partitions),
                ),
            }
        }
    }
    encode(
        &TxnOffsetCommitResponse::default().with_topics(topics),
        version,
    )
    .map(Some)
}
