//! Replication (cluster mode): followers copy their leaders, leaders track them.
//!
//! - `fetchers`: follower fetchers, one (or `num.replica.fetchers`) per source broker,
//!   started and stopped as snapshots make this broker follower or leader of partitions;
//! - `fetcher`: one fetcher's loop: truncate by leader epoch (KIP-101/279), then Fetch with
//!   this broker's id as replica id and append the leader's batches unchanged;
//! - `leader`: the leader's side of a follower's Fetch (log ends, high watermark, ISR
//!   expansion), the ISR shrink task and ISR proposals to the controller side;
//! - `acks`: acks=all produce waiting for the high watermark;
//! - `read_replica`: fetch from follower (KIP-392), the replica a leader names for a
//!   consumer's rack (`replica.selector.class`);
//! - `inter_broker`: the listener fetchers reach leaders on, and its TLS / SASL.
//!
//! Generic over every partition of the snapshot: whatever the controller assigns this
//! broker is replicated, internal topics included. Single-node mode has none of this: a
//! sole replica's high watermark follows its log end in `Partition::append`.

pub mod acks;
pub mod fetcher;
pub mod fetchers;
pub mod inter_broker;
pub mod leader;
pub mod read_replica;

use std::time::Duration;

use crate::config::BrokerConfig;

/// The replication keys of the broker config, read once.
#[derive(Clone, Debug)]
pub struct ReplicationConfig {
    pub num_fetchers: usize,
    pub fetch_wait_max_ms: i32,
    pub fetch_max_bytes: i32,
    pub fetch_response_max_bytes: i32,
    pub fetch_backoff_ms: u64,
    pub lag_time_max_ms: i64,
    pub min_insync_replicas: i32,
    /// `replica.fetch.min.bytes`: a follower's Fetch waits (up to `fetch_wait_max_ms`)
    /// for this much.
    pub fetch_min_bytes: i32,
    /// `replica.socket.timeout.ms`: the bound on each of the fetcher's requests.
    pub socket_timeout: Duration,
    /// `replica.selector.class`: which replica a leader names for a consumer to read.
    pub replica_selector: read_replica::ReplicaSelector,
    /// `replica.socket.receive.buffer.bytes` (`None`: -1, the OS default).
    pub receive_buffer_bytes: Option<u32>,
    /// Connecting to the leader: `socket.connection.setup.timeout.ms`, doubled by each
    /// failure in a row up to `socket.connection.setup.timeout.max.ms`.
    pub setup_timeout: SetupTimeout,
}

/// Kafka's exponential connection setup timeout (KIP-601): the first attempt may take
/// `base`, each failure in a row doubles it, up to `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetupTimeout {
    pub base: Duration,
    pub max: Duration,
}

impl SetupTimeout {
    #[must_use]
    pub fn from_broker(config: &BrokerConfig) -> SetupTimeout {
        let ms = |key: &str| {
            Duration::from_millis(u64::try_from(config.settings.long(key)).unwrap_or(0))
        };
        SetupTimeout {
            base: ms("socket.connection.setup.timeout.ms"),
            max: ms("socket.connection.setup.timeout.max.ms"),
        }
    }

    /// The bound after `failures` failed attempts in a row.
    #[must_use]
    pub fn after(self, failures: u32) -> Duration {
        let doubled = self.base.saturating_mul(1u32 << failures.min(20));
        // A max below the base (Kafka does not forbid it) leaves the base.
        doubled.min(self.max.max(self.base))
    }
}

impl ReplicationConfig {
    #[must_use]
    pub fn from_broker(config: &BrokerConfig) -> ReplicationConfig {
        let s = &config.settings;
        ReplicationConfig {
            num_fetchers: usize::try_from(s.int("num.replica.fetchers"))
                .unwrap_or(1)
                .max(1),
            fetch_wait_max_ms: s.int("replica.fetch.wait.max.ms").max(0),
            fetch_max_bytes: s.int("replica.fetch.max.bytes").max(1),
            fetch_response_max_bytes: s.int("replica.fetch.response.max.bytes").max(1),
            fetch_backoff_ms: u64::try_from(s.int("replica.fetch.backoff.ms")).unwrap_or(1000),
            lag_time_max_ms: s.long("replica.lag.time.max.ms").max(1),
            min_insync_replicas: s.int("min.insync.replicas"),
            fetch_min_bytes: s.int("replica.fetch.min.bytes"),
            socket_timeout: Duration::from_millis(
                u64::try_from(s.int("replica.socket.timeout.ms")).unwrap_or(0),
            ),
            receive_buffer_bytes: u32::try_from(s.int("replica.socket.receive.buffer.bytes")).ok(),
            replica_selector: read_replica::ReplicaSelector::from_settings(s),
            setup_timeout: SetupTimeout::from_broker(config),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setup_timeout_doubles_per_failure_up_to_its_max() {
        let t = SetupTimeout::from_broker(&BrokerConfig::default());
        let secs = |n| Duration::from_secs(n);
        assert_eq!((t.base, t.max), (secs(10), secs(30)));
        assert_eq!(
            [0, 1, 2, 40].map(|f| t.after(f)),
            [secs(10), secs(20), secs(30), secs(30)]
        );
        let c = ReplicationConfig::from_broker(&BrokerConfig::default());
        assert_eq!(c.fetch_min_bytes, 1);
        assert_eq!(c.receive_buffer_bytes, Some(65_536));
        assert_eq!(c.socket_timeout, secs(30));
    }
}
