//! Per-topic traffic, as Kafka's `kafka.server:type=BrokerTopicMetrics`: bytes and messages
//! in (appended by producers), bytes out (record bytes sent to consumers), per topic and
//! summed over all topics; the record bytes sent to followers only summed, as Kafka's
//! `ReplicationBytesOutPerSec` (a consumer reading from a follower, KIP-392, moves the
//! follower's bytes out, not the leader's).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, RwLock};

#[derive(Default)]
pub struct TopicFigures {
    pub bytes_in: AtomicU64,
    pub messages_in: AtomicU64,
    pub bytes_out: AtomicU64,
    pub produce_requests: AtomicU64,
    pub fetch_requests: AtomicU64,
}

#[derive(Default)]
pub struct TopicMetrics {
    all: TopicFigures,
    /// Record bytes sent to followers, over all topics.
    replication_bytes_out: AtomicU64,
    topics: RwLock<HashMap<String, Arc<TopicFigures>>>,
}

impl TopicMetrics {
    fn topic(&self, name: &str) -> Arc<TopicFigures> {
        if let Some(f) = self.topics.read().expect("lock").get(name) {
            return Arc::clone(f);
        }
        let mut topics = self.topics.write().expect("lock");
        Arc::clone(topics.entry(name.to_string()).or_default())
    }

    /// A produce to `topic` appended `bytes` of batches holding `messages` records.
    pub fn appended(&self, topic: &str, bytes: u64, messages: u64) {
        for f in [&self.all, &*self.topic(topic)] {
            f.bytes_in.fetch_add(bytes, Relaxed);
            f.messages_in.fetch_add(messages, Relaxed);
            f.produce_requests.fetch_add(1, Relaxed);
        }
    }

    /// A fetch answered `bytes` of record batches from `topic`.
    pub fn sent(&self, topic: &str, bytes: u64) {
        for f in [&self.all, &*self.topic(topic)] {
            f.bytes_out.fetch_add(bytes, Relaxed);
            f.fetch_requests.fetch_add(1, Relaxed);
        }
    }

    /// A follower's fetch was answered `bytes` of record batches from `topic`.
    pub fn replicated(&self, topic: &str, bytes: u64) {
        self.replication_bytes_out.fetch_add(bytes, Relaxed);
        for f in [&self.all, &*self.topic(topic)] {
            f.fetch_requests.fetch_add(1, Relaxed);
        }
    }

    /// Record bytes sent to followers so far.
    #[must_use]
    pub fn replication_bytes_out(&self) -> u64 {
        self.replication_bytes_out.load(Relaxed)
    }

    /// A topic's figures go with it.
    pub fn forget(&self, topic: &str) {
        self.topics.write().expect("lock").remove(topic);
    }

    #[must_use]
    pub fn all(&self) -> &TopicFigures {
        &self.all
    }

    /// Every topic with figures, sorted by name.
    #[must_use]
    pub fn each(&self) -> Vec<(String, Arc<TopicFigures>)> {
        let mut out: Vec<_> = self
            .topics
            .read()
            .expect("lock")
            .iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}
