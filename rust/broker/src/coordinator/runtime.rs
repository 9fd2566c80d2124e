//! Coordinators whose state lives in the partitions of an internal topic: the group
//! coordinator over `__consumer_offsets`, and in the same way a transaction coordinator
//! over `__transaction_state`. Kafka places each key (group id, transactional id) on
//! partition `abs(key.hashCode) % partitions`, and the broker leading that partition
//! coordinates the key. This module is that mechanism, with nothing group-specific in it:
//!
//! - `partition_for`: Kafka's placement of a key;
//! - `locate`: the broker coordinating a key, as FindCoordinator answers;
//! - `Shards`: which partitions this broker coordinates now (loading or loaded), asked by
//!   every request of the coordinator (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS);
//! - `PartitionedCoordinator` + `follow_leadership`: after each snapshot from the
//!   controller, a partition this broker now leads is loaded from its log (off the caller's
//!   thread, so requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS) and one it no longer
//!   leads is unloaded (its clients must go to the new leader).
//!
//! On a single node `Shards::everything` makes the checks pass for every key, and nothing
//! is ever loaded or unloaded here: the coordinator replays its topic at start.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use kafkalite_core::error_codes as codes;

use crate::cluster::metadata_view::BrokerNode;
use crate::cluster::partition::Partition;
use crate::cluster::topic::Topic;
use crate::errors::ApiError;

/// Kafka's partition of a key: `Utils.abs(key.hashCode()) % partitions`, with Java's
/// String.hashCode over UTF-16 code units (`Utils.abs(i32::MIN)` is 0).
#[must_use]
pub fn partition_for(key: &str, partitions: i32) -> i32 {
    let hash = key
        .encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)));
    let abs = if hash == i32::MIN { 0 } else { hash.abs() };
    abs % partitions.max(1)
}

