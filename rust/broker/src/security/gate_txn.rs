//! The gate's refusals of the transactional producer's requests, checked in Kafka's
//! order: WRITE on the transactional id first (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
//! then READ on the group the offsets go to (GROUP_AUTHORIZATION_FAILED). AddPartitionsToTxn
//! from v4 is the brokers' batched form, which needs CLUSTER_ACTION instead. The topics a
//! request names are checked by its handler.

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, EndTxnRequest, EndTxnResponse, TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
};
use kafka_protocol::protocol::Decodable;

use super::acl::op;
use super::authz;
use super::refusal::Refusal;
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::encode;
use crate::state::BrokerState;

/// The first version of AddPartitionsToTxn that only brokers send.
const BROKER_BATCH_VERSION: i16 = 4;

/// AddPartitionsToTxn: a client's (v0-3) needs WRITE on its transactional id, every
/// partition then carrying the refusal; the brokers' batch (v4+) CLUSTER_ACTION, refused
/// as a whole.
pub fn add_partitions(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    body: &mut Bytes,
    version: i16,
) -> anyhow::Result<Refusal> {
    let r = AddPartitionsToTxnRequest::decode(body, version)?;
    if version >= BROKER_BATCH_VERSION {
        if authz::cluster(state, ctx, op::CLUSTER_ACTION) {
            return Ok(None);
        }
        let response = AddPartitionsToTxnResponse::default()
            .with_error_code(codes::CLUSTER_AUTHORIZATION_FAILED);
        return Ok(Some(encode(&response, version)));
    }
    if authz::transactional_id(state, ctx, op::WRITE, &r.v3_and_below_transactional_id) {
        return Ok(None);
    }
    let topics = r
        .v3_and_below_topics
        .iter()
        .map(|t| {
            AddPartitionsToTxnTopicResult::default()
                .with_name(t.name.clone())
                .with_results_by_partition(
                    t.partitions
                        .iter()
                        .map(|&p| {
                            AddPartitionsToTxnPartitionResult::default()
                                .with_partition_index(p)
                                .with_partition_error_code(
                                    codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                )
                        })
                        .collect(),
                )
        })
        .collect();
    let response = AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(topics);
    Ok(Some(encode(&response, version)))
}

/// AddOffsetsToTxn: WRITE on the transactional id, then READ on the group.
pub fn add_offsets(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    body: &mut Bytes,
    version: i16,
) -> anyhow::Result<Refusal> {
    let r = AddOffsetsToTxnRequest::decode(body, version)?;
    let code = if !authz::transactional_id(state, ctx, op::WRITE, &r.transactional_id) {
        codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    } else if !authz::group(state, ctx, op::READ, &r.group_id) {
        codes::GROUP_AUTHORIZATION_FAILED
    } else {
        return Ok(None);
    };
    let response = AddOffsetsToTxnResponse::default().with_error_code(code);
    Ok(Some(encode(&response, version)))
}

/// EndTxn: WRITE on the transactional id (the producer id and epoch stay -1).
pub fn end_txn(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    body: &mut Bytes,
    version: i16,
) -> anyhow::Result<Refusal> {
    let r = EndTxnRequest::decode(body, version)?;
    if authz::transactional_id(state, ctx, op::WRITE, &r.transactional_id) {
        return Ok(None);
    }
    let response =
        EndTxnResponse::default().with_error_code(codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    Ok(Some(encode(&response, version)))
}

/// TxnOffsetCommit: WRITE on the transactional id, then READ on the group; refused, every
/// partition says so.
pub fn txn_offset_commit(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    body: &mut Bytes,
    version: i16,
) -> anyhow::Result<Refusal> {
    let r = TxnOffsetCommitRequest::decode(body, version)?;
    let code = if !authz::transactional_id(state, ctx, op::WRITE, &r.transactional_id) {
        codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    } else if !authz::group(state, ctx, op::READ, &r.group_id) {
        codes::GROUP_AUTHORIZATION_FAILED
    } else {
        return Ok(None);
    };
    let topics = r
        .topics
        .iter()
        .map(|t| {
            TxnOffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_topic_id(t.topic_id)
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            TxnOffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(code)
                        })
                        .collect(),
                )
        })
        .collect();
    let response = TxnOffsetCommitResponse::default().with_topics(topics);
    Ok(Some(encode(&response, version)))
}
