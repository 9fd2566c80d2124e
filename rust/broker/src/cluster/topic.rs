//! A topic as this broker knows it: its id, overrides and every partition, each either a
//! replica hosted here or the controller's word about replicas on other brokers.
//!
//! Locking: the slot list is read-mostly (RwLock); each hosted partition guards its own log.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use super::file_store::TopicRecord;
use super::partition::{Partition, ReplicaState};
use crate::errors::codes;

/// Where committed offsets live; users may not create a topic of that name.
pub const INTERNAL_OFFSETS_TOPIC: &str = "__consumer_offsets";
/// The transaction coordinator's log (`transactions::log_topic`).
pub const INTERNAL_TXN_TOPIC: &str = "__transaction_state";

/// One partition of a topic as this broker knows it: a replica it hosts (log, producers,
/// replica state), or, in cluster mode, only the controller's word about a partition whose
/// replicas are all on other brokers (Metadata still describes it; no log is opened).
pub enum Slot {
    Hosted(Arc<Partition>),
    Elsewhere(ReplicaState),
}

impl Slot {
    #[must_use]
    pub fn replica_state(&self) -> ReplicaState {
        match self {
            Slot::Hosted(p) => p.replica_state(),
            Slot::Elsewhere(r) => r.clone(),
        }
    }

    #[must_use]
    pub fn hosted(&self) -> Option<&Arc<Partition>> {
        match self {
            Slot::Hosted(p) => Some(p),
            Slot::Elsewhere(_) => None,
        }
    }
}

/// Where a partition's replica lives, as the caller opening it decides (single node: here;
/// cluster mode: here when the replica list names this broker).
pub enum Placement {
    Here,
    Elsewhere(ReplicaState),
    /// Here, but its log is opened later (`TopicRegistry::host`): until then the slot
    /// holds the controller's word, so Metadata shows the partition at once while clients
    /// reading or writing it are told NOT_LEADER_OR_FOLLOWER, as Kafka's brokers publish a
    /// metadata image before creating its logs. Any dir of it is left for `host` to recover.
    Later(ReplicaState),
}

pub struct Topic {
    pub name: String,
    pub id: uuid::Uuid,
    /// Topic-level overrides only (keys as Kafka spells them, without `log.`).
    pub configs: RwLock<BTreeMap<String, String>>,
    /// Every partition of the topic, by index.
    pub(super) slots: RwLock<Vec<Slot>>,
}

impl Topic {
    /// Partition `index` if this broker hosts a replica of it.
    #[must_use]
    pub fn partition(&self, index: i32) -> Option<Arc<Partition>> {
        let slots = self.slots.read().expect("lock");
        usize::try_from(index)
            .ok()
            .and_then(|i| slots.get(i))
            .and_then(Slot::hosted)
            .cloned()
    }

    /// The partition a client reads or writes, or the code it is told: UNKNOWN_TOPIC_OR_PARTITION
    /// past the partition count; for a partition hosted elsewhere the leadership check's
    /// code (FENCED/UNKNOWN_LEADER_EPOCH for a stale or future epoch, else
    /// NOT_LEADER_OR_FOLLOWER), so clients refresh metadata and find the leader.
    pub fn hosted_or_code(
        &self,
        index: i32,
        node_id: i32,
        current_leader_epoch: i32,
    ) -> Result<Arc<Partition>, i16> {
        let slots = self.slots.read().expect("lock");
        match usize::try_from(index).ok().and_then(|i| slots.get(i)) {
            None => Err(codes::UNKNOWN_TOPIC_OR_PARTITION),
            Some(Slot::Hosted(p)) => Ok(Arc::clone(p)),
            Some(Slot::Elsewhere(r)) => match check_leader(r, node_id, current_leader_epoch) {
                codes::NONE => Err(codes::NOT_LEADER_OR_FOLLOWER),
                code => Err(code),
            },
        }
    }

