//! A Kafka client over the same generated `kafka-protocol` codec the broker serves: one
//! connection per broker with size-bounded response framing and ApiVersions negotiation,
//! and the requests the broker's own outgoing traffic and the Spark source need —
//! Metadata, ListOffsets, Fetch (raw record-batch bytes, no per-record work), Produce
//! (raw batch bytes), InitProducerId (an idempotent producer's id and epoch),
//! FindCoordinator and WriteTxnMarkers (a transaction coordinator's markers).
//!
//! [`Client`] is async on tokio (the replication follower fetcher runs it inside the
//! broker's runtime); [`BlockingClient`] wraps it in a current-thread runtime for callers
//! without one (the Python binding).

mod address;
mod batcher;
mod blocking;
mod client;
mod cluster;
mod config;
mod connection;
mod error;
mod fetch;
mod find_coordinator;
mod init_producer_id;
mod list_offsets;
mod metadata;
mod partitioner;
mod produce;
mod security;
mod versions;
mod write_txn_markers;

pub use address::{parse_bootstrap, Address};
pub use batcher::{Batch, RecordBatcher};
pub use blocking::BlockingClient;
pub use client::Client;
pub use cluster::{Metadata, PartitionMetadata, TopicMetadata, TopicPartition};
pub use config::ClientConfig;
pub use connection::Connection;
pub use error::{Error, Result};
pub use fetch::{FetchedPartition, READ_COMMITTED, READ_UNCOMMITTED};
pub use list_offsets::{EARLIEST, LATEST};
pub use partitioner::{murmur2, partition_for_key};
pub use produce::Produced;
pub use security::{ClientSecurity, SaslPlain, TlsSettings, Transport};
pub use write_txn_markers::TxnMarker;
