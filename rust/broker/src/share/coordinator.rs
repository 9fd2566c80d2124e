//! The share coordinator: the share-partitions' persisted state in `__share_group_state`,
//! as Kafka 4's share-coordinator keeps it, a third user of the coordinator runtime
//! (`coordinator::runtime` placement and shards, `coordinator::internal_log` replay and
//! append). A share-partition `group:topicId:partition` lives on partition
//! `partition_for(that key)`; the broker leading that partition coordinates it (keyed by
//! the state topic's partition, as the group coordinator is by `__consumer_offsets`').
//!
//! What it keeps per share-partition is the last snapshot written (start offset, state
//! epoch, the in-flight batches with their states and delivery counts); the partition
//! leader's share-partition (`partitions`) reads it when it first initializes and writes a
//! new one after each change of acknowledged, archived or released state.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::Duration;

use kafkalite_core::config::BrokerSettings;
use kafkalite_core::records::{Compression, RecordInput};

use super::records::{
    decode_key, decode_value, encode_key, encode_value, SharePartitionKey, Snapshot,
};
use crate::cluster::partition::Partition;
use crate::cluster::topic::Topic;
use crate::coordinator::host::CoordinatorHost;
use crate::coordinator::internal_log::{self, Entry, Placement, Writes};
use crate::coordinator::runtime::{partition_for, PartitionedCoordinator, Shards};
use crate::errors::{codes, ApiError};

pub const SHARE_STATE_TOPIC: &str = "__share_group_state";
const LOGGER: &str = "kafkalite.coordinator.share.ShareCoordinator";

/// Kafka's `share.coordinator.*` keys this coordinator reads.
#[derive(Clone, Debug)]
pub struct ShareCoordinatorConfig {
    pub partitions: i32,
    pub segment_bytes: i32,
    pub writes: Writes,
}

impl ShareCoordinatorConfig {
    #[must_use]
    pub fn from_settings(s: &BrokerSettings) -> ShareCoordinatorConfig {
        ShareCoordinatorConfig {
            partitions: s.int("share.coordinator.state.topic.num.partitions"),
            segment_bytes: s.int("share.coordinator.state.topic.segment.bytes"),
            writes: Writes {
                compression: Compression::None,
                replication_wait: Duration::from_millis(
                    u64::try_from(s.int("share.coordinator.write.timeout.ms")).unwrap_or(5000),
                ),
                load_buffer_bytes: usize::try_from(s.int("share.coordinator.load.buffer.size"))
                    .unwrap_or(1),
            },
        }
    }
}

pub struct ShareCoordinator {
    config: ShareCoordinatorConfig,
    shards: Shards,
    placement: Placement,
    topic: RwLock<Option<Arc<Topic>>>,
    /// The last snapshot of every share-partition this broker coordinates, by state-topic
    /// partition.
    states: Mutex<BTreeMap<i32, HashMap<SharePartitionKey, Snapshot>>>,
    host: OnceLock<Weak<dyn CoordinatorHost>>,
    creating: Mutex<()>,
}

impl ShareCoordinator {
    #[must_use]
    pub fn new(config: ShareCoordinatorConfig, cluster_node: Option<i32>) -> Arc<ShareCoordinator> {
        let (shards, placement) = match cluster_node {
            Some(node) => (Shards::none(), Placement::Cluster { node }),
            None => (Shards::everything(), Placement::SingleNode),
        };
        Arc::new(ShareCoordinator {
            config,
            shards,
            placement,
            topic: RwLock::new(None),
            states: Mutex::new(BTreeMap::new()),
            host: OnceLock::new(),
            creating: Mutex::new(()),
        })
    }

    /// Bind to the broker; on a single node replay the state topic if it exists.
    pub fn open(self: &Arc<Self>, host: &Arc<dyn CoordinatorHost>) -> anyhow::Result<()> {
        let _ = self.host.set(Arc::downgrade(host));
        if self.shards.is_cluster() {
            return Ok(());
        }
        if let Some(topic) = host.topic(SHARE_STATE_TOPIC) {
            for partition in topic.hosted() {
                let loaded = self.replay(&partition)?;
                self.states
                    .lock()
                    .expect("lock")
                    .insert(partition.index, loaded);
            }
            *self.topic.write().expect("lock") = Some(topic);
        }
        Ok(())
    }

    fn replay(
        &self,
        partition: &Partition,
    ) -> anyhow::Result<HashMap<SharePartitionKey, Snapshot>> {
        let mut loaded = HashMap::new();
        internal_log::replay(partition, self.config.writes.load_buffer_bytes, |entry| {
            let Entry::Records { records, .. } = entry else {
                return;
            };
            for r in records {
                let Some(key) = r.key.as_deref().and_then(decode_key) else {
                    continue;
                };
                match r.value.as_deref() {
                    None => {
                        loaded.remove(&key);
                    }
                    Some(v) => {
                        if let Some(s) = decode_value(v) {
                            loaded.insert(key, s);
                        }
                    }
                }
            }
        })?;
        Ok(loaded)
    }

