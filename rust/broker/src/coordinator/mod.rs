//! The coordinator runtime: what every coordinator whose state lives in an internal topic
//! shares, as Kafka 4's `coordinator-common` does for its group, transaction and share
//! coordinators. The group coordinator (`groups`) and the transaction coordinator
//! (`transactions`) are its users; it knows neither.
//!
//! - `runtime`: Kafka's placement of a key on a partition, the broker coordinating a key,
//!   which partitions this broker coordinates now (`Shards`), and loading and unloading
//!   them as leadership moves (`PartitionedCoordinator`, `follow_leadership`);
//! - `internal_log`: replaying a partition of the internal topic and appending to it;
//! - `timers`: tokio timers that hold their coordinator weakly (once, until done, every);
//! - `host`: what a coordinator asks of the broker it runs in (its topics, the internal
//!   topic's creation, the fetch wake-up), so it holds no reference to the broker's state.
//!
//! Dependencies run one way: `groups` and `transactions` use this module; this module uses
//! `cluster` (topics and partitions) and nothing above it.

pub mod host;
pub mod internal_log;
pub mod runtime;
pub mod timers;
