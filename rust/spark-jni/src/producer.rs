//! [`TaskProducer`]: one Spark task's producer. The task's rows arrive in chunks (see
//! `rows.rs`); each chunk becomes RecordBatches in `kafkalite-client`'s [`RecordBatcher`]
//! (Kafka's default partitioner, batches of at most `batch.size`, consecutive sequences
//! per partition) and goes to the [`Sender`] thread while the task fills the next one.
//! Used by one thread at a time (the task's).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use kafkalite_client::{BlockingClient, ClientConfig, RecordBatcher};
use kafkalite_core::records::{Compression, HeaderRef};

use crate::error::SinkError;
use crate::rows::Rows;
use crate::sender::{Sender, Spare};

/// How long a topic may take to appear in metadata (just created, leader elected).
const TOPIC_WAIT: Duration = Duration::from_secs(10);
const TOPIC_POLL: Duration = Duration::from_millis(200);
/// The most partitions a topic written here may have: each gets a slot for its open batch.
const PARTITIONS_MAX: i32 = 1 << 20;

/// The producer settings the writer honours, as Kafka's producer spells them.
#[derive(Clone, Debug)]
pub struct Settings {
    pub bootstrap_servers: String,
    pub client_id: String,
    /// 0, 1 or -1 (all).
    pub acks: i16,
    pub idempotent: bool,
    pub compression: Compression,
    pub batch_bytes: usize,
}

struct Topic {
    partitions: i32,
    /// The next base sequence per partition (an idempotent producer's).
    sequences: BTreeMap<i32, i32>,
}

pub struct TaskProducer {
    settings: Settings,
    client: Arc<Mutex<BlockingClient>>,
    /// (id, epoch) of the idempotent producer.
    producer: Option<(i64, i16)>,
    topics: HashMap<String, Topic>,
    /// Where keyless rows of the next chunk start (moves on each chunk, as Kafka's sticky
    /// partitioner moves on each batch).
    sticky: i32,
    sender: Sender,
    /// Buffers of sent batches, built in again.
    spare: Spare,
    /// The buffer the JVM writes rows into; its address is handed to Java.
    pub chunk: Vec<u8>,
}

impl TaskProducer {
    /// Connect and, when idempotent, get a producer id. `chunk_bytes` is the first size of
    /// the row buffer; `sticky` the partition keyless rows start at (the task's index, so
    /// a job's tasks do not all start on partition 0; Java's producer picks at random).
    pub fn open(
        settings: Settings,
        chunk_bytes: usize,
        sticky: i32,
    ) -> Result<TaskProducer, SinkError> {
        if !(1..=i32::MAX as usize).contains(&settings.batch_bytes) {
            return Err(SinkError::new(format!(
                "batch.size: expected 1 to {}, got {}",
                i32::MAX,
                settings.batch_bytes
            )));
        }
        if ![-1, 0, 1].contains(&settings.acks) {
            return Err(SinkError::new(format!(
                "acks: expected all, -1, 0 or 1, got {}",
                settings.acks
            )));
        }
        let config = ClientConfig {
            client_id: settings.client_id.clone(),
            ..ClientConfig::default()
        };
        let mut client = BlockingClient::new(&settings.bootstrap_servers, config)
            .map_err(|e| SinkError::new(format!("kafka.bootstrap.servers: {e}")))?;
        let producer = if settings.idempotent {
            Some(client.init_producer_id(None, 60_000)?)
        } else {
            None
        };
        let client = Arc::new(Mutex::new(client));
        let spare = Spare::default();
        // A batch outgrows batch.size only by one record bigger than it: keep buffers up
        // to twice that.
        let buffer_bytes_max = 2 * settings.batch_bytes.max(1 << 16);
        let sender = Sender::start(
            Arc::clone(&client),
            settings.acks,
            spare.clone(),
            buffer_bytes_max,
        );
        Ok(TaskProducer {
            settings,
            client,
            producer,
            topics: HashMap::new(),
            sticky: sticky & i32::MAX,
            sender,
            spare,
            chunk: vec![0; chunk_bytes],
        })
    }