    fn index_of(&self, key: &SharePartitionKey) -> i32 {
        let n = self
            .topic
            .read()
            .expect("lock")
            .as_ref()
            .map_or(self.config.partitions, |t| t.partition_count());
        partition_for(&key.coordinator_key(), n)
    }

    /// The persisted state of `key` (ReadShareGroupState): `None` when never written.
    pub fn read(&self, key: &SharePartitionKey) -> Result<Option<Snapshot>, ApiError> {
        self.check(key)?;
        let index = self.index_of(key);
        Ok(self
            .states
            .lock()
            .expect("lock")
            .get(&index)
            .and_then(|m| m.get(key))
            .cloned())
    }

    fn check(&self, key: &SharePartitionKey) -> Result<(), ApiError> {
        match self.shards.check(&key.coordinator_key()) {
            codes::NONE => Ok(()),
            code => Err(ApiError::new(
                code,
                format!("this broker does not coordinate {}", key.coordinator_key()),
            )),
        }
    }

    /// Write `snapshot` as `key`'s state (WriteShareGroupState), or forget `key` (`None`,
    /// a tombstone: DeleteShareGroupState).
    pub fn write(
        &self,
        key: &SharePartitionKey,
        snapshot: Option<Snapshot>,
    ) -> Result<(), ApiError> {
        self.check(key)?;
        let topic = self.topic()?;
        let index = partition_for(&key.coordinator_key(), topic.partition_count());
        let partition = topic.partition(index).ok_or_else(|| {
            ApiError::new(
                codes::NOT_COORDINATOR,
                format!("this broker hosts no replica of {SHARE_STATE_TOPIC}-{index}"),
            )
        })?;
        let host = self.host()?;
        let record = RecordInput {
            timestamp: kafkalite_core::storage::clock::now_ms(),
            key: Some(encode_key(key)),
            value: snapshot.as_ref().map(encode_value),
            headers: Vec::new(),
        };
        let mut states = self.states.lock().expect("lock");
        internal_log::append(
            &partition,
            &[record],
            None,
            kafkalite_core::storage::clock::now_ms(),
            self.placement,
            self.config.writes,
            true,
            host.data_arrived(),
        )?;
        let m = states.entry(index).or_default();
        match snapshot {
            Some(s) => {
                m.insert(key.clone(), s);
            }
            None => {
                m.remove(key);
            }
        }
        Ok(())
    }

    /// InitializeShareGroupState: a share-partition's state starts at `start_offset` under
    /// `state_epoch` (FENCED_STATE_EPOCH when a newer epoch is already there).
    pub fn initialize(
        &self,
        key: &SharePartitionKey,
        state_epoch: i32,
        start_offset: i64,
    ) -> Result<(), ApiError> {
        let now = kafkalite_core::storage::clock::now_ms();
        let previous = self.read(key)?;
        if let Some(p) = &previous {
            if state_epoch < p.state_epoch {
                return Err(fenced_state(state_epoch, p.state_epoch));
            }
        }
        self.write(
            key,
            Some(Snapshot {
                snapshot_epoch: previous.as_ref().map_or(0, |p| p.snapshot_epoch + 1),
                state_epoch,
                leader_epoch: -1,
                start_offset,
                delivery_complete_count: 0,
                create_timestamp: now,
                write_timestamp: now,
                batches: Vec::new(),
            }),
        )
    }

    /// WriteShareGroupState: merge a leader's update into the stored state, as Kafka's
    /// share coordinator does: the new start offset drops what lies below it, the written
    /// batches override the states of their offsets. A stale state epoch is
    /// FENCED_STATE_EPOCH, a stale leader epoch FENCED_LEADER_EPOCH.
    #[allow(clippy::too_many_arguments)]
    pub fn apply_write(
        &self,
        key: &SharePartitionKey,
        state_epoch: i32,
        leader_epoch: i32,
        start_offset: i64,
        delivery_complete_count: i32,
        batches: &[super::partition_state::StateBatch],
    ) -> Result<(), ApiError> {
        let now = kafkalite_core::storage::clock::now_ms();
        let previous = self.read(key)?;
        if let Some(p) = &previous {
            if state_epoch < p.state_epoch {
                return Err(fenced_state(state_epoch, p.state_epoch));
            }
            if leader_epoch < p.leader_epoch {
                return Err(ApiError::new(
                    codes::FENCED_LEADER_EPOCH,
                    format!(
                        "The leader epoch {leader_epoch} is older than the stored {}.",
                        p.leader_epoch
                    ),
                ));
            }
        }
        let start = if start_offset >= 0 {
            start_offset
        } else {
            previous.as_ref().map_or(0, |p| p.start_offset)
        };
        let mut merged: BTreeMap<i64, (i8, i16)> = BTreeMap::new();
        let old = previous.as_ref().map_or(&[][..], |p| &p.batches[..]);
        for &(first, last, state, count) in old.iter().chain(batches) {
            // Bounded by what a share-partition can hold in flight.
            if last < first || last - first > 1_000_000 {
                return Err(ApiError::new(
                    codes::INVALID_REQUEST,
                    format!("Invalid state batch {first}-{last}"),
                ));
            }
            for offset in first.max(start)..=last {
                merged.insert(offset, (state, count));
            }
        }
        let mut runs: Vec<super::partition_state::StateBatch> = Vec::new();
        for (offset, (state, count)) in merged {
            match runs.last_mut() {
                Some(r) if r.1 + 1 == offset && r.2 == state && r.3 == count => r.1 = offset,
                _ => runs.push((offset, offset, state, count)),
            }
        }
        self.write(
            key,
            Some(Snapshot {
                snapshot_epoch: previous.as_ref().map_or(0, |p| p.snapshot_epoch + 1),
                state_epoch,
                leader_epoch,
                start_offset: start,
                delivery_complete_count,
                create_timestamp: previous.as_ref().map_or(now, |p| p.create_timestamp),
                write_timestamp: now,
                batches: runs,
            }),
        )
    }

