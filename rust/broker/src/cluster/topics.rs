//! The topic registry: every topic this broker hosts, its partitions (opened from the log
//! dir holding each, new ones placed by `log_dir_placement`) and its config overrides.
//!
//! The registry checks what Kafka checks about names and partition counts and opens or
//! closes logs; persisting the result is the caller's job (`BrokerState`, which serialises
//! every metadata change and the store's writes under one admin lock).
//!
//! Locking: the map is read-mostly (RwLock), so is each topic's partition list; each
//! partition guards its own log.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use kafkalite_core::storage::LogConfig;

use super::file_store::TopicRecord;
use super::log_dir_placement;
use super::partition::{Partition, ReplicaState};
use super::partition_dirs;
use super::replica_move::Moves;
pub use super::topic::{Placement, Slot, Topic, INTERNAL_OFFSETS_TOPIC, INTERNAL_TXN_TOPIC};
use crate::errors::{codes, ApiError};

/// Kafka's topic name rules: 1..=249 of [a-zA-Z0-9._-], not "." or "..", refused in
/// Kafka 4's words (`Topic.validate`).
pub fn validate_topic_name(name: &str) -> Result<(), ApiError> {
    let why = if name.is_empty() {
        "the empty string is not allowed".to_string()
    } else if name == "." || name == ".." {
        format!("'{name}' is not allowed")
    } else if name.chars().count() > 249 {
        format!("the length of '{name}' is longer than the max allowed length 249")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        format!(
            "'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' \
             and '-'"
        )
    } else {
        return Ok(());
    };
    Err(ApiError::new(
        codes::INVALID_TOPIC_EXCEPTION,
        format!("Topic name is invalid: {why}"),
    ))
}

pub struct TopicRegistry {
    log_dirs: Vec<PathBuf>,
    /// Replica state of every partition this registry opens (single node: this node leads).
    replica_state: ReplicaState,
    topics: RwLock<BTreeMap<String, Arc<Topic>>>,
    /// Partitions being moved to another log dir (AlterReplicaLogDirs).
    moves: Arc<Moves>,
}

impl TopicRegistry {
    #[must_use]
    pub fn new(log_dirs: Vec<PathBuf>, replica_state: ReplicaState) -> TopicRegistry {
        assert!(!log_dirs.is_empty(), "a broker needs at least one log dir");
        TopicRegistry {
            log_dirs,
            replica_state,
            topics: RwLock::new(BTreeMap::new()),
            moves: Arc::default(),
        }
    }

    /// The moves between log dirs under way.
    #[must_use]
    pub fn moves(&self) -> &Arc<Moves> {
        &self.moves
    }

    /// The broker's log dirs, as configured.
    #[must_use]
    pub fn log_dirs(&self) -> &[PathBuf] {
        &self.log_dirs
    }

    #[must_use]
    pub fn get(&self, name: &str) -> Option<Arc<Topic>> {
        self.topics.read().expect("lock").get(name).cloned()
    }

    #[must_use]
    pub fn by_id(&self, id: uuid::Uuid) -> Option<Arc<Topic>> {
        let topics = self.topics.read().expect("lock");
        topics.values().find(|t| t.id == id).cloned()
    }

    #[must_use]
    pub fn names(&self) -> Vec<String> {
        self.topics.read().expect("lock").keys().cloned().collect()
    }

    /// Every topic, in name order.
    #[must_use]
    pub fn all(&self) -> Vec<Arc<Topic>> {
        self.topics
            .read()
            .expect("lock")
            .values()
            .cloned()
            .collect()
    }

    /// The partitions this broker hosts of `topic`, or of every topic when `None`.
    #[must_use]
    pub fn partitions(&self, topic: Option<&str>) -> Vec<Arc<Partition>> {
        let topics = self.topics.read().expect("lock");
        topics
            .values()
            .filter(|t| topic.is_none_or(|name| t.name == name))
            .flat_map(|t| t.hosted())
            .collect()
    }

