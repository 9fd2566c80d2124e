//! TxnOffsetCommit (v0–5): offsets of a transaction, committed to the group when the
//! transaction commits and dropped when it aborts. Unknown partitions get
//! UNKNOWN_TOPIC_OR_PARTITION, metadata over `offset.metadata.max.bytes`
//! OFFSET_METADATA_TOO_LARGE, the rest the coordinator's verdict (INVALID_TXN_STATE when the
//! group was not added with AddOffsetsToTxn; PRODUCER_FENCED, INVALID_PRODUCER_EPOCH before
//! v3 as Kafka maps it).

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
use crate::state::{BrokerState, INTERNAL_OFFSETS_TOPIC};
use crate::transactions::state::PendingOffset;

pub async fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
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
                            pending.push(PendingOffset {
                                group: group.clone(),
                                topic: topic.name.to_string(),
                                partition: p.partition_index,
                                committed: Committed {
                                    offset: p.committed_offset,
                                    leader_epoch: p.committed_leader_epoch,
                                    metadata,
                                    commit_ms: now,
                                    expire_ms: None,
                                },
                            });
                            None
                        }
                        _ => Some(codes::UNKNOWN_TOPIC_OR_PARTITION),
                    }
                })
                .collect(),
        );
    }
    // v5 (transaction version 2): the group's offsets partition joins the transaction
    // implicitly, as AddOffsetsToTxn did before.
    let implicit = if version >= 5 {
        let partitions = state.groups.config().offsets_topic_partitions;
        state.transactions.add_offsets(
            &request.transactional_id,
            request.producer_id.0,
            request.producer_epoch,
            &group,
            (
                INTERNAL_OFFSETS_TOPIC.to_string(),
                partition_for(&group, partitions),
            ),
        )
    } else {
        Ok(())
    };
    let verdict = match implicit.and_then(|()| {
        state.transactions.txn_offset_commit(
            &request.transactional_id,
            request.producer_id.0,
            request.producer_epoch,
            &group,
            pending,
        )
    }) {
        Ok(()) => codes::NONE,
        Err(codes::PRODUCER_FENCED) if version < 3 => codes::INVALID_PRODUCER_EPOCH,
        Err(code) => code,
    };
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
