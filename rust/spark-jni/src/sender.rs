//! The sending side of a task's producer: encoded batches go out from a thread of its own,
//! so the task encodes its next chunk of rows while the broker writes the last (as
//! `python/kafkalite/spark/sender.py` does for the Python writer). One thread sends in the
//! order batches were encoded, so each partition's idempotent sequences reach the broker
//! in order.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafkalite_client::{self as client, Batch, BlockingClient};
use kafkalite_core::error_codes;

use crate::error::SinkError;

/// Error codes worth another try: leadership moving, replicas catching up, timeouts (the
/// Python writer's list).
const RETRIABLE: [i16; 10] = [3, 5, 6, 7, 13, 19, 20, 56, 74, 76];
/// How long a batch may keep failing with retriable errors before the write fails.
const RETRY_FOR: Duration = Duration::from_secs(60);
const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// Kafka's `request.timeout.ms` default, as the broker's wait for acks=all.
const REQUEST_TIMEOUT_MS: i32 = 30_000;
/// Encoded chunks waiting for the thread: one in flight and one ready covers the
/// overlap; more would only hold memory.
const QUEUED_MAX: usize = 2;

type Item = (String, Vec<Batch>);

/// The most bytes of sent batches' buffers kept for reuse.
const SPARE_BYTES_MAX: usize = 16 << 20;

/// Buffers of batches the broker acknowledged, for the encoder to build the next ones in:
/// fresh memory costs a page fault per 4 KiB touched (a quarter of the Python writer's
/// encoding time before it kept its buffers). Shared by a task's encoder and its sender.
#[derive(Clone, Default)]
pub struct Spare(Arc<Mutex<Vec<Vec<u8>>>>);

impl Spare {
    /// Every kept buffer (the encoder hands back none: they leave as batches).
    #[must_use]
    pub fn take(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.0.lock().expect("spare lock"))
    }

    /// Return buffers `take` gave out that the encoder did not use.
    pub fn restore(&self, unused: Vec<Vec<u8>>) {
        self.0.lock().expect("spare lock").extend(unused);
    }

    /// Keep `bytes`' buffer when nothing else holds it, it is no bigger than
    /// `buffer_bytes_max` and the kept ones stay within `SPARE_BYTES_MAX`.
    fn keep(&self, bytes: Bytes, buffer_bytes_max: usize) {
        let Ok(buffer) = bytes.try_into_mut() else {
            return;
        };
        let mut buffer = Vec::from(buffer);
        if buffer.capacity() > buffer_bytes_max {
            return;
        }
        let mut spare = self.0.lock().expect("spare lock");
        let kept: usize = spare.iter().map(Vec::capacity).sum();
        if kept + buffer.capacity() <= SPARE_BYTES_MAX {
            buffer.clear();
            spare.push(buffer);
        }
    }
}

/// What the thread reports: records written, or the first failure.
type Outcome = Result<u64, SinkError>;

pub struct Sender {
    items: Option<SyncSender<Item>>,
    thread: Option<JoinHandle<Outcome>>,
    /// Set by the thread at its first failure, so `send` fails fast.
    failure: Arc<Mutex<Option<SinkError>>>,
    /// Set when the task gives up (Spark aborts it): what is still queued is dropped.
    abandoned: Arc<AtomicBool>,
}

impl Sender {
    /// A sending thread; buffers of sent batches up to `buffer_bytes_max` go to `spare`.
    #[must_use]
    pub fn start(
        client: Arc<Mutex<BlockingClient>>,
        acks: i16,
        spare: Spare,
        buffer_bytes_max: usize,
    ) -> Sender {
        let (items, queue) = mpsc::sync_channel(QUEUED_MAX);
        let failure = Arc::new(Mutex::new(None));
        let abandoned = Arc::new(AtomicBool::new(false));
        let (seen, given_up) = (Arc::clone(&failure), Arc::clone(&abandoned));
        let thread = thread::Builder::new()
            .name("kafkalite-sink-send".into())
            .spawn(move || {
                let queue = queue
                    .iter()
                    .take_while(|_| !given_up.load(Ordering::Relaxed));
                run(&client, acks, queue, &seen, &spare, buffer_bytes_max)
            })
            .expect("spawning the sink's sending thread");
        Sender {
            items: Some(items),
            thread: Some(thread),
            failure,
            abandoned,
        }
    }