/// The live broker that leads `key`'s partition of `topic`: COORDINATOR_NOT_AVAILABLE
/// while the topic is missing or that partition has no live leader (clients retry).
pub fn locate(
    topic: Option<&Topic>,
    key: &str,
    brokers: &[BrokerNode],
) -> Result<BrokerNode, ApiError> {
    let Some(topic) = topic else {
        return Err(ApiError::new(
            codes::COORDINATOR_NOT_AVAILABLE,
            "the coordinator's internal topic is being created",
        ));
    };
    let index = partition_for(key, topic.partition_count());
    let leader = topic
        .replica_states()
        .get(usize::try_from(index).unwrap_or(usize::MAX))
        .map_or(-1, |r| r.leader);
    brokers
        .iter()
        .find(|b| b.node_id == leader)
        .cloned()
        .ok_or_else(|| {
            ApiError::new(
                codes::COORDINATOR_NOT_AVAILABLE,
                format!(
                    "partition {index} of {} has no live leader (leader {leader})",
                    topic.name
                ),
            )
        })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shard {
    /// Being loaded by the load of this generation.
    Loading(u64),
    Loaded,
}

/// The partitions of the internal topic this broker coordinates.
pub struct Shards {
    /// `None`: every partition, always loaded (single node).
    owned: RwLock<Option<HashMap<i32, Shard>>>,
    /// Partitions of the internal topic as the cluster has it (0: no topic yet).
    partitions: AtomicI32,
    generations: AtomicU64,
    /// When this broker last asked the controller side to create the topic (ms).
    creation_asked_ms: AtomicI64,
    /// One `follow_leadership` at a time: two snapshots applied at once must not decide
    /// from different views.
    following: Mutex<()>,
}

impl Shards {
    /// Single node: this broker coordinates every key.
    #[must_use]
    pub fn everything() -> Shards {
        Shards::with(None)
    }

    /// Cluster mode: nothing until the controller makes this broker a leader.
    #[must_use]
    pub fn none() -> Shards {
        Shards::with(Some(HashMap::new()))
    }

    fn with(owned: Option<HashMap<i32, Shard>>) -> Shards {
        Shards {
            owned: RwLock::new(owned),
            partitions: AtomicI32::new(0),
            generations: AtomicU64::new(1),
            creation_asked_ms: AtomicI64::new(i64::MIN),
            following: Mutex::new(()),
        }
    }

    #[must_use]
    pub fn is_cluster(&self) -> bool {
        self.owned.read().expect("lock").is_some()
    }

    /// The partition `key` lives in (cluster mode; 0 before the topic exists).
    #[must_use]
    pub fn partition_of(&self, key: &str) -> i32 {
        partition_for(key, self.partitions.load(Ordering::Acquire))
    }

    /// Whether this broker serves `key` now: NONE, NOT_COORDINATOR or
    /// COORDINATOR_LOAD_IN_PROGRESS.
    #[must_use]
    pub fn check(&self, key: &str) -> i16 {
        let owned = self.owned.read().expect("lock");
        let Some(owned) = owned.as_ref() else {
            return codes::NONE;
        };
        if self.partitions.load(Ordering::Acquire) == 0 {
            return codes::NOT_COORDINATOR;
        }
        match owned.get(&self.partition_of(key)) {
            None => codes::NOT_COORDINATOR,
            Some(Shard::Loading(_)) => codes::COORDINATOR_LOAD_IN_PROGRESS,
            Some(Shard::Loaded) => codes::NONE,
        }
    }

    /// Whether a partition is still being loaded.
    #[must_use]
    pub fn is_loading(&self) -> bool {
        let owned = self.owned.read().expect("lock");
        owned
            .as_ref()
            .is_some_and(|o| o.values().any(|s| matches!(s, Shard::Loading(_))))
    }

    /// Partitions this broker coordinates (loading or loaded).
    #[must_use]
    pub fn owned(&self) -> Vec<i32> {
        let owned = self.owned.read().expect("lock");
        owned
            .as_ref()
            .map(|o| o.keys().copied().collect())
            .unwrap_or_default()
    }

    /// Start coordinating `index`: the generation its load must finish with, or `None`
    /// when it is already this broker's (a new leader epoch of the same leader).
    fn begin(&self, index: i32) -> Option<u64> {
        let mut owned = self.owned.write().expect("lock");
        let owned = owned.as_mut()?;
        if owned.contains_key(&index) {
            return None;
        }
        let generation = self.generations.fetch_add(1, Ordering::Relaxed);
        owned.insert(index, Shard::Loading(generation));
        Some(generation)
    }

    /// The load of `generation` is done: serve `index`, unless it was unloaded (or
    /// reloaded) meanwhile, in which case the load's result must be thrown away (false).
    /// The coordinator calls this under the lock that guards its state, so a load
    /// and an unload never interleave.
    pub fn finish(&self, index: i32, generation: u64) -> bool {
        let mut owned = self.owned.write().expect("lock");
        match owned.as_mut().and_then(|o| o.get_mut(&index)) {
            Some(shard) if *shard == Shard::Loading(generation) => {
                *shard = Shard::Loaded;
                true
            }
            _ => false,
        }
    }

    /// Stop coordinating `index` (called by the coordinator's `unload`, under its lock).
    pub fn release(&self, index: i32) {
        if let Some(owned) = self.owned.write().expect("lock").as_mut() {
            owned.remove(&index);
        }
    }

    /// Whether to ask for the internal topic now: at most once a second, so a burst of
    /// FindCoordinator requests makes one request to the controller side.
    #[must_use]
    pub fn should_ask_creation(&self, now_ms: i64) -> bool {
        let last = self.creation_asked_ms.load(Ordering::Acquire);
        now_ms.saturating_sub(last) >= 1000
            && self
                .creation_asked_ms
                .compare_exchange(last, now_ms, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }
}

/// A coordinator whose state is partitioned over an internal topic.
pub trait PartitionedCoordinator: Send + Sync + 'static {
    /// The internal topic (`__consumer_offsets`, `__transaction_state`).
    fn topic_name(&self) -> &'static str;
    fn shards(&self) -> &Shards;
    /// The topic as the cluster now has it (`None`: it does not exist): where appends go.
    fn attach(&self, topic: Option<&Arc<Topic>>);
    /// Rebuild the state kept in `partition` from its log, then install it if
    /// `shards().finish(partition.index, generation)` says the partition is still this
    /// broker's (under the same lock as `unload`). Runs off the request path.
    fn load(self: &Arc<Self>, partition: &Arc<Partition>, generation: u64);
    /// Drop the state of partition `index` and `shards().release(index)`, under one lock;
    /// waiting clients are told NOT_COORDINATOR.
    fn unload(&self, index: i32);
    /// On a single node: create the internal topic now if it is not there yet, as Kafka
    /// does at the first FindCoordinator for the coordinator's key type (a client sees it
    /// in Metadata from then on, before any group or transaction wrote to it). A failure
    /// is left for the first write to report.
    fn create_local_topic(&self);
}

/// Follow the controller's decisions about `coordinator`'s topic on broker `node`: load
/// the partitions it now leads (on a thread of its own, inside `runtime` when given, so
/// timers can start) and unload those it no longer leads.
pub fn follow_leadership<C: PartitionedCoordinator>(
    coordinator: &Arc<C>,
    topic: Option<&Arc<Topic>>,
    node: i32,
    runtime: Option<tokio::runtime::Handle>,
) {
    let shards = coordinator.shards();
    if !shards.is_cluster() {
        return;
    }
    let _following = shards.following.lock().expect("lock");
    let count = topic.map_or(0, |t| t.partition_count());
    if shards.partitions.load(Ordering::Acquire) != count {
        // A recreated topic (or its first sight): everything is placed anew.
        for index in shards.owned() {
            coordinator.unload(index);
        }
    }
    coordinator.attach(topic);
    shards.partitions.store(count, Ordering::Release);
    let led: BTreeSet<i32> = topic
        .map(|t| {
            t.hosted()
                .iter()
                .filter(|p| p.replica_state().leader == node)
                .map(|p| p.index)
                .collect()
        })
        .unwrap_or_default();
    for index in shards.owned() {
        if !led.contains(&index) {
            coordinator.unload(index);
            log(&format!(
                "Unloaded partition {index} of {} (no longer its leader)",
                coordinator.topic_name()
            ));
        }
    }
    let to_load: Vec<(Arc<Partition>, u64)> = led
        .iter()
        .filter_map(|&index| {
            let generation = shards.begin(index)?;
            topic?.partition(index).map(|p| (p, generation))
        })
        .collect();
    if to_load.is_empty() {
        return;
    }
    let coordinator = Arc::clone(coordinator);
    std::thread::Builder::new()
        .name(format!("kafkalite-load-{}", coordinator.topic_name()))
        .spawn(move || {
            let _runtime = runtime.as_ref().map(tokio::runtime::Handle::enter);
            for (partition, generation) in to_load {
                let started = std::time::Instant::now();
                coordinator.load(&partition, generation);
                log(&format!(
                    "Loaded partition {} of {} in {} ms",
                    partition.index,
                    coordinator.topic_name(),
                    started.elapsed().as_millis()
                ));
            }
        })
        .expect("spawn a coordinator load thread");
}

fn log(message: &str) {
    kafkalite_core::logging::info("kafkalite.coordinator.CoordinatorShards", message);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_matches_kafka() {
        // Java: "test".hashCode() == 3556498.
        assert_eq!(partition_for("test", 50), 3_556_498 % 50);
        assert_eq!(partition_for("", 50), 0);
        // A hash of i32::MIN maps to partition 0 (Kafka's Utils.abs).
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        // Non-ASCII: UTF-16 code units, as Java hashes them.
        let h = "é".encode_utf16().next().unwrap() as i32;
        assert_eq!(partition_for("é", 50), h % 50);
        for g in ["a", "group-1", "ünïcode", "x".repeat(1000).as_str()] {
            assert!((0..50).contains(&partition_for(g, 50)));
        }
    }

    #[test]
    fn shards_load_and_unload() {
        let single = Shards::everything();
        assert_eq!(single.check("g"), codes::NONE);
        assert_eq!(single.begin(0), None);

        let s = Shards::none();
        assert_eq!(s.check("g"), codes::NOT_COORDINATOR, "no topic yet");
        s.partitions.store(1, Ordering::Release);
        assert_eq!(s.check("g"), codes::NOT_COORDINATOR);
        let first = s.begin(0).unwrap();
        assert_eq!(s.begin(0), None, "already this broker's");
        assert_eq!(s.check("g"), codes::COORDINATOR_LOAD_IN_PROGRESS);
        assert!(s.is_loading());
        // Unloaded and taken again while the first load ran: that load's result is stale.
        s.release(0);
        let second = s.begin(0).unwrap();
        assert!(!s.finish(0, first));
        assert_eq!(s.check("g"), codes::COORDINATOR_LOAD_IN_PROGRESS);
        assert!(s.finish(0, second));
        assert!(!s.is_loading());
        assert_eq!(s.check("g"), codes::NONE);
        assert_eq!(s.owned(), vec![0]);
        s.release(0);
        assert_eq!(s.check("g"), codes::NOT_COORDINATOR);
        assert!(!s.finish(0, second));
    }

    #[test]
    fn creation_is_asked_once_a_second() {
        let s = Shards::none();
        assert!(s.should_ask_creation(10_000));
        assert!(!s.should_ask_creation(10_500));
        assert!(s.should_ask_creation(11_000));
    }
}
