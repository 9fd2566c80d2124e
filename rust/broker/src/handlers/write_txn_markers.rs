//! WriteTxnMarkers (v1): a transaction coordinator asks this broker, as the partitions'
//! leader, to write COMMIT/ABORT markers. Per partition: UNKNOWN_TOPIC_OR_PARTITION,
//! NOT_LEADER_OR_FOLLOWER in cluster mode when this broker does not lead it,
//! INVALID_PRODUCER_EPOCH for a marker older than the partition's producer epoch,
//! TRANSACTION_COORDINATOR_FENCED for one from a coordinator epoch older than the
//! producer's last marker here; markers
//! to a partition with no open transaction of the producer are written (Kafka writes
//! them too) and change nothing.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{RequestHeader, WriteTxnMarkersRequest, WriteTxnMarkersResponse};
use kafka_protocol::protocol::Decodable;
use kafkalite_core::storage::clock::now_ms;

use crate::cluster::check_leader;
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
    let request = WriteTxnMarkersRequest::decode(&mut body, version)?;
    let st = Arc::clone(state);
    let markers = tokio::task::spawn_blocking(move || {
        request
            .markers
            .iter()
            .map(|m| {
                let topics = m
                    .topics
                    .iter()
                    .map(|t| {
                        let partitions = t
                            .partition_indexes
                            .iter()
                            .map(|p| {
                                let code = write_one(&st, &t.name, *p, m);
                                WritableTxnMarkerPartitionResult::default()
                                    .with_partition_index(*p)
                                    .with_error_code(code)
                            })
                            .collect();
                        WritableTxnMarkerTopicResult::default()
                            .with_name(t.name.clone())
                            .with_partitions(partitions)
                    })
                    .collect();
                WritableTxnMarkerResult::default()
                    .with_producer_id(m.producer_id)
                    .with_topics(topics)
            })
            .collect::<Vec<_>>()
    })
    .await?;
    state.data_arrived.notify_waiters();
    encode(
        &WriteTxnMarkersResponse::default().with_markers(markers),
        version,
    )
    .map(Some)
}

fn write_one(
    state: &BrokerState,
    topic: &str,
    index: i32,
    m: &kafka_protocol::messages::write_txn_markers_request::WritableTxnMarker,
) -> i16 {
    let found = state
        .topic(topic)
        .map_or(Err(codes::UNKNOWN_TOPIC_OR_PARTITION), |t| {
            t.hosted_or_code(index, state.config.node_id, -1)
        });
    let partition = match found {
        Ok(partition) => partition,
        Err(code) => return code,
    };
    if state.cluster.is_some() {
        let code = check_leader(&partition.replica_state(), state.config.node_id, -1);
        if code != codes::NONE {
            return code;
        }
    }
    match partition.append_marker(
        m.producer_id.0,
        m.producer_epoch,
        m.transaction_result,
        m.coordinator_epoch,
        now_ms(),
    ) {
        Ok(_) => codes::NONE,
        Err(e) => e.kafka_code(),
    }
}
