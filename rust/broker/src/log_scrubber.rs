//! The log scrubber: a background pass over every closed segment of every partition
//! (`kafkalite_core::storage::scrubber`), every `kafkalite.log.scrub.interval.ms`, at most
//! `kafkalite.log.scrub.bytes.per.second`; at once after an unclean shutdown, whose
//! recovery only re-validates segments past the recovery point. What it finds is marked
//! on the log (fetches answer CORRUPT_MESSAGE there) and logged once.
//!
//! Its own thread: a pass reads whole segments and must not hold up retention or the
//! cleaner; the log's lock is held only to snapshot a segment and to mark what was found.

use std::ops::ControlFlow;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kafkalite_core::logging;
use kafkalite_core::storage::scrubber::scrub_segment;

use crate::cluster::Partition;
use crate::state::BrokerState;

const LOGGER: &str = "kafkalite.log.LogScrubber";
/// The pace is checked (and slept to) after every this many bytes.
const PACE_STEP: u64 = 1 << 20;

/// The running scrubber; dropping it stops the thread and waits for it.
pub struct LogScrubber {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl LogScrubber {
    /// `None` when scrubbing is off (`kafkalite.log.scrub.interval.ms=-1`).
    pub fn start(state: Arc<BrokerState>) -> std::io::Result<Option<LogScrubber>> {
        let Some(interval) = state.config.scrub_interval else {
            return Ok(None);
        };
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("kafkalite-log-scrubber".into())
            .spawn(move || run(&state, interval, &stopped))?;
        Ok(Some(LogScrubber {
            stop: Some(stop),
            thread: Some(thread),
        }))
    }

    pub fn stop(&mut self) {
        self.stop.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for LogScrubber {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Sleep `d` unless the broker stops first (then `Break`).
fn sleep(stopped: &mpsc::Receiver<()>, d: Duration) -> ControlFlow<()> {
    match stopped.recv_timeout(d) {
        Err(RecvTimeoutError::Timeout) => ControlFlow::Continue(()),
        _ => ControlFlow::Break(()),
    }
}

fn run(state: &BrokerState, interval: Duration, stopped: &mpsc::Receiver<()>) {
    let unclean = state
        .topics
        .partitions(None)
        .iter()
        .any(|p| !p.log.lock().expect("lock").opened_clean());
    // After an unclean shutdown, soon (the broker is serving first); else one interval on.
    let mut first = if unclean {
        Duration::from_secs(1)
    } else {
        interval
    };
    loop {
        if sleep(stopped, first).is_break() {
            return;
        }
        first = interval;
        if scrub_pass(state, stopped).is_break() {
            return;
        }
    }
}

/// Scrub every partition once; `Break` when the broker stops meanwhile.
fn scrub_pass(state: &BrokerState, stopped: &mpsc::Receiver<()>) -> ControlFlow<()> {
    let started = Instant::now();
    let rate = state.config.scrub_bytes_per_second.max(1) as f64;
    let mut pace = Pace {
        started,
        bytes: 0,
        unchecked: 0,
    };
    let (mut segments, mut damaged) = (0, 0);
    for partition in state.topics.partitions(None) {
        let (s, d) = scrub_partition(&partition, &mut |bytes| {
            pace.bytes += bytes;
            pace.unchecked += bytes;
            if pace.unchecked < PACE_STEP {
                return ControlFlow::Continue(());
            }
            pace.unchecked = 0;
            let due = pace.started + Duration::from_secs_f64(pace.bytes as f64 / rate);
            sleep(stopped, due.saturating_duration_since(Instant::now()))
        })?;
        segments += s;
        damaged += d;
    }
    logging::info(
        LOGGER,
        &format!(
            "Scrubbed {segments} closed segments ({} bytes) in {:.1} s: {damaged} damaged \
             batch ranges found",
            pace.bytes,
            started.elapsed().as_secs_f64()
        ),
    );
    ControlFlow::Continue(())
}

struct Pace {
    started: Instant,
    bytes: u64,
    unchecked: u64,
}

/// (segments scrubbed, new damaged ranges) of one partition.
fn scrub_partition(
    partition: &Partition,
    pace: &mut dyn FnMut(u64) -> ControlFlow<()>,
) -> ControlFlow<(), (usize, usize)> {
    let targets = partition.log.lock().expect("lock").scrub_targets(false);
    let (mut segments, mut damaged) = (0, 0);
    for target in targets {
        let outcome = match scrub_segment(&target, &mut *pace) {
            Ok(outcome) => outcome,
            Err(e) => {
                // Deleted under us (retention, compaction) or unreadable: the next pass
                // sees the log as it is then.
                logging::warn(
                    LOGGER,
                    &format!("Could not scrub {}: {e}", target.log_path.display()),
                );
                continue;
            }
        };
        if !outcome.finished {
            return ControlFlow::Break(());
        }
        segments += 1;
        if outcome.damages.is_empty() {
            continue;
        }
        let recorded = partition
            .log
            .lock()
            .expect("lock")
            .record_damage(&target, outcome.damages);
        match recorded {
            Ok(new) => {
                for d in &new {
                    logging::error(
                        LOGGER,
                        &format!(
                            "Damaged batch in log segment {} of {}-{} at bytes {}..{} (offset \
                             {} or later): {}. Fetches of it answer CORRUPT_MESSAGE; run \
                             `kafkalite log scrub` with the broker stopped to skip it or \
                             truncate there",
                            target.log_path.display(),
                            partition.topic,
                            partition.index,
                            d.from,
                            d.to,
                            d.first_offset,
                            d.why
                        ),
                    );
                }
                damaged += new.len();
            }
            Err(e) => logging::error(
                LOGGER,
                &format!(
                    "Could not mark damage in {}: {e}",
                    target.log_path.display()
                ),
            ),
        }
    }
    ControlFlow::Continue((segments, damaged))
}
