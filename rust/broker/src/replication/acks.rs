//! acks=all: a produce answered once the high watermark passes its batch. Each waiter
//! sleeps on its partition's `hw_moved` (woken by every move of the high watermark and
//! every new replica state), never polls; the request's `timeout_ms` bounds the wait.

use std::sync::Arc;

use tokio::time::Instant;

use crate::cluster::Partition;
use crate::errors::codes;

/// One partition of a produce request waiting for replication.
pub struct Pending {
    pub partition: Arc<Partition>,
    /// The high watermark that covers the batch (its last offset + 1).
    pub required: i64,
    pub min_insync: usize,
}

/// Wait until `pending`'s batch is committed: NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND when
/// the ISR fell below `min.insync.replicas` meanwhile (as Kafka's DelayedProduce),
/// NOT_LEADER_OR_FOLLOWER when leadership moved, REQUEST_TIMED_OUT at `deadline`.
pub async fn wait_committed(node: i32, pending: &Pending, deadline: Instant) -> i16 {
    let p = &pending.partition;
    loop {
        let notified = p.hw_moved.notified();
        tokio::pin!(notified);
        // Registered before the check: a move between check and wait is not lost.
        notified.as_mut().enable();
        let replica = p.replica_state();
        if replica.leader != node {
            return codes::NOT_LEADER_OR_FOLLOWER;
        }
        if p.high_watermark() >= pending.required {
            return if replica.isr.len() < pending.min_insync {
                codes::NOT_ENOUGH_REPLICAS_AFTER_APPEND
            } else {
                codes::NONE
            };
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return codes::REQUEST_TIMED_OUT;
        }
    }
}
