//! The transaction coordinator as one partitioned coordinator of a cluster
//! (`coordinator::runtime`): a broker coordinates the transactional ids of the
//! `__transaction_state` partitions it leads. Gaining a partition loads its ids from the
//! partition's log (Kafka's `TransactionStateManager.loadTransactionsForTxnTopicPartition`)
//! and completes the transactions found in a Prepare state (the old coordinator logged the
//! decision and may not have written every marker); losing it forgets them, and their
//! clients, told NOT_COORDINATOR, find the new leader.

use crate::coordinator::internal_log::lock_blocking;
use std::sync::Arc;

use super::coordinator::TransactionCoordinator;
use super::log_topic::{replay_partition, TxnLogTopic};
use crate::cluster::topic::INTERNAL_TXN_TOPIC;
use crate::cluster::{Partition, Topic};
use crate::coordinator::internal_log::Placement;
use crate::coordinator::runtime::{PartitionedCoordinator, Shards};

impl PartitionedCoordinator for TransactionCoordinator {
    fn topic_name(&self) -> &'static str {
        INTERNAL_TXN_TOPIC
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
                    let node = self.broker().map_or(-1, |b| b.node_id());
                    *store = Some(Arc::new(TxnLogTopic::new(
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
                // Left loading: clients keep retrying (COORDINATOR_LOAD_IN_PROGRESS).
                kafkalite_core::logging::error(
                    super::coordinator::LOGGER,
                    &format!(
                        "Loading partition {} of {INTERNAL_TXN_TOPIC} failed: {e}",
                        partition.index
                    ),
                );
                return;
            }
        };
        let pending = {
            let mut inner = lock_blocking(&self.inner);
            if !self.shards.finish(partition.index, generation) {
                return;
            }
            Self::install(&mut inner, loaded)
        };
        self.ensure_started();
        let Ok(broker) = self.broker() else { return };
        for c in pending {
            self.finish(&*broker, c);
        }
    }

    fn unload(&self, index: i32) {
        let mut inner = lock_blocking(&self.inner);
        self.shards.release(index);
        let ids: Vec<String> = inner
            .ids
            .keys()
            .filter(|id| self.shards.partition_of(id) == index)
            .cloned()
            .collect();
        for id in ids {
            if let Some(meta) = inner.ids.remove(&id) {
                inner.by_producer.remove(&meta.producer_id);
            }
        }
    }
}
