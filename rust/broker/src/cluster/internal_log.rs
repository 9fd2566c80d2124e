//! Reading and writing the logs of the coordinators' internal topics (`__consumer_offsets`,
//! `__transaction_state`): one replay loop and one append path both coordinators share.
//!
//! - `replay`: every batch of a partition from its log start, handed over as `Entry`s: the
//!   records of a data batch (with the producer id of a transactional one) or a
//!   transaction's COMMIT/ABORT marker. What the records mean is the caller's.
//! - `append`: one batch of the coordinator's records, optionally transactional (Kafka's
//!   transactional offset commits). In cluster mode the append is refused unless this
//!   broker leads the partition (a coordinator that lost it must not write into a
//!   follower's log), the leader epoch is stamped, and the call waits until the ISR has
//!   the batch (Kafka appends coordinator state with acks=all), so a new coordinator after
//!   a failover finds every state an answer was given on.

use std::os::unix::fs::FileExt;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kafkalite_core::error_codes as codes;
use kafkalite_core::records::{
    decode_records, encode_batch, BatchHeader, Compression, Record, RecordInput,
};
use kafkalite_core::storage::txn_index::{
    control_type, transactional_batch, CONTROL_ABORT, CONTROL_COMMIT,
};

use super::partition::Partition;
use crate::errors::ApiError;

/// How long an append waits for the ISR before the coordinator gives up (its client
/// retries): below the clients' 30 s request timeout.
const REPLICATION_WAIT_MAX: Duration = Duration::from_secs(15);

/// What replay finds in one batch.
pub enum Entry {
    /// A data batch's records; `producer_id` for a transactional batch.
    Records {
        producer_id: Option<i64>,
        records: Vec<Record>,
    },
    /// A transaction's marker.
    Marker { producer_id: i64, commit: bool },
}

/// Hand every batch of `partition`, from its log start to its log end, to `visit`.
/// Undecodable records are skipped; a torn tail ends the replay.
pub fn replay(partition: &Partition, mut visit: impl FnMut(Entry)) -> anyhow::Result<()> {
    let log = partition.log.lock().expect("lock");
    let mut position = log.log_start_offset();
    while let Some(slice) = log.read(position, 4 << 20, None)? {
        let mut buf = vec![0u8; slice.len as usize];
        slice.file.read_exact_at(&mut buf, slice.position)?;
        let mut rest = &buf[..];
        let mut advanced = false;
        while let Ok(header) = BatchHeader::parse(rest) {
            let size = header.total_size();
            if size > rest.len() {
                break;
            }
            position = position.max(header.last_offset() + 1);
            advanced = true;
            let batch = &rest[..size];
            if header.is_control() {
                match control_type(batch) {
                    Some(CONTROL_COMMIT) | Some(CONTROL_ABORT) => visit(Entry::Marker {
                        producer_id: header.producer_id,
                        commit: control_type(batch) == Some(CONTROL_COMMIT),
                    }),
                    _ => {}
                }
            } else {
                visit(Entry::Records {
                    producer_id: header.is_transactional().then_some(header.producer_id),
                    records: decode_records(batch).unwrap_or_default(),
                });
            }
            rest = &rest[size..];
        }
        if !advanced {
            // Not even one whole batch: skip past it rather than loop.
            position = position.max(slice.first_offset + 1);
        }
    }
    Ok(())
}

/// Where an append runs: a single node, or broker `node` of a cluster.
#[derive(Clone, Copy, Debug)]
pub enum Placement {
    SingleNode,
    Cluster { node: i32 },
}

/// Append `records` as one batch (transactional for `Some((producer id, epoch))`);
/// `replicated`: in cluster mode, return once the ISR has it.
pub fn append(
    partition: &Partition,
    records: &[RecordInput],
    producer: Option<(i64, i16)>,
    now_ms: i64,
    placement: Placement,
    replicated: bool,
    wake: &tokio::sync::Notify,
) -> Result<(), ApiError> {
    let batch = match producer {
        Some((id, epoch)) => transactional_batch(records, id, epoch)?,
        None => encode_batch(records, Compression::None, 0)?,
    };
    let Placement::Cluster { node } = placement else {
        partition.append(&batch, now_ms)?;
        wake.notify_waiters();
        return Ok(());
    };
    if partition.replica_state().leader != node {
        return Err(not_leader(partition));
    }
    let info = partition.append_in_epoch(&batch, now_ms, true)?;
    partition.advance_leader_high_watermark();
    // Followers long-poll on this: they come for the batch at once.
    wake.notify_waiters();
    if !replicated {
        return Ok(());
    }
    wait_replicated(partition, node, info.last_offset + 1)
}

/// Wait (blocking the calling thread) until the high watermark reaches `required`.
pub fn wait_replicated(partition: &Partition, node: i32, required: i64) -> Result<(), ApiError> {
    let started = Instant::now();
    let poll = || loop {
        if partition.high_watermark() >= required {
            return Ok(());
        }
        if partition.replica_state().leader != node {
            return Err(not_leader(partition));
        }
        if started.elapsed() > REPLICATION_WAIT_MAX {
            return Err(ApiError::new(
                codes::REQUEST_TIMED_OUT,
                format!(
                    "{}-{} did not replicate offset {} within {} ms",
                    partition.topic,
                    partition.index,
                    required - 1,
                    REPLICATION_WAIT_MAX.as_millis()
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    // On a runtime's worker thread, tell tokio the thread blocks for a while.
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(poll)
        }
        _ => poll(),
    }
}

/// Lock a coordinator's mutex, whose holder may be inside `wait_replicated` for seconds.
/// A contended wait runs as a blocking section on a runtime worker: tokio hands the
/// worker's other tasks (the followers' fetches that the holder waits for among them) to
/// another thread. Blocking the worker outright would, once every worker waits so, stall
/// the replication the holder needs until its timeout.
pub fn lock_blocking<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    if let Ok(guard) = mutex.try_lock() {
        return guard;
    }
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| mutex.lock().expect("lock"))
        }
        _ => mutex.lock().expect("lock"),
    }
}

fn not_leader(partition: &Partition) -> ApiError {
    ApiError::new(
        codes::NOT_COORDINATOR,
        format!(
            "this broker no longer leads {}-{}",
            partition.topic, partition.index
        ),
    )
}