    /// Every topic as the metadata store keeps them.
    #[must_use]
    pub fn records(&self) -> BTreeMap<String, TopicRecord> {
        let topics = self.topics.read().expect("lock");
        topics
            .iter()
            .map(|(n, t)| (n.clone(), t.record()))
            .collect()
    }

    /// Check a user's new topic as Kafka does: a legal name that is not internal and at
    /// least one partition (whether the name is free is `ensure_absent`, asked under the
    /// caller's admin lock).
    pub fn check_new(name: &str, partitions: i32) -> Result<(), ApiError> {
        validate_topic_name(name)?;
        if name == INTERNAL_OFFSETS_TOPIC || name == INTERNAL_TXN_TOPIC {
            return Err(ApiError::new(
                codes::TOPIC_ALREADY_EXISTS,
                format!("'{name}' is an internal topic"),
            ));
        }
        if partitions < 1 {
            return Err(ApiError::new(
                codes::INVALID_PARTITIONS,
                "Number of partitions was set to an invalid non-positive value.",
            ));
        }
        Ok(())
    }

    pub fn ensure_absent(&self, name: &str) -> Result<(), ApiError> {
        if self.get(name).is_some() {
            return Err(ApiError::new(
                codes::TOPIC_ALREADY_EXISTS,
                format!("Topic '{name}' already exists."),
            ));
        }
        Ok(())
    }

    /// Open a topic's partition logs (existing data is recovered) and register it. With
    /// `fresh` (the topic is being created now) any dir already there is another topic's
    /// and is retired, never opened.
    pub fn open_topic(
        &self,
        name: &str,
        record: TopicRecord,
        log_config: &LogConfig,
        fresh: bool,
    ) -> Result<Arc<Topic>, ApiError> {
        self.open_topic_placed(name, record, log_config, fresh, &|_| Placement::Here)
    }

    /// `open_topic` hosting only the partitions `placement` puts here. The dir of a
    /// partition placed elsewhere is retired if one is left (a crash after the controller
    /// moved the replica away, before its dir was retired).
    pub fn open_topic_placed(
        &self,
        name: &str,
        record: TopicRecord,
        log_config: &LogConfig,
        fresh: bool,
        placement: &dyn Fn(i32) -> Placement,
    ) -> Result<Arc<Topic>, ApiError> {
        let slots = self.open_slots(
            name,
            record.id,
            0..record.partitions,
            log_config,
            fresh,
            placement,
        )?;
        let topic = Arc::new(Topic {
            name: name.to_string(),
            id: record.id,
            configs: RwLock::new(record.configs),
            slots: RwLock::new(slots),
        });
        self.topics
            .write()
            .expect("lock")
            .insert(name.to_string(), Arc::clone(&topic));
        Ok(topic)
    }

    /// Start hosting partition `index` of `topic` (the controller added this broker to its
    /// replicas): open its log, recovering a dir of this topic if one is there.
    pub fn host(
        &self,
        topic: &Topic,
        index: i32,
        log_config: &LogConfig,
    ) -> Result<Arc<Partition>, ApiError> {
        self.host_as(topic, index, log_config, None)
    }

    /// `host`, the partition taking replica state `said` before anyone sees it (Metadata
    /// must not show a new log's default state in between).
    fn host_as(
        &self,
        topic: &Topic,
        index: i32,
        log_config: &LogConfig,
        said: Option<ReplicaState>,
    ) -> Result<Arc<Partition>, ApiError> {
        // Counted before the slots' lock: counting reads every topic's slots.
        let mut counts = self.partitions_per_dir();
        let mut slots = topic.slots.write().expect("lock");
        let slot = usize::try_from(index)
            .ok()
            .and_then(|i| slots.get_mut(i))
            .ok_or_else(|| {
                ApiError::new(
                    codes::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("{} has no partition {index}", topic.name),
                )
            })?;
        if let Slot::Hosted(p) = slot {
            return Ok(Arc::clone(p));
        }
        let partition =
            self.open_partition(&topic.name, topic.id, index, log_config, false, &mut counts)?;
        if let Some(said) = said {
            partition.set_replica_state(said);
        }
        *slot = Slot::Hosted(Arc::clone(&partition));
        Ok(partition)
    }

