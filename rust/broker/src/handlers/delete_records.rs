//! DeleteRecords (v0–2): move a partition's log start offset forward (`kafka-delete-records`).
//! Offset -1 means the high watermark. Per partition: UNKNOWN_TOPIC_OR_PARTITION,
//! NOT_LEADER_OR_FOLLOWER in cluster mode when this broker does not lead it,
//! OFFSET_OUT_OF_RANGE for an offset past the high watermark (or below -1); otherwise the
//! new low watermark. Whole segments below it are deleted by the next retention pass, and
//! fetches below it get OFFSET_OUT_OF_RANGE at once. Internal topics refuse with
//! INVALID_TOPIC_EXCEPTION: their records are coordinator state. DELETE on the topic is
//! checked first, as Kafka does: without it, TOPIC_AUTHORIZATION_FAILED whether the topic
//! exists or not.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse, RequestHeader};
use kafka_protocol::protocol::Decodable;

use crate::cluster::check_leader;
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::BrokerState;

/// "Up to the high watermark".
const HIGH_WATERMARK: i64 = -1;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DeleteRecordsRequest::decode(&mut body, version)?;
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let allowed = authz::topic(state, ctx, authz::operation::DELETE, &t.name);
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let (code, low) = if allowed {
                        delete(state, &t.name, p.partition_index, p.offset)
                    } else {
                        (codes::TOPIC_AUTHORIZATION_FAILED, -1)
                    };
                    DeleteRecordsPartitionResult::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(code)
                        .with_low_watermark(low)
                })
                .collect();
            DeleteRecordsTopicResult::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    encode(
        &DeleteRecordsResponse::default().with_topics(topics),
        version,
    )
    .map(Some)
}

fn delete(state: &BrokerState, topic: &str, index: i32, offset: i64) -> (i16, i64) {
    let Some(t) = state.topic(topic) else {
        return (codes::UNKNOWN_TOPIC_OR_PARTITION, -1);
    };
    if t.is_internal() {
        return (codes::INVALID_TOPIC_EXCEPTION, -1);
    }
    let partition = match t.hosted_or_code(index, state.config.node_id, -1) {
        Ok(partition) => partition,
        Err(code) => return (code, -1),
    };
    if state.cluster.is_some() {
        let code = check_leader(&partition.replica_state(), state.config.node_id, -1);
        if code != codes::NONE {
            return (code, -1);
        }
    }
    let mut log = partition.log.lock().expect("lock");
    let high_watermark = partition.high_watermark();
    let target = if offset == HIGH_WATERMARK {
        high_watermark
    } else {
        offset
    };
    if target < 0 || target > high_watermark {
        return (codes::OFFSET_OUT_OF_RANGE, -1);
    }
    match log.advance_log_start(target) {
        Ok(()) => (codes::NONE, log.log_start_offset()),
        Err(e) => (e.kafka_code(), -1),
    }
}
