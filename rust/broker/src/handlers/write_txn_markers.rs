//! WriteTxnMarkers (v1-2): a transaction coordinator asks this broker, as the partitions'
//! leader, to write COMMIT/ABORT markers. Per partition: UNKNOWN_TOPIC_OR_PARTITION,
//! NOT_LEADER_OR_FOLLOWER in cluster mode when this broker does not lead it,
//! INVALID_PRODUCER_EPOCH for a marker older than the partition's producer epoch (v2 with
//! transaction version 2: not newer, but for a retry; `Partition::append_marker`),
//! TRANSACTION_COORDINATOR_FENCED for one from a coordinator epoch older than the
//! producer's last marker here; markers
//! to a partition with no open transaction of the producer are written (Kafka writes
//! them too) and change nothing. In cluster mode the answer waits until the ISR has the
//! marker (Kafka appends markers with acks=all). A marker in `__consumer_offsets` settles
//! the transaction's offsets held by the group coordinator.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{RequestHeader, WriteTxnMarkersRequest, WriteTxnMarkersResponse};
use kafka_protocol::protocol::Decodable;

use crate::cluster::check_leader;
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;
use crate::transactions::markers::{write_local, Marker};

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
    let node = state.cluster.as_ref().map(|_| state.config.node_id);
    if let Some(node) = node {
        let code = check_leader(&partition.replica_state(), node, -1);
        if code != codes::NONE {
            return code;
        }
    }
    let marker = Marker {
        producer_id: m.producer_id.0,
        epoch: m.producer_epoch,
        commit: m.transaction_result,
        coordinator_epoch: m.coordinator_epoch,
        transaction_version: m.transaction_version,
    };
    match write_local(state, &partition, &marker, node) {
        Ok(()) => codes::NONE,
        Err(code) => code,
    }
}