    /// Queue `batches` of `topic` (waits while the queue is full); fails with the thread's
    /// first failure, if it had one.
    pub fn send(&self, topic: &str, batches: Vec<Batch>) -> Result<(), SinkError> {
        if let Some(e) = self.failure.lock().expect("failure lock").clone() {
            return Err(e);
        }
        let items = self.items.as_ref().expect("send after finish");
        if items.send((topic.to_string(), batches)).is_err() {
            // The thread ended: it failed, and its outcome says why.
            return Err(self
                .failure
                .lock()
                .expect("failure lock")
                .clone()
                .unwrap_or_else(|| SinkError::new("the sink's sending thread ended")));
        }
        Ok(())
    }

    /// Wait until every queued batch is written: the records written, or the first
    /// failure.
    pub fn finish(&mut self) -> Outcome {
        drop(self.items.take());
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(SinkError::new("the sink's sending thread panicked"))),
            None => Err(SinkError::new("the producer was already flushed")),
        }
    }
}

impl Drop for Sender {
    /// Dropped without `finish` (the task failed or was aborted): send nothing more than
    /// the item in flight, and wait for the thread, which uses the client.
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.abandoned.store(true, Ordering::Relaxed);
            let _ = self.finish();
        }
    }
}

fn run(
    client: &Mutex<BlockingClient>,
    acks: i16,
    queue: impl Iterator<Item = Item>,
    failure: &Mutex<Option<SinkError>>,
    spare: &Spare,
    buffer_bytes_max: usize,
) -> Outcome {
    let mut written = 0;
    for (topic, batches) in queue {
        match send(client, &topic, batches, acks, spare, buffer_bytes_max) {
            Ok(records) => written += records,
            Err(e) => {
                *failure.lock().expect("failure lock") = Some(e.clone());
                // Dropping the queue wakes a task blocked in `send`.
                return Err(e);
            }
        }
    }
    Ok(written)
}

/// Produce `batches`, each partition's in order: one request per leader per round, a
/// round taking the first unsent batch of every partition (Kafka answers a partition once
/// per request). Batches refused with a retriable code go again with the same sequence
/// numbers, so the broker writes each at most once.
fn send(
    client: &Mutex<BlockingClient>,
    topic: &str,
    batches: Vec<Batch>,
    acks: i16,
    spare: &Spare,
    buffer_bytes_max: usize,
) -> Result<u64, SinkError> {
    let mut pending: BTreeMap<i32, VecDeque<(Bytes, usize)>> = BTreeMap::new();
    for (partition, bytes, records) in batches {
        pending
            .entry(partition)
            .or_default()
            .push_back((Bytes::from(bytes), records));
    }
    let deadline = Instant::now() + RETRY_FOR;
    let mut written = 0;
    while !pending.is_empty() {
        let round: Vec<(i32, Bytes)> = pending
            .iter()
            .map(|(&p, queue)| (p, queue[0].0.clone()))
            .collect();
        let answers = {
            let mut client = client.lock().expect("client lock");
            client.produce_batches(topic, round, acks, REQUEST_TIMEOUT_MS)
        };
        let answers = match answers {
            Ok(answers) => answers,
            Err(e @ (client::Error::Io { .. } | client::Error::NoBrokerReachable { .. }))
                if Instant::now() < deadline =>
            {
                let _ = e;
                thread::sleep(RETRY_PAUSE);
                continue;
            }
            Err(e) => return Err(SinkError::new(format!("producing to {topic} failed: {e}"))),
        };
        let mut retry = false;
        for (partition, result) in answers {
            let code = match &result {
                Ok(_) => error_codes::NONE,
                Err(e) => e.error_code().ok_or_else(|| {
                    SinkError::new(format!("producing to {topic}-{partition} failed: {e}"))
                })?,
            };
            let queue = pending
                .get_mut(&partition)
                .expect("a partition of the round");
            // DUPLICATE_SEQUENCE_NUMBER: an earlier try of this very batch was written.
            if code == error_codes::NONE || code == error_codes::DUPLICATE_SEQUENCE_NUMBER {
                let (bytes, records) = queue.pop_front().expect("the round's batch");
                written += records as u64;
                spare.keep(bytes, buffer_bytes_max);
                if queue.is_empty() {
                    pending.remove(&partition);
                }
            } else if RETRIABLE.contains(&code) && Instant::now() < deadline {
                retry = true;
            } else {
                let records = queue[0].1;
                return Err(SinkError::refused(
                    &format!("producing {records} records to {topic}-{partition}"),
                    code,
                ));
            }
        }
        if retry {
            thread::sleep(RETRY_PAUSE);
        }
    }
    Ok(written)
}
