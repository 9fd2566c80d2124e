//! Writing a transaction's COMMIT or ABORT markers into its partitions (what Kafka's
//! coordinator sends as WriteTxnMarkers to each partition leader). On a single node every
//! partition is local; a partition whose topic was deleted meanwhile is skipped.

use std::collections::BTreeSet;

use kafkalite_core::logging;
use kafkalite_core::storage::clock::now_ms;

use crate::state::BrokerState;

/// The coordinator epoch written into markers (a single node never changes coordinator).
pub const COORDINATOR_EPOCH: i32 = 0;
/// Attempts per partition before the failure is logged and the partition skipped.
const ATTEMPTS: usize = 3;

pub fn write_markers(
    broker: &BrokerState,
    producer_id: i64,
    epoch: i16,
    commit: bool,
    partitions: &BTreeSet<(String, i32)>,
) {
    let now = now_ms();
    for (topic, index) in partitions {
        let Some(partition) = broker.partition(topic, *index) else {
            continue;
        };
        let mut last_error = None;
        for _ in 0..ATTEMPTS {
            match partition.append_marker(producer_id, epoch, commit, COORDINATOR_EPOCH, now) {
                Ok(_) => {
                    last_error = None;
                    break;
                }
                Err(e) => last_error = Some(e),
            }
        }
        if let Some(e) = last_error {
            logging::error(
                "kafkalite.coordinator.transaction.TransactionMarkerChannelManager",
                &format!("marker for producer {producer_id} not written to {topic}-{index}: {e}"),
            );
        }
    }
    broker.data_arrived.notify_waiters();
}
