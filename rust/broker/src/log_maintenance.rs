//! The broker's background log work, as Kafka's LogManager schedules it: retention every
//! `log.retention.check.interval.ms`, and a cleaner pass over compacted topics every
//! `log.cleaner.backoff.ms`.
//!
//! It runs on one plain thread rather than the tokio runtime: a cleaner pass reads and
//! writes whole segments, and the runtime's two workers must keep serving produce and fetch
//! meanwhile. The log's lock is held only for retention's deletions and the cleaner's
//! snapshot and swap (see `kafkalite_core::storage::cleaner`).

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kafkalite_core::logging;
use kafkalite_core::storage::clock::now_ms;
use kafkalite_core::storage::{compact_shared_with_transactions, CompactionStats};

use crate::cluster::Partition;
use crate::state::BrokerState;

/// One partition's outcome of a cleaner pass.
pub struct PartitionCompaction {
    pub topic: String,
    pub partition: i32,
    pub stats: CompactionStats,
}

/// The running maintenance thread; dropping it stops the thread and waits for it.
pub struct LogMaintenance {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl LogMaintenance {
    pub fn start(state: Arc<BrokerState>) -> std::io::Result<LogMaintenance> {
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("kafkalite-log-maintenance".into())
            .spawn(move || run(&state, &stopped))?;
        Ok(LogMaintenance {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn stop(&mut self) {
        // Dropping the sender wakes the thread at once.
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for LogMaintenance {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(state: &BrokerState, stopped: &mpsc::Receiver<()>) {
    let retention_every = Duration::from_millis(state.config.retention_check_interval_ms);
    let cleaner_every = Duration::from_millis(state.config.cleaner_backoff_ms);
    let mut next_retention = Instant::now() + retention_every;
    let mut next_clean = Instant::now() + cleaner_every;
    loop {
        let due = if state.config.cleaner_enable {
            next_retention.min(next_clean)
        } else {
            next_retention
        };
        match stopped.recv_timeout(due.saturating_duration_since(Instant::now())) {
            Err(RecvTimeoutError::Timeout) => {}
            // A message or a dropped sender: the broker is shutting down.
            _ => return,
        }
        let now = Instant::now();
        if now >= next_retention {
            apply_retention(state);
            release_idle_reservations(state);
            next_retention = now + retention_every;
        }
        if state.config.cleaner_enable && now >= next_clean {
            compact(state, None, false);
            next_clean = Instant::now() + cleaner_every;
        }
    }
}

/// Delete the closed segments that retention no longer keeps, on every partition.
pub fn apply_retention(state: &BrokerState) -> usize {
    let now = now_ms();
    state
        .topics
        .partitions(None)
        .iter()
        .map(|p| match p.apply_retention(now) {
            Ok(n) => n,
            Err(e) => {
                logging::error(
                    "kafkalite.log.LogManager",
                    &format!("Retention on {}-{} failed: {e}", p.topic, p.index),
                );
                0
            }
        })
        .sum()
}

/// A partition whose block reservation has not grown for this long is idle enough to give
/// it back (with the retention pass, so within `log.retention.check.interval.ms` of that).
const RESERVATION_IDLE: Duration = Duration::from_secs(60);

/// Give back the blocks reserved ahead of idle partitions' appends, so an idle partition
/// takes about its bytes on disk. Returns how many partitions released some.
pub fn release_idle_reservations(state: &BrokerState) -> usize {
    state
        .topics
        .partitions(None)
        .iter()
        .filter(|p| {
            let released = p
                .log
                .lock()
                .expect("lock")
                .release_idle_reservation(RESERVATION_IDLE);
            released.unwrap_or_else(|e| {
                logging::warn(
                    "kafkalite.log.LogManager",
                    &format!(
                        "releasing reserved blocks of {}-{} failed: {e}",
                        p.topic, p.index
                    ),
                );
                false
            })
        })
        .count()
}

/// A cleaner pass over the partitions of `topic` (every topic when `None`). Partitions
/// whose policy is not `compact`, or not yet dirty enough, come back with `skipped` set
/// unless `force` asks to clean whatever is cleanable; a forced pass first rolls the active
/// segment of compacted partitions, which is otherwise never cleaned. A failed partition is
/// logged and left out: its old segments stay in place.
pub fn compact(state: &BrokerState, topic: Option<&str>, force: bool) -> Vec<PartitionCompaction> {
    state
        .topics
        .partitions(topic)
        .iter()
        .filter_map(|p| match clean_partition(p, force) {
            Ok(stats) => Some(PartitionCompaction {
                topic: p.topic.clone(),
                partition: p.index,
                stats,
            }),
            Err(e) => {
                logging::error(
                    "kafkalite.log.LogCleaner",
                    &format!("Compaction of {}-{} failed: {e}", p.topic, p.index),
                );
                None
            }
        })
        .collect()
}

fn clean_partition(p: &Partition, force: bool) -> kafkalite_core::Result<CompactionStats> {
    if force {
        let mut log = p.log.lock().expect("lock");
        if log.config().cleanup_policy.compact {
            log.roll()?;
        }
    }
    let (aborted, first_unstable) = p.transactions_for_cleaner();
    compact_shared_with_transactions(&p.log, now_ms(), force, aborted, first_unstable)
}
