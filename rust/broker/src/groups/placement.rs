//! The group coordinator as one partitioned coordinator of a cluster
//! (`coordinator::runtime`): a broker coordinates the groups of the `__consumer_offsets`
//! partitions it leads. Gaining a partition loads its groups (committed offsets and group
//! metadata) from the partition's log, as Kafka's `GroupMetadataManager.loadGroupsForPartition`
//! does; losing it unloads them: they are forgotten here, and members waiting in JoinGroup
//! or SyncGroup are told NOT_COORDINATOR, so they find the new coordinator and rejoin.

use std::sync::{Arc, Mutex};

use super::coordinator::GroupCoordinator;
use super::group::Group;
use super::offsets_topic::{replay_partition, OffsetsTopic};
use crate::cluster::topic::INTERNAL_OFFSETS_TOPIC;
use crate::cluster::{Partition, Topic};
use crate::coordinator::internal_log::Placement;
use crate::coordinator::runtime::{PartitionedCoordinator, Shards};

impl PartitionedCoordinator for GroupCoordinator {
    fn topic_name(&self) -> &'static str {
        INTERNAL_OFFSETS_TOPIC
    }

    fn shards(&self) -> &Shards {
        &self.shards
    }

    fn attach(&self, topic: Option<&Arc<Topic>>) {
        let mut store = self.store.write().expect("lock");
        match topic {
            None => *store = None,
            Some(topic) => {
                // A replica gained or lost here is a new store too.
                let partitions = topic.partition_slots();
                let same = store
                    .as_ref()
                    .is_some_and(|s| s.topic_id == topic.id && s.same_partitions(&partitions));
                if !same {
                    let node = self.node_id().unwrap_or(-1);
                    *store = Some(Arc::new(OffsetsTopic::new(
                        topic.id,
                        partitions,
                        Placement::Cluster { node },
                        self.config.writes,
                    )));
                }
            }
        }
    }

    fn create_local_topic(&self) {
        if !self.shards.is_cluster() {
            let _ = self.store();
        }
    }

    fn load(self: &Arc<Self>, partition: &Arc<Partition>, generation: u64) {
        let loaded = match replay_partition(partition, self.config.writes.load_buffer_bytes) {
            Ok(loaded) => loaded,
            Err(e) => {
                // Left loading: clients keep retrying (COORDINATOR_LOAD_IN_PROGRESS) and
                // the error names the partition, as Kafka logs a failed load.
                kafkalite_core::logging::error(
                    "kafkalite.coordinator.group.GroupMetadataManager",
                    &format!(
                        "Loading partition {} of {INTERNAL_OFFSETS_TOPIC} failed: {e}",
                        partition.index
                    ),
                );
                return;
            }
        };
        let mut restored = Vec::new();
        // Taken before the groups map is locked (the topic registry comes after it).
        let image = self.topic_image();
        {
            let mut groups = self.groups.lock().expect("lock");
            if !self.shards.finish(partition.index, generation) {
                return;
            }
            let cx = self.ctx();
            let mut pending = self.pending_txn.lock().expect("lock");
            for (producer_id, held) in loaded.pending {
                pending.entry(producer_id).or_default().extend(held);
            }
            drop(pending);
            for (id, g) in loaded.groups {
                let mut group = Group::restore(&id, g.metadata, g.offsets, &cx);
                group.restore_consumer(g.consumer, &image, &cx);
                let cell = Arc::new(Mutex::new(group));
                groups.insert(id, Arc::clone(&cell));
                restored.push(cell);
            }
        }
        self.ensure_started();
        // Members come back with their assignments and must heartbeat within their session
        // timeout (to this broker, once they find it) or leave the group.
        for cell in restored {
            let mut group = cell.lock().expect("lock");
            let mut cx = self.ctx();
            group.watch_all(&mut cx);
            self.apply(&cell, &mut group, cx.effects);
        }
    }

    fn unload(&self, index: i32) {
        let gone: Vec<_> = {
            let mut groups = self.groups.lock().expect("lock");
            self.shards.release(index);
            let ids: Vec<String> = groups
                .keys()
                .filter(|id| self.shards.partition_of(id) == index)
                .cloned()
                .collect();
            let gone = ids.iter().filter_map(|id| groups.remove(id)).collect();
            self.drop_pending_of(index);
            gone
        };
        for cell in gone {
            cell.lock().expect("lock").unload();
        }
    }
}
