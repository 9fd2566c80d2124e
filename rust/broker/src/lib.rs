//! kafkalite-broker: a single-node Kafka broker over the real wire protocol.
//!
//! Shape: `broker` starts a tokio runtime that owns the listeners; `net` reads each
//! connection's size-bounded frames and hands its requests, in order (as Kafka does: one in
//! flight per connection), with a `RequestContext` to the handlers, which decode with the
//! generated `kafka-protocol` codec and act on `BrokerState`, whose partitions wrap the
//! core's `PartitionLog`. Produce and Fetch never touch Python; fetched record
//! bytes go from the segment file to the socket with sendfile. With `zookeeper.connect`
//! set it is one broker of a cluster: `cluster_sync` takes the controller's decisions.

pub mod broker;
pub mod cluster;
pub mod cluster_sync;
pub mod config;
pub mod coordinator;
pub mod errors;
pub mod fd_budget;
pub mod features;
pub mod groups;
pub mod handlers;
pub mod log_maintenance;
pub mod log_scrubber;
pub mod metrics;
pub mod net;
pub mod replication;
pub mod response;
pub mod security;
pub mod share;
pub mod state;
pub mod telemetry;
pub mod transactions;

pub use broker::Broker;
pub use config::BrokerConfig;
