//! The leader's side of replication: a follower's Fetch tells the leader the follower's
//! log end (its fetch offset); the leader moves the high watermark to the smallest log
//! end over the ISR and proposes to add a follower that has caught up. A periodic task
//! proposes to drop ISR members not caught up within `replica.lag.time.max.ms`.
//!
//! Proposals are decided here and committed by the broker's Python side, which writes the
//! partition state znode with a compare-and-set on its version (Kafka's ZooKeeper mode),
//! pushes a fresh snapshot and answers. Until the answer (or a snapshot that decides it),
//! the members a proposal adds count for the high watermark. A proposal not answered
//! within `RESEND_MS` is sent again.

use std::sync::Arc;
use std::time::Duration;

// Lag and resend times are monotonic: a wall-clock step must not hide a dead follower.
use kafkalite_core::storage::clock::monotonic_ms;

use crate::cluster::replica_progress::ReplicaProgress;
use crate::cluster::{AdminOp, Partition, ReplicaState};
use crate::errors::codes;
use crate::state::BrokerState;

/// How long a proposal may stay unanswered before it is sent again.
pub const RESEND_MS: i64 = 2_000;

/// A follower's Fetch reached this leader: record its progress, move the high watermark
/// and maybe propose it back into the ISR. True when the high watermark moved.
pub fn on_follower_fetch(
    state: &BrokerState,
    topic: &str,
    partition: &Arc<Partition>,
    replica_id: i32,
    fetch_offset: i64,
    leader_end: i64,
) -> bool {
    let now = monotonic_ms();
    partition.progress.lock().expect("lock").record_fetch(
        replica_id,
        fetch_offset,
        leader_end,
        now,
    );
    let moved = partition.advance_leader_high_watermark();
    maybe_expand_isr(state, topic, partition, replica_id, now);
    moved
}

fn maybe_expand_isr(
    state: &BrokerState,
    topic: &str,
    partition: &Arc<Partition>,
    replica: i32,
    now: i64,
) {
    let current = partition.replica_state();
    if current.isr.contains(&replica) || !current.replicas.contains(&replica) {
        return;
    }
    let hw = partition.high_watermark();
    let mut progress = partition.progress.lock().expect("lock");
    let Some(f) = progress.follower(replica) else {
        return;
    };
    // Kafka's rule: at or past the high watermark and past where this leader's epoch began.
    if f.log_end < hw || f.log_end < progress.epoch_start_offset {
        return;
    }
    if progress.proposal_pending(now, RESEND_MS) {
        return;
    }
    let isr: Vec<i32> = current
        .replicas
        .iter()
        .copied()
        .filter(|r| current.isr.contains(r) || *r == replica)
        .collect();
    propose(state, topic, partition, &mut progress, &current, isr, now);
}

/// Drop from the ISR of every partition this broker leads the members not caught up
/// within `lag_ms`.
pub fn shrink_lagging(state: &BrokerState, lag_ms: i64) {
    let node = state.config.node_id;
    let now = monotonic_ms();
    for topic in state.topics.all() {
        for index in 0..topic.partition_count() {
            let Some(partition) = topic.partition(index) else {
                continue;
            };
            let current = partition.replica_state();
            if current.leader != node {
                continue;
            }
            if current.isr.len() <= 1 {
                continue;
            }
            let mut progress = partition.progress.lock().expect("lock");
            let lagging = progress.lagging(node, &current.isr, lag_ms, now);
            if lagging.is_empty() || progress.proposal_pending(now, RESEND_MS) {
                continue;
            }
            let isr: Vec<i32> = current
                .isr
                .iter()
                .copied()
                .filter(|r| !lagging.contains(r))
                .collect();
            propose(
                state,
                &topic.name,
                &partition,
                &mut progress,
                &current,
                isr,
                now,
            );
        }
    }
}

/// Run `shrink_lagging` every half lag time until the runtime stops.
pub async fn shrink_loop(state: Arc<BrokerState>, lag_ms: i64) {
    let period = Duration::from_millis(u64::try_from(lag_ms / 2).unwrap_or(1).clamp(50, 5_000));
    loop {
        tokio::time::sleep(period).await;
        shrink_lagging(&state, lag_ms);
    }
}

/// Send `isr` to the controller side, recorded in `progress` (the partition's, held by
/// the caller so the answer cannot settle it before it is recorded).
fn propose(
    state: &BrokerState,
    topic: &str,
    partition: &Arc<Partition>,
    progress: &mut ReplicaProgress,
    current: &ReplicaState,
    isr: Vec<i32>,
    now: i64,
) {
    let Some(link) = &state.cluster else {
        return;
    };
    let op = AdminOp::AlterIsr {
        topic: topic.to_string(),
        partition: partition.index,
        leader: current.leader,
        leader_epoch: current.leader_epoch,
        isr: isr.clone(),
        from_isr: current.isr.clone(),
    };
    let answered = Arc::clone(partition);
    let id = link.admin.submit_then(op, move |id, code, _| {
        // An error leaves the outcome unknown (the write may have happened): the proposal
        // keeps counting until a later answer or a snapshot decides it.
        if code == codes::NONE {
            answered.progress.lock().expect("lock").answered(id);
            answered.advance_leader_high_watermark();
        }
    });
    progress.proposed(id, isr, now);
}

/// The topic's `min.insync.replicas`, else the broker's.
#[must_use]
pub fn min_insync_replicas(state: &BrokerState, topic: &crate::cluster::Topic) -> usize {
    let configured = topic
        .configs
        .read()
        .expect("lock")
        .get("min.insync.replicas")
        .and_then(|v| v.trim().parse::<i32>().ok());
    // The broker's value as it stands now (it may change dynamically).
    let n = configured.unwrap_or_else(|| state.dynamic.live().settings.int("min.insync.replicas"));
    usize::try_from(n).unwrap_or(1)
}
