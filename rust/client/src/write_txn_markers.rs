//! WriteTxnMarkers: a transaction coordinator asks a partition leader to write COMMIT or
//! ABORT markers of one producer's transaction into the partitions it leads (the broker
//! to broker request of Kafka's `TransactionMarkerChannelManager`).

use std::time::Duration;

use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{ApiKey, ProducerId, TopicName, WriteTxnMarkersRequest};
use kafka_protocol::protocol::StrBytes;

use crate::address::Address;
use crate::client::Client;
use crate::cluster::TopicPartition;
use crate::error::Result;
use crate::versions;

/// One producer's marker for some partitions of one leader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnMarker {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// COMMIT (true) or ABORT.
    pub commit: bool,
    /// The coordinator's epoch (its `__transaction_state` partition's leader epoch), so a
    /// leader refuses markers of a coordinator that was replaced.
    pub coordinator_epoch: i32,
    pub partitions: Vec<TopicPartition>,
}

impl Client {
    /// Send `marker` to the broker at `leader`: the error code per partition (0: written).
    /// A failure to reach the broker fails the call.
    pub async fn write_txn_markers(
        &mut self,
        leader: &Address,
        marker: &TxnMarker,
    ) -> Result<Vec<(TopicPartition, i16)>> {
        let mut topics: Vec<WritableTxnMarkerTopic> = Vec::new();
        for (topic, partition) in &marker.partitions {
            match topics.iter_mut().find(|t| t.name.as_str() == topic) {
                Some(t) => t.partition_indexes.push(*partition),
                None => topics.push(
                    WritableTxnMarkerTopic::default()
                        .with_name(TopicName(StrBytes::from_string(topic.clone())))
                        .with_partition_indexes(vec![*partition]),
                ),
            }
        }
        let request =
            WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
                .with_producer_id(ProducerId(marker.producer_id))
                .with_producer_epoch(marker.producer_epoch)
                .with_transaction_result(marker.commit)
                .with_coordinator_epoch(marker.coordinator_epoch)
                .with_topics(topics)]);
        let (_, _, response) = self
            .call(
                leader,
                ApiKey::WriteTxnMarkers,
                versions::WRITE_TXN_MARKERS,
                Duration::ZERO,
                |_| request,
            )
            .await?;
        Ok(response
            .markers
            .iter()
            .flat_map(|m| {
                m.topics.iter().flat_map(|t| {
                    t.partitions
                        .iter()
                        .map(|p| ((t.name.to_string(), p.partition_index), p.error_code))
                })
            })
            .collect())
    }
}