    /// The partitions placed here whose logs are not open yet (`Placement::Later`): slots
    /// holding the controller's word with a replica list that names `node`.
    pub fn awaiting_logs(&self, node: i32) -> Vec<(Arc<Topic>, i32)> {
        let mut awaiting = Vec::new();
        for topic in self.all() {
            let slots = topic.slots.read().expect("lock");
            let indexes: Vec<i32> = slots
                .iter()
                .zip(0..)
                .filter(
                    |(slot, _)| matches!(slot, Slot::Elsewhere(r) if r.replicas.contains(&node)),
                )
                .map(|(_, index)| index)
                .collect();
            drop(slots);
            awaiting.extend(indexes.into_iter().map(|i| (Arc::clone(&topic), i)));
        }
        awaiting
    }

    /// Open the log of partition `index` of `topic` if it still awaits one here (the topic
    /// still registered, the slot's replica list naming `node`): the partition and the
    /// controller's word on it.
    pub fn host_awaiting(
        &self,
        topic: &Arc<Topic>,
        index: i32,
        node: i32,
        log_config: &LogConfig,
    ) -> Option<Result<(Arc<Partition>, ReplicaState), ApiError>> {
        if !self
            .get(&topic.name)
            .is_some_and(|t| Arc::ptr_eq(&t, topic))
        {
            return None;
        }
        let said = match topic
            .slots
            .read()
            .expect("lock")
            .get(usize::try_from(index).ok()?)
        {
            Some(Slot::Elsewhere(r)) if r.replicas.contains(&node) => r.clone(),
            _ => return None,
        };
        Some(
            self.host_as(topic, index, log_config, Some(said.clone()))
                .map(|p| (p, said)),
        )
    }

    /// Stop hosting partition `index` of `topic` (the controller moved its replica to
    /// other brokers): from now on it is only `replica`, its log is closed and its dir
    /// retired (renamed to `-delete` at once, removed in the background), as a deleted
    /// topic's are.
    pub fn unhost(&self, topic: &Topic, index: i32, replica: ReplicaState) {
        let removed = {
            let mut slots = topic.slots.write().expect("lock");
            let Some(slot) = usize::try_from(index).ok().and_then(|i| slots.get_mut(i)) else {
                return;
            };
            match std::mem::replace(slot, Slot::Elsewhere(replica)) {
                Slot::Hosted(p) => p,
                Slot::Elsewhere(_) => return,
            }
        };
        Self::retire_partitions(&topic.name, &[removed]);
    }

    /// Take the controller's word on a partition hosted elsewhere (no-op for a hosted one,
    /// whose state the caller sets on the partition itself).
    pub fn set_elsewhere_state(topic: &Topic, index: i32, replica: ReplicaState) {
        let mut slots = topic.slots.write().expect("lock");
        if let Some(slot @ Slot::Elsewhere(_)) =
            usize::try_from(index).ok().and_then(|i| slots.get_mut(i))
        {
            *slot = Slot::Elsewhere(replica);
        }
    }

    /// Register a topic again (its removal could not be persisted).
    pub fn restore(&self, topic: Arc<Topic>) {
        self.topics
            .write()
            .expect("lock")
            .insert(topic.name.clone(), topic);
    }

    /// Unregister a topic (its data stays until `delete_data`, so the caller can persist
    /// the removal first).
    pub fn remove(&self, name: &str) -> Result<Arc<Topic>, ApiError> {
        self.topics
            .write()
            .expect("lock")
            .remove(name)
            .ok_or_else(|| {
                // Kafka answers the error's own message.
                ApiError::new(
                    codes::UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                )
            })
    }

    /// Close a removed topic's logs, rename its partition dirs to `-delete` (their names
    /// are free at once) and remove them in the background. A dir that cannot be renamed
    /// is an orphan the next start removes.
    pub fn delete_data(topic: &Topic) {
        Self::retire_partitions(&topic.name, &topic.hosted());
    }