    /// Make the row buffer at least `bytes` long (its contents need not survive).
    pub fn reserve(&mut self, bytes: usize) {
        if self.chunk.len() < bytes {
            self.chunk = vec![0; bytes];
        }
    }

    /// Encode the first `len` bytes of the row buffer, rows for `topic`, and queue them.
    pub fn append(&mut self, topic: &str, len: usize) -> Result<(), SinkError> {
        if len > self.chunk.len() {
            return Err(SinkError::new(format!(
                "a chunk of {len} bytes does not fit the {}-byte buffer",
                self.chunk.len()
            )));
        }
        let partitions = self.partitions(topic)?;
        let state = self.topics.get_mut(topic).expect("looked up above");
        let mut batcher = RecordBatcher::new(
            partitions,
            self.settings.compression,
            self.settings.batch_bytes,
            self.producer,
            state.sequences.clone(),
            self.sticky,
        )
        // A chunk's rows fit in about the chunk's size: reserve no more than may be used.
        .with_buffers(self.spare.take(), len + 4096);
        self.sticky = self.sticky.wrapping_add(1) & i32::MAX;
        let timestamp = kafkalite_core::storage::clock::now_ms();
        let mut rows = Rows::new(&self.chunk[..len]);
        let mut headers: Vec<HeaderRef<'_>> = Vec::new();
        while let Some(row) = rows.next_row(&mut headers).map_err(SinkError::new)? {
            if let Some(p) = row.partition.filter(|&p| p >= partitions) {
                return Err(SinkError::new(format!(
                    "partition {p} does not exist (topic {topic} has {partitions})"
                )));
            }
            batcher
                .add(timestamp, row.partition, row.key, row.value, &headers)
                .map_err(|e| SinkError::new(format!("encoding a record for {topic}: {e}")))?;
        }
        let (batches, unused) = batcher
            .finish()
            .map_err(|e| SinkError::new(format!("encoding records for {topic}: {e}")))?;
        self.spare.restore(unused);
        if self.producer.is_some() {
            for (partition, _, records) in &batches {
                let next = state.sequences.entry(*partition).or_insert(0);
                *next = next.wrapping_add(*records as i32) & i32::MAX;
            }
        }
        self.sender.send(topic, batches)
    }

    /// Wait until every queued record is written: how many were, or the first failure.
    pub fn flush(&mut self) -> Result<u64, SinkError> {
        self.sender.finish()
    }

    /// The partition count of `topic`, waiting a while for a topic just created.
    fn partitions(&mut self, topic: &str) -> Result<i32, SinkError> {
        if let Some(t) = self.topics.get(topic) {
            return Ok(t.partitions);
        }
        let deadline = Instant::now() + TOPIC_WAIT;
        let partitions = loop {
            let meta = {
                let mut client = self.client.lock().expect("client lock");
                client.metadata(Some(&[topic.to_string()]))?
            };
            let found = meta.topics.get(topic);
            let code = found.map(|t| t.error_code);
            if let Some(t) = found.filter(|t| t.error_code == 0 && !t.partitions.is_empty()) {
                break t.partitions.len();
            }
            if Instant::now() > deadline {
                let code = code.map_or("none".to_string(), |c| c.to_string());
                return Err(SinkError::new(format!(
                    "topic {topic:?} is not available (error code {code}): create it first"
                )));
            }
            thread::sleep(TOPIC_POLL);
        };
        let partitions = i32::try_from(partitions)
            .ok()
            .filter(|p| *p <= PARTITIONS_MAX)
            .ok_or_else(|| {
                SinkError::new(format!(
                    "topic {topic} has {partitions} partitions, too many"
                ))
            })?;
        self.topics.insert(
            topic.to_string(),
            Topic {
                partitions,
                sequences: BTreeMap::new(),
            },
        );
        Ok(partitions)
    }
}
