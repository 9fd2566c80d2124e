//! Partition logs: segments with offset and time indexes, roll, recovery, truncation,
//! retention, compaction; beside each log, the idempotent producers' state and the
//! leader-epoch cache. The layout on disk is Kafka's:
//! `<dir>/<20-digit base offset>.log|.index|.timeindex`, `<dir>/leader-epoch-checkpoint`.

mod batch_filter;
mod clean_files;
pub mod cleaner;
pub mod clock;
pub mod config;
pub mod damage;
mod dir_failure;
pub mod dir_lock;
mod entry_file;
mod files;
pub mod leader_epoch_cache;
pub mod log;
pub mod offset_index;
pub mod offset_map;
pub mod producer_state;
mod record_view;
pub mod scan;
pub mod scrubber;
pub mod segment;
pub mod time_index;
pub mod txn_index;

pub use cleaner::{
    compact_shared, compact_shared_with_transactions, CleanedLog, CompactionJob, CompactionStats,
};
pub use config::{CleanupPolicy, LogConfig};
pub use dir_lock::DirLock;
pub use leader_epoch_cache::{EpochEntry, LeaderEpochCache};
pub use log::{AppendInfo, PartitionLog, ReadSlice};
pub use producer_state::{ProducerStateTable, Verdict};
pub use txn_index::{AbortedTxn, TxnIndex};

#[cfg(test)]
mod damage_tests;
#[cfg(test)]
mod log_tests;