    fn retire_partitions(topic: &str, partitions: &[Arc<Partition>]) {
        let mut retired = Vec::new();
        for p in partitions {
            if let Ok(mut log) = p.log.lock() {
                let _ = log.close();
            }
            let dir = p.dir();
            match partition_dirs::retire(&dir, topic, p.index) {
                Ok(path) => retired.push(path),
                Err(e) => kafkalite_core::logging::error(
                    "kafkalite.cluster.TopicRegistry",
                    &format!("cannot retire {}: {e}", dir.display()),
                ),
            }
        }
        partition_dirs::remove_in_background(retired);
    }

    /// Check that `total` partitions would grow `topic`.
    pub fn check_growth(topic: &Topic, total: i32) -> Result<(), ApiError> {
        let current = topic.partition_count();
        // Kafka 4's words (ReplicationControlManager.createPartitions).
        if total < current {
            return Err(ApiError::new(
                codes::INVALID_PARTITIONS,
                format!(
                    "The topic {} currently has {current} partition(s); {total} would not be \
                     an increase.",
                    topic.name
                ),
            ));
        }
        if total == current {
            return Err(ApiError::new(
                codes::INVALID_PARTITIONS,
                format!("Topic already has {current} partition(s)."),
            ));
        }
        Ok(())
    }

    /// Open the new partitions of `topic` up to `total`.
    pub fn grow(&self, topic: &Topic, total: i32, log_config: &LogConfig) -> Result<(), ApiError> {
        self.grow_placed(topic, total, log_config, &|_| Placement::Here)
    }

    /// `grow`, hosting only the new partitions `placement` puts here.
    pub fn grow_placed(
        &self,
        topic: &Topic,
        total: i32,
        log_config: &LogConfig,
        placement: &dyn Fn(i32) -> Placement,
    ) -> Result<(), ApiError> {
        Self::check_growth(topic, total)?;
        let current = topic.partition_count();
        let new = self.open_slots(
            &topic.name,
            topic.id,
            current..total,
            log_config,
            true,
            placement,
        )?;
        topic.slots.write().expect("lock").extend(new);
        Ok(())
    }

    /// Replace a topic's overrides and apply the resulting config to its open logs.
    pub fn set_configs(topic: &Topic, configs: BTreeMap<String, String>, log_config: &LogConfig) {
        *topic.configs.write().expect("lock") = configs;
        for p in topic.hosted() {
            p.log.lock().expect("lock").set_config(log_config.clone());
        }
    }

    /// Close every log cleanly (clean-shutdown markers).
    pub fn close(&self) -> kafkalite_core::Result<()> {
        for p in self.partitions(None) {
            p.log.lock().expect("lock").close()?;
        }
        Ok(())
    }

    fn open_slots(
        &self,
        topic: &str,
        id: uuid::Uuid,
        indexes: std::ops::Range<i32>,
        log_config: &LogConfig,
        fresh: bool,
        placement: &dyn Fn(i32) -> Placement,
    ) -> Result<Vec<Slot>, ApiError> {
        let mut counts = self.partitions_per_dir();
        indexes
            .map(|index| match placement(index) {
                Placement::Here => self
                    .open_partition(topic, id, index, log_config, fresh, &mut counts)
                    .map(Slot::Hosted),
                Placement::Elsewhere(replica) => {
                    let copies = log_dir_placement::existing(&self.log_dirs, topic, index);
                    Self::retire_dirs(topic, index, copies);
                    Ok(Slot::Elsewhere(replica))
                }
                Placement::Later(replica) => Ok(Slot::Elsewhere(replica)),
            })
            .collect()
    }

    /// How many hosted partitions each log dir holds, in `log_dirs` order (with one log
    /// dir there is nothing to choose, and hosting partitions one at a time must not count
    /// them all each time).
    fn partitions_per_dir(&self) -> Vec<usize> {
        let mut counts = vec![0; self.log_dirs.len()];
        if self.log_dirs.len() == 1 {
            return counts;
        }
        for p in self.partitions(None) {
            let dir = p.dir();
            if let Some(i) = self.log_dirs.iter().position(|d| dir.parent() == Some(d)) {
                counts[i] += 1;
            }
        }
        counts
    }