    /// Every persisted share-partition of `group` (describe offsets, deletion).
    #[must_use]
    pub fn group_states(&self, group: &str) -> Vec<(SharePartitionKey, Snapshot)> {
        let states = self.states.lock().expect("lock");
        states
            .values()
            .flat_map(|m| m.iter())
            .filter(|(k, _)| k.group_id == group)
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect()
    }

    fn host(&self) -> Result<Arc<dyn CoordinatorHost>, ApiError> {
        self.host.get().and_then(Weak::upgrade).ok_or_else(|| {
            ApiError::new(codes::COORDINATOR_NOT_AVAILABLE, "the broker is stopping")
        })
    }

    /// The state topic: created at the first write on a single node, as Kafka's share
    /// coordinator's topic is at the first share group's use.
    fn topic(&self) -> Result<Arc<Topic>, ApiError> {
        if let Some(t) = self.topic.read().expect("lock").clone() {
            return Ok(t);
        }
        if self.shards.is_cluster() {
            return Err(ApiError::new(
                codes::NOT_COORDINATOR,
                format!("{SHARE_STATE_TOPIC} is not here yet"),
            ));
        }
        let _creating = self.creating.lock().expect("lock");
        if let Some(t) = self.topic.read().expect("lock").clone() {
            return Ok(t);
        }
        let topic = self.host()?.create_internal_topic(
            SHARE_STATE_TOPIC,
            self.config.partitions,
            self.topic_configs(),
        )?;
        kafkalite_core::logging::info(
            LOGGER,
            &format!(
                "Created {SHARE_STATE_TOPIC} with {} partitions",
                topic.partition_count()
            ),
        );
        *self.topic.write().expect("lock") = Some(Arc::clone(&topic));
        Ok(topic)
    }

    /// The state topic's configs. Kafka's is `cleanup.policy=delete` and prunes what a
    /// newer snapshot covers; kafkalite writes only snapshots, so compaction by key keeps
    /// exactly the latest state of each share-partition.
    #[must_use]
    pub fn topic_configs(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("cleanup.policy".to_string(), "compact".to_string()),
            ("compression.type".to_string(), "producer".to_string()),
            (
                "segment.bytes".to_string(),
                self.config.segment_bytes.to_string(),
            ),
        ])
    }
}

fn fenced_state(asked: i32, stored: i32) -> ApiError {
    ApiError::new(
        codes::FENCED_STATE_EPOCH,
        format!("The state epoch {asked} is older than the stored {stored}."),
    )
}

impl PartitionedCoordinator for ShareCoordinator {
    fn topic_name(&self) -> &'static str {
        SHARE_STATE_TOPIC
    }

    fn shards(&self) -> &Shards {
        &self.shards
    }

    fn attach(&self, topic: Option<&Arc<Topic>>) {
        *self.topic.write().expect("lock") = topic.cloned();
    }

    fn load(self: &Arc<Self>, partition: &Arc<Partition>, generation: u64) {
        let loaded = match self.replay(partition) {
            Ok(l) => l,
            Err(e) => {
                kafkalite_core::logging::error(
                    LOGGER,
                    &format!(
                        "cannot replay {SHARE_STATE_TOPIC}-{}: {e:#}",
                        partition.index
                    ),
                );
                HashMap::new()
            }
        };
        let mut states = self.states.lock().expect("lock");
        if self.shards.finish(partition.index, generation) {
            states.insert(partition.index, loaded);
        }
    }

    fn unload(&self, index: i32) {
        let mut states = self.states.lock().expect("lock");
        states.remove(&index);
        self.shards.release(index);
    }

    fn create_local_topic(&self) {
        let _ = self.topic();
    }
}