    /// Partition `index`'s replica state (leader, epoch, replicas, ISR), hosted or not.
    #[must_use]
    pub fn replica_state(&self, index: i32) -> Option<ReplicaState> {
        let slots = self.slots.read().expect("lock");
        usize::try_from(index)
            .ok()
            .and_then(|i| slots.get(i))
            .map(Slot::replica_state)
    }

    /// Every partition's replica state (leader, epoch, replicas, ISR), hosted or not.
    #[must_use]
    pub fn replica_states(&self) -> Vec<ReplicaState> {
        let slots = self.slots.read().expect("lock");
        slots.iter().map(Slot::replica_state).collect()
    }

    /// The partitions this broker hosts, in index order.
    #[must_use]
    pub fn hosted(&self) -> Vec<Arc<Partition>> {
        let slots = self.slots.read().expect("lock");
        slots.iter().filter_map(Slot::hosted).cloned().collect()
    }

    /// Every partition by index, `None` where this broker hosts no replica (a coordinator
    /// places keys over all partitions and writes only to those it leads).
    #[must_use]
    pub fn partition_slots(&self) -> Vec<Option<Arc<Partition>>> {
        let slots = self.slots.read().expect("lock");
        slots.iter().map(|s| s.hosted().cloned()).collect()
    }

    #[must_use]
    pub fn partition_count(&self) -> i32 {
        self.slots.read().expect("lock").len() as i32
    }

    #[must_use]
    pub fn is_internal(&self) -> bool {
        self.name == INTERNAL_OFFSETS_TOPIC || self.name == INTERNAL_TXN_TOPIC
    }

    /// The topic as the metadata store keeps it.
    #[must_use]
    pub fn record(&self) -> TopicRecord {
        TopicRecord {
            id: self.id,
            partitions: self.partition_count(),
            configs: self.configs.read().expect("lock").clone(),
        }
    }
}

/// Whether this broker may serve a client's read or write of a partition in `replica`
/// state: Kafka checks the client's leader epoch first (-1: the client does not say; any
/// other negative epoch is older than every leader's, so fenced, as in Kafka's ListOffsets
/// and OffsetForLeaderEpoch — Fetch maps every negative epoch to -1 before asking), then
/// leadership.
pub fn check_leader(replica: &ReplicaState, node_id: i32, current_leader_epoch: i32) -> i16 {
    if current_leader_epoch != -1 {
        if current_leader_epoch < replica.leader_epoch {
            return codes::FENCED_LEADER_EPOCH;
        }
        if current_leader_epoch > replica.leader_epoch {
            return codes::UNKNOWN_LEADER_EPOCH;
        }
    }
    if replica.leader != node_id {
        return codes::NOT_LEADER_OR_FOLLOWER;
    }
    codes::NONE
}

#[cfg(test)]
mod tests {
    use kafkalite_core::error_codes as codes;

    use super::*;

    #[test]
    fn epochs_then_leadership() {
        let r = ReplicaState {
            leader: 2,
            leader_epoch: 5,
            replicas: vec![1, 2, 3],
            isr: vec![2, 3],
        };
        assert_eq!(check_leader(&r, 2, 5), codes::NONE);
        assert_eq!(check_leader(&r, 2, -1), codes::NONE);
        assert_eq!(check_leader(&r, 2, -5), codes::FENCED_LEADER_EPOCH);
        assert_eq!(check_leader(&r, 2, 4), codes::FENCED_LEADER_EPOCH);
        assert_eq!(check_leader(&r, 2, 6), codes::UNKNOWN_LEADER_EPOCH);
        assert_eq!(check_leader(&r, 1, 5), codes::NOT_LEADER_OR_FOLLOWER);
        assert_eq!(check_leader(&r, 1, 4), codes::FENCED_LEADER_EPOCH);
        assert_eq!(
            check_leader(&ReplicaState::single_node(1), 1, 0),
            codes::NONE
        );
    }
}