    /// The dir of partition `index` of `topic`: where a copy is found (the newest of
    /// several, the others retired), else the log dir placement chooses (a `fresh`
    /// partition retires every copy first: they are an earlier topic's).
    fn place(&self, topic: &str, index: i32, fresh: bool, counts: &mut [usize]) -> PathBuf {
        let copies = log_dir_placement::existing(&self.log_dirs, topic, index);
        if fresh {
            Self::retire_dirs(topic, index, copies);
        } else if !copies.is_empty() {
            let (keep, stale) = log_dir_placement::keep_newest(copies);
            Self::retire_dirs(topic, index, stale);
            return keep;
        }
        // No dir online: the first, where opening fails with the storage error.
        let i = if self.log_dirs.len() == 1 {
            0
        } else {
            log_dir_placement::choose(&log_dir_placement::loads(&self.log_dirs, counts))
                .unwrap_or(0)
        };
        counts[i] += 1;
        self.log_dirs[i].join(log_dir_placement::partition_dir_name(topic, index))
    }

    fn retire_dirs(topic: &str, index: i32, dirs: Vec<PathBuf>) {
        let retired = dirs
            .iter()
            .filter_map(|dir| partition_dirs::retire(dir, topic, index).ok())
            .collect();
        partition_dirs::remove_in_background(retired);
    }

    /// The log dir named `path` (as Kafka compares them: absolute paths), if it is one.
    #[must_use]
    pub fn log_dir(&self, path: &str) -> Option<PathBuf> {
        let wanted = std::path::absolute(path).ok()?;
        self.log_dirs
            .iter()
            .find(|d| std::path::absolute(d).is_ok_and(|d| d == wanted))
            .cloned()
    }

