//! What operators watch on a Kafka broker, kept as atomic counters on the request path and
//! served in Prometheus' text format on `metrics.listen` (off unless configured). Metric
//! names are those the Prometheus JMX exporter gives Kafka's JMX beans with its stock Kafka
//! rules (`kafka_server_brokertopicmetrics_bytesin_total`, ...), so dashboards written for
//! Kafka read kafkalite; consumer lag is named as kafka_exporter names it, since Kafka's
//! broker has no such bean.

mod exposition;
pub mod histogram;
pub mod requests;
pub mod server;
pub mod topics;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use requests::RequestMetrics;
use topics::TopicMetrics;

use crate::cluster::ReplicaState;

#[derive(Default)]
pub struct Metrics {
    pub requests: RequestMetrics,
    pub topics: TopicMetrics,
    pub isr_shrinks: AtomicU64,
    pub isr_expands: AtomicU64,
    connections: Mutex<HashMap<String, AtomicI64>>,
    pub connections_created: AtomicU64,
    pub connections_closed: AtomicU64,
}

impl Metrics {
    /// A connection opened (`+1`) or closed (`-1`) on `listener`.
    pub fn connection(&self, listener: &str, delta: i64) {
        let connections = self.connections.lock().expect("lock");
        if let Some(n) = connections.get(listener) {
            n.fetch_add(delta, Relaxed);
        } else {
            drop(connections);
            let mut connections = self.connections.lock().expect("lock");
            connections
                .entry(listener.to_string())
                .or_insert_with(|| AtomicI64::new(0))
                .fetch_add(delta, Relaxed);
        }
        if delta > 0 {
            self.connections_created.fetch_add(1, Relaxed);
        } else {
            self.connections_closed.fetch_add(1, Relaxed);
        }
    }

    /// Open connections per listener, sorted by listener name.
    #[must_use]
    pub fn connections(&self) -> Vec<(String, i64)> {
        let mut out: Vec<_> = self
            .connections
            .lock()
            .expect("lock")
            .iter()
            .map(|(k, v)| (k.clone(), v.load(Relaxed)))
            .collect();
        out.sort();
        out
    }

    /// The controller changed a partition this broker leads from `old` to `new`: count an
    /// ISR shrink or expansion, as Kafka's leader does.
    pub fn isr_changed(&self, node: i32, old: &ReplicaState, new: &ReplicaState) {
        if new.leader != node || old.leader != node {
            return;
        }
        match new.isr.len().cmp(&old.isr.len()) {
            std::cmp::Ordering::Less => self.isr_shrinks.fetch_add(1, Relaxed),
            std::cmp::Ordering::Greater => self.isr_expands.fetch_add(1, Relaxed),
            std::cmp::Ordering::Equal => 0,
        };
    }
}

/// Counts a connection while it lives.
pub struct ConnectionGuard<'a> {
    metrics: &'a Metrics,
    listener: String,
}

impl<'a> ConnectionGuard<'a> {
    pub fn open(metrics: &'a Metrics, listener: &str) -> Self {
        metrics.connection(listener, 1);
        ConnectionGuard {
            metrics,
            listener: listener.to_string(),
        }
    }
}

impl Drop for ConnectionGuard<'_> {
    fn drop(&mut self) {
        self.metrics.connection(&self.listener, -1);
    }
}
