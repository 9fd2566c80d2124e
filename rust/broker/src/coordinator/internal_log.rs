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

use crate::cluster::partition::Partition;
use crate::errors::ApiError;

/// How a coordinator writes its internal topic, as Kafka's coordinators do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Writes {
    /// The codec of its batches: `offsets.topic.compression.codec` for groups, none for
    /// `__transaction_state` (Kafka's `TransactionLog` enforces none).
    pub compression: Compression,
    /// How long a write that must be replicated waits for the ISR (cluster mode) before
    /// the coordinator gives up (its client retries): `offsets.commit.timeout.ms` for
    /// groups, `request.timeout.ms` for transactions.
    pub replication_wait: Duration,
    /// The read size of a replay (`offsets.load.buffer.size`,
    /// `transaction.state.log.load.buffer.size`); a larger batch is still read whole.
    pub load_buffer_bytes: usize,
}

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
/// Each read takes up to `buffer_bytes`, and at least one whole batch.
pub fn replay(
    partition: &Partition,
    buffer_bytes: usize,
    mut visit: impl FnMut(Entry),
) -> anyhow::Result<()> {
    let log = partition.log.lock().expect("lock");
    let mut position = log.log_start_offset();
    let buffer_bytes = u64::try_from(buffer_bytes).unwrap_or(u64::MAX).max(1);
    while let Some(slice) = log.read(position, buffer_bytes, None)? {
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
/// `replicated`: in cluster mode, return once the ISR has it (within
/// `writes.replication_wait`).
#[allow(clippy::too_many_arguments)]
pub fn append(
    partition: &Partition,
    records: &[RecordInput],
    producer: Option<(i64, i16)>,
    now_ms: i64,
    placement: Placement,
    writes: Writes,
    replicated: bool,
    wake: &tokio::sync::Notify,
) -> Result<(), ApiError> {
    let batch = match producer {
        Some((id, epoch)) => transactional_batch(records, id, epoch, writes.compression)?,
        None => encode_batch(records, writes.compression, 0)?,
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
    wait_replicated(
        partition,
        node,
        info.last_offset + 1,
        writes.replication_wait,
    )
}

/// Wait (blocking the calling thread) until the high watermark reaches `required`, at
/// most `max` (then REQUEST_TIMED_OUT).
pub fn wait_replicated(
    partition: &Partition,
    node: i32,
    required: i64,
    max: Duration,
) -> Result<(), ApiError> {
    let started = Instant::now();
    let poll = || loop {
        if partition.high_watermark() >= required {
            return Ok(());
        }
        if partition.replica_state().leader != node {
            return Err(not_leader(partition));
        }
        if started.elapsed() > max {
            return Err(ApiError::new(
                codes::REQUEST_TIMED_OUT,
                format!(
                    "{}-{} did not replicate offset {} within {} ms",
                    partition.topic,
                    partition.index,
                    required - 1,
                    max.as_millis()
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