    fn open_partition(
        &self,
        topic: &str,
        id: uuid::Uuid,
        index: i32,
        log_config: &LogConfig,
        fresh: bool,
        counts: &mut [usize],
    ) -> Result<Arc<Partition>, ApiError> {
        let dir = self.place(topic, index, fresh, counts);
        partition_dirs::prepare(&dir, topic, index, id, fresh).map_err(|e| {
            ApiError::new(
                codes::KAFKA_STORAGE_ERROR,
                format!("cannot prepare {}: {e}", dir.display()),
            )
        })?;
        Partition::open(
            topic,
            index,
            dir,
            log_config.clone(),
            self.replica_state.clone(),
        )
        .map(Arc::new)
        .map_err(ApiError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(partitions: i32) -> TopicRecord {
        TopicRecord {
            id: uuid::Uuid::new_v4(),
            partitions,
            configs: BTreeMap::new(),
        }
    }

    #[test]
    fn partitions_spread_over_log_dirs_and_grow() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let registry = TopicRegistry::new(
            vec![a.path().to_path_buf(), b.path().to_path_buf()],
            ReplicaState::single_node(1),
        );
        let config = LogConfig::default();
        let topic = registry.open_topic("t", record(3), &config, true).unwrap();
        assert!(a.path().join("t-0").is_dir());
        assert!(b.path().join("t-1").is_dir());
        assert!(a.path().join("t-2").is_dir());
        assert_eq!(
            registry.check_growth_err(&topic, 3),
            codes::INVALID_PARTITIONS
        );
        registry.grow(&topic, 4, &config).unwrap();
        assert!(b.path().join("t-3").is_dir());
        assert_eq!(registry.partitions(Some("t")).len(), 4);
        assert_eq!(registry.records()["t"].partitions, 4);
        assert_eq!(registry.by_id(topic.id).unwrap().name, "t");
        let removed = registry.remove("t").unwrap();
        assert!(registry.get("t").is_none());
        assert!(
            a.path().join("t-0").exists(),
            "data stays until delete_data"
        );
        TopicRegistry::delete_data(&removed);
        assert!(!a.path().join("t-0").exists(), "renamed to -delete at once");
        assert_eq!(
            registry.remove("t").err().unwrap().code,
            codes::UNKNOWN_TOPIC_OR_PARTITION
        );
    }

    #[test]
    fn partitions_placed_later_show_first_and_keep_their_data() {
        let dir = tempfile::tempdir().unwrap();
        let registry =
            TopicRegistry::new(vec![dir.path().to_path_buf()], ReplicaState::single_node(1));
        let config = LogConfig::default();
        let rec = record(2);
        let id = rec.id;
        let topic = registry.open_topic("t", rec, &config, true).unwrap();
        let p1 = topic.partition(1).unwrap();
        let batch = kafkalite_core::records::encode_batch(
            &[kafkalite_core::records::RecordInput {
                timestamp: 1,
                key: None,
                value: Some(b"v".to_vec()),
                headers: Vec::new(),
            }],
            kafkalite_core::records::Compression::None,
            0,
        )
        .unwrap();
        p1.append(&batch, 1).unwrap();
        p1.log.lock().unwrap().close().unwrap();
        drop(p1);
        registry.remove("t").unwrap();
        drop(topic);

        // Reopened as a snapshot opens a topic: every slot shows the controller's word
        // and no dir is made or retired until `host`.
        let said = ReplicaState {
            leader: 1,
            leader_epoch: 4,
            replicas: vec![1, 2],
            isr: vec![1, 2],
        };
        let reopened = registry
            .open_topic_placed(
                "t",
                TopicRecord {
                    id,
                    partitions: 3,
                    configs: BTreeMap::new(),
                },
                &config,
                false,
                &|_| Placement::Later(said.clone()),
            )
            .unwrap();
        assert!(reopened.hosted().is_empty());
        assert_eq!(reopened.replica_states(), vec![said.clone(); 3]);
        assert_eq!(
            reopened.hosted_or_code(0, 1, 4).err(),
            Some(codes::NOT_LEADER_OR_FOLLOWER)
        );
        assert!(dir.path().join("t-1").is_dir(), "the data is kept");
        assert!(!dir.path().join("t-2").exists(), "nothing made yet");

        let p1 = registry.host(&reopened, 1, &config).unwrap();
        assert_eq!(p1.log_end_offset(), 1, "recovered");
        registry.host(&reopened, 2, &config).unwrap();
        assert!(dir.path().join("t-2").is_dir());
    }

    #[test]
    fn new_topics_are_checked_as_kafka_does() {
        let dir = tempfile::tempdir().unwrap();
        let registry =
            TopicRegistry::new(vec![dir.path().to_path_buf()], ReplicaState::single_node(1));
        registry
            .open_topic("taken", record(1), &LogConfig::default(), true)
            .unwrap();
        let code = |name: &str, n: i32| {
            TopicRegistry::check_new(name, n)
                .and_then(|()| registry.ensure_absent(name))
                .err()
                .map(|e| e.code)
        };
        assert_eq!(code("fresh", 1), None);
        assert_eq!(code("taken", 1), Some(codes::TOPIC_ALREADY_EXISTS));
        assert_eq!(
            code(INTERNAL_OFFSETS_TOPIC, 1),
            Some(codes::TOPIC_ALREADY_EXISTS)
        );
        assert_eq!(code("fresh", 0), Some(codes::INVALID_PARTITIONS));
        assert_eq!(code("bad/name", 1), Some(codes::INVALID_TOPIC_EXCEPTION));
        assert_eq!(code("..", 1), Some(codes::INVALID_TOPIC_EXCEPTION));
        assert_eq!(
            code(&"x".repeat(250), 1),
            Some(codes::INVALID_TOPIC_EXCEPTION)
        );
    }

    impl TopicRegistry {
        fn check_growth_err(&self, topic: &Topic, total: i32) -> i16 {
            self.grow(topic, total, &LogConfig::default())
                .unwrap_err()
                .code
        }
    }
}
