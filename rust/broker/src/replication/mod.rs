//! Replication (cluster mode): followers copy their leaders, leaders track them.
//!
//! - `fetchers`: follower fetchers, one (or `num.replica.fetchers`) per source broker,
//!   started and stopped as snapshots make this broker follower or leader of partitions;
//! - `fetcher`: one fetcher's loop: truncate by leader epoch (KIP-101/279), then Fetch with
//!   this broker's id as replica id and append the leader's batches unchanged;
//! - `leader`: the leader's side of a follower's Fetch (log ends, high watermark, ISR
//!   expansion), the ISR shrink task and ISR proposals to the controller side;
//! - `acks`: acks=all produce waiting for the high watermark;
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
        }
    }
}
