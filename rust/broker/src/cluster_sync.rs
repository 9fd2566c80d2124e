//! Cluster mode: apply the controller's view, pushed in by the broker's Python side as a
//! whole `ClusterSnapshot`. The broker knows every topic in it and takes each partition's
//! leader, epoch, replicas and ISR, but opens a log (recovering existing data) only for the
//! partitions whose replica list names it; a partition whose replica moved away (a
//! reassignment) has its log closed and its dir retired, as the topics that are gone do.
//! Topic config overrides are applied. Pushing a whole snapshot rather than deltas keeps
//! the binding one call and makes it idempotent. A new topic shows in Metadata before its
//! logs here are created (`Placement::Later`), as a Kafka broker publishes a metadata
//! image before creating its logs.
//!
//! `__consumer_offsets` and `__transaction_state` are among those topics; once the snapshot
//! is in, the group and transaction coordinators follow their leaders
//! (`coordinator::runtime`): each loads the state of the partitions this broker now leads
//! and unloads that of the partitions it lost.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::cluster::partition_dirs;
use crate::cluster::{
    ClusterInfo, ClusterSnapshot, Partition, Placement, ReplicaState, TopicRecord, TopicRegistry,
};
use crate::coordinator::runtime::follow_leadership;
use crate::errors::{codes, ApiError};
use crate::share::coordinator::SHARE_STATE_TOPIC;
use crate::state::{BrokerState, INTERNAL_OFFSETS_TOPIC, INTERNAL_TXN_TOPIC};

/// Logs of new replicas opened within the snapshot's own apply; more are opened by a
/// background thread, so the next snapshot (a leader change, the rest of a large topic)
/// is not held up behind thousands of dir creations.
const HOSTED_INLINE: usize = 100;
/// Logs opened per hold of the admin lock (their dir fsyncs batched), so snapshots and
/// admin requests interleave with a long run of them.
const HOSTED_PER_LOCK: usize = 50;

impl BrokerState {
    /// Make this broker's topics and partitions what `snapshot` says.
    pub fn apply_snapshot(self: &Arc<Self>, snapshot: ClusterSnapshot) -> Result<(), ApiError> {
        let Some(link) = &self.cluster else {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                "metadata snapshots are for cluster mode (zookeeper.connect is not set)",
            ));
        };
        let node = self.config.node_id;
        let mut deleted = Vec::new();
        let mut changed = false;
        // Every topic and partition as the controller has it first, so Metadata shows them
        // at once; the logs of new replicas here are opened after (dir creation is what
        // takes the time when a request creates thousands), as Kafka's brokers publish a
        // metadata image before creating its logs.
        partition_dirs::with_batched_syncs(|| -> Result<(), ApiError> {
            let _guard = self.admin_lock();
            let wanted: BTreeSet<&str> = snapshot.topics.iter().map(|t| t.name.as_str()).collect();
            for name in self.topics.names() {
                if !wanted.contains(name.as_str()) {
                    let removed = self.topics.remove(&name)?;
                    TopicRegistry::delete_data(&removed);
                    deleted.push(name);
                }
            }
            for t in &snapshot.topics {
                // A bad override must not keep the rest of the cluster from this broker.
                let log_config = self
                    .log_config(&t.configs)
                    .unwrap_or_else(|_| self.dynamic.live().log_defaults.clone());
                let count = t.partitions.iter().map(|(i, _)| i + 1).max().unwrap_or(0);
                let replicas: HashMap<i32, &ReplicaState> =
                    t.partitions.iter().map(|(i, r)| (*i, r)).collect();
                // A replica is hosted here when its replica list names this broker; the
                // logs of new ones are opened later.
                let placement = |index: i32| match replicas.get(&index) {
                    Some(r) if r.replicas.contains(&node) => Placement::Later((*r).clone()),
                    Some(r) => Placement::Elsewhere((*r).clone()),
                    None => Placement::Here,
                };
                let topic = match self.topics.get(&t.name) {
                    Some(existing) if existing.id == t.id => existing,
                    existing => {
                        // Same name, new id: the old topic was deleted and recreated.
                        if existing.is_some() {
                            let removed = self.topics.remove(&t.name)?;
                            TopicRegistry::delete_data(&removed);
                            deleted.push(t.name.clone());
                        }
                        let record = TopicRecord {
                            id: t.id,
                            partitions: count,
                            configs: t.configs.clone(),
                        };
                        changed = true;
                        // Not fresh: a dir holding this topic id's data is recovered.
                        self.topics.open_topic_placed(
                            &t.name,
                            record,
                            &log_config,
                            false,
                            &placement,
                        )?
                    }
                };
                if topic.partition_count() < count {
                    changed = true;
                    self.topics
                        .grow_placed(&topic, count, &log_config, &placement)?;
                }
                if *topic.configs.read().expect("lock") != t.configs {
                    changed = true;
                    TopicRegistry::set_configs(&topic, t.configs.clone(), &log_config);
                }
                for (index, replica) in &t.partitions {
                    let here = replica.replicas.contains(&node);
                    match (topic.partition(*index), here) {
                        (Some(partition), true) => self.take_replica_state(&partition, replica),
                        (Some(_), false) => {
                            changed = true;
                            self.topics.unhost(&topic, *index, replica.clone());
                        }
                        // Placed here and not open yet: the controller's word until it is.
                        (None, _) => {
                            TopicRegistry::set_elsewhere_state(&topic, *index, replica.clone());
                        }
                    }
                }
            }
            *link.info.write().expect("lock") = ClusterInfo {
                cluster_id: snapshot.cluster_id,
                controller_id: snapshot.controller_id,
                brokers: snapshot.brokers,
            };
            Ok(())
        })?;
        // The topic file lists this broker's topics, so a restart keeps their dirs (it
        // removes dirs no stored topic owns) until the controller's view arrives.
        if changed || !deleted.is_empty() {
            let _guard = self.admin_lock();
            self.persist_after_snapshot()?;
        }
        let (_, more) = self.host_awaiting_logs(HOSTED_INLINE);
        self.follow_hosted(&deleted);
        if more {
            self.host_in_background();
        }
        Ok(())
    }

    /// Open the logs of up to `limit` partitions placed here later, then persist the
    /// topic file: how many opened, and whether more await.
    fn host_awaiting_logs(&self, limit: usize) -> (usize, bool) {
        let Some(link) = &self.cluster else {
            return (0, false);
        };
        let node = self.config.node_id;
        let awaiting = self.topics.awaiting_logs(node);
        let mut hosted = 0;
        for chunk in awaiting[..limit.min(awaiting.len())].chunks(HOSTED_PER_LOCK) {
            partition_dirs::with_batched_syncs(|| {
                let _guard = self.admin_lock();
                if link.closing.load(Ordering::SeqCst) {
                    return;
                }
                for (topic, index) in chunk {
                    let log_config = self
                        .log_config(&topic.configs.read().expect("lock"))
                        .unwrap_or_else(|_| self.dynamic.live().log_defaults.clone());
                    match self.topics.host_awaiting(topic, *index, node, &log_config) {
                        Some(Ok((partition, said))) => {
                            hosted += 1;
                            self.take_replica_state(&partition, &said);
                        }
                        // One unreadable log must not keep the rest of the cluster from
                        // this broker; the next snapshot retries.
                        Some(Err(e)) => kafkalite_core::logging::error(
                            "kafkalite.cluster.ClusterSync",
                            &format!("cannot host {}-{index}: {}", topic.name, e.message),
                        ),
                        None => {}
                    }
                }
            });
        }
        if hosted > 0 {
            let _guard = self.admin_lock();
            if let Err(e) = self.persist_after_snapshot() {
                kafkalite_core::logging::error(
                    "kafkalite.cluster.ClusterSync",
                    &format!("cannot persist the topic file: {}", e.message),
                );
            }
        }
        (hosted, awaiting.len() > limit)
    }

    /// Open the rest of the awaiting logs on a thread of their own (one at a time), for
    /// as long as that makes progress.
    fn host_in_background(self: &Arc<Self>) {
        let Some(link) = &self.cluster else {
            return;
        };
        if link.hosting.swap(true, Ordering::SeqCst) {
            return;
        }
        let state = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("kafkalite-open-logs".into())
            .spawn(move || {
                let link = state.cluster.as_ref().expect("cluster mode");
                loop {
                    let (hosted, _) = state.host_awaiting_logs(usize::MAX);
                    state.follow_hosted(&[]);
                    link.hosting.store(false, Ordering::SeqCst);
                    // A snapshot that came meanwhile left its partitions to this thread.
                    let more = hosted > 0
                        && !link.closing.load(Ordering::SeqCst)
                        && !state.topics.awaiting_logs(state.config.node_id).is_empty();
                    if !more || link.hosting.swap(true, Ordering::SeqCst) {
                        return;
                    }
                }
            });
        if spawned.is_err() {
            link.hosting.store(false, Ordering::SeqCst);
        }
    }

    /// What follows the partitions hosted here: fetchers, coordinators, and the committed
    /// offsets of `deleted` topics.
    fn follow_hosted(&self, deleted: &[String]) {
        let Some(link) = &self.cluster else {
            return;
        };
        let node = self.config.node_id;
        // Start fetching what this broker now follows, stop what it now leads.
        if let Some(fetchers) = &self.fetchers {
            fetchers.sync(node, &self.topics, link);
        }
        // Outside the admin lock (lock order: groups, group, admin, partition log): groups
        // follow the offsets topic's leaders, and committed offsets of deleted topics are
        // tombstoned.
        follow_leadership(
            &self.groups,
            self.topics.get(INTERNAL_OFFSETS_TOPIC).as_ref(),
            node,
            link.runtime.get().cloned(),
        );
        // The transaction coordinator follows `__transaction_state`'s leaders likewise.
        follow_leadership(
            &self.transactions,
            self.topics.get(INTERNAL_TXN_TOPIC).as_ref(),
            node,
            link.runtime.get().cloned(),
        );
        // The share coordinator follows `__share_group_state`'s leaders likewise.
        follow_leadership(
            &self.share.coordinator,
            self.topics.get(SHARE_STATE_TOPIC).as_ref(),
            node,
            link.runtime.get().cloned(),
        );
        for name in deleted {
            self.groups.topic_deleted(name);
        }
    }

    /// Take the controller's word on a replica hosted here.
    fn take_replica_state(&self, partition: &Partition, replica: &ReplicaState) {
        let before = partition.replica_state();
        if before != *replica {
            self.metrics
                .isr_changed(self.config.node_id, &before, replica);
            partition.set_replica_state(replica.clone());
        }
        // A shrunk ISR may let the high watermark move (a sole replica's follows its log
        // end).
        if replica.leader == self.config.node_id && partition.advance_leader_high_watermark() {
            self.data_arrived.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use super::*;
    use crate::cluster::{check_leader, BrokerNode, ReplicaState, TopicSnapshot};
    use crate::config::BrokerConfig;

    fn cluster_state(dir: &std::path::Path) -> std::sync::Arc<BrokerState> {
        let pairs: BTreeMap<String, String> = HashMap::from([
            ("broker.id", "2"),
            ("zookeeper.connect", "127.0.0.1:2181"),
            ("log.dirs", dir.to_str().unwrap()),
        ])
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        BrokerState::open(BrokerConfig::from_pairs(&pairs).unwrap()).unwrap()
    }

    fn replica(leader: i32, epoch: i32) -> ReplicaState {
        ReplicaState {
            leader,
            leader_epoch: epoch,
            replicas: vec![1, 2, 3],
            isr: vec![1, 2, 3],
        }
    }

    fn snapshot(topics: Vec<TopicSnapshot>) -> ClusterSnapshot {
        ClusterSnapshot {
            cluster_id: "zk-cluster".into(),
            controller_id: 3,
            brokers: (1..=3)
                .map(|id| BrokerNode {
                    node_id: id,
                    host: "127.0.0.1".into(),
                    port: 9090 + id,
                    rack: None,
                    endpoints: vec![("PLAINTEXT".into(), "127.0.0.1".into(), 9090 + id)],
                })
                .collect(),
            topics,
        }
    }

    #[test]
    fn snapshots_open_move_and_drop_topics() {
        let dir = tempfile::tempdir().unwrap();
        let state = cluster_state(dir.path());
        assert!(state.topic_names().is_empty(), "no topics of its own");
        assert_eq!(state.controller_id(), -1);
        let id = uuid::Uuid::new_v4();
        let orders = |parts: Vec<(i32, ReplicaState)>, retention: &str| TopicSnapshot {
            name: "orders".into(),
            id,
            configs: BTreeMap::from([("retention.ms".to_string(), retention.to_string())]),
            partitions: parts,
        };
        state
            .apply_snapshot(snapshot(vec![orders(
                vec![(0, replica(2, 0)), (1, replica(1, 0))],
                "1000",
            )]))
            .unwrap();
        let view = state.metadata_view();
        assert_eq!(
            (view.cluster_id.as_str(), view.controller_id),
            ("zk-cluster", 3)
        );
        assert_eq!(view.brokers.len(), 3);
        let topic = state.topic("orders").unwrap();
        assert_eq!(topic.id, id);
        let p0 = topic.partition(0).unwrap();
        assert_eq!(check_leader(&p0.replica_state(), 2, 0), codes::NONE);
        let p1 = topic.partition(1).unwrap();
        assert_eq!(
            check_leader(&p1.replica_state(), 2, 0),
            codes::NOT_LEADER_OR_FOLLOWER
        );
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
        p0.append(&batch, 1).unwrap();
        // Just opened, the followers count as caught up: nothing to drop from the ISR yet.
        crate::replication::leader::shrink_lagging(&state, 60_000);
        let link = state.cluster.as_ref().unwrap();
        assert!(link.admin.next(std::time::Duration::ZERO).is_none());
        // Followers 1 and 3 have not fetched it: not committed yet.
        assert!(!p0.advance_leader_high_watermark());
        assert_eq!(p0.high_watermark(), 0);
        crate::replication::leader::on_follower_fetch(&state, "orders", &p0, 1, 1, 1);
        assert_eq!(
            p0.high_watermark(),
            0,
            "3 is in the ISR and has not fetched"
        );
        crate::replication::leader::on_follower_fetch(&state, "orders", &p0, 3, 1, 1);
        assert_eq!(p0.high_watermark(), 1);

        // Leadership moves, a partition and a config change arrive.
        state
            .apply_snapshot(snapshot(vec![orders(
                vec![(0, replica(3, 1)), (1, replica(2, 1)), (2, replica(2, 0))],
                "2000",
            )]))
            .unwrap();
        assert_eq!(topic.partition_count(), 3);
        assert_eq!(
            check_leader(&topic.partition(0).unwrap().replica_state(), 2, 0),
            codes::FENCED_LEADER_EPOCH
        );
        assert_eq!(
            check_leader(&topic.partition(1).unwrap().replica_state(), 2, 1),
            codes::NONE
        );
        assert_eq!(topic.configs.read().unwrap()["retention.ms"], "2000");

        // Gone from the snapshot: gone from the broker, data too.
        let p0_dir = topic.partition(0).unwrap().dir();
        state.apply_snapshot(snapshot(Vec::new())).unwrap();
        assert!(state.topic("orders").is_none());
        assert!(!p0_dir.exists());
    }

    #[test]
    fn groups_follow_the_offsets_topic_leaders() {
        use crate::groups::{errors, Committed};
        let dir = tempfile::tempdir().unwrap();
        let state = cluster_state(dir.path());
        let id = uuid::Uuid::new_v4();
        // The leader alone in the ISR: a commit is answered once the ISR has it, and no
        // follower fetches here.
        let offsets = |leader: i32, epoch: i32| TopicSnapshot {
            name: INTERNAL_OFFSETS_TOPIC.into(),
            id,
            configs: BTreeMap::new(),
            partitions: vec![(
                0,
                ReplicaState {
                    isr: vec![leader],
                    ..replica(leader, epoch)
                },
            )],
        };
        let fetch = || {
            state
                .groups
                .fetch_offsets("g", Some(vec![("t".into(), vec![0])]))
        };
        let wait_loaded = || {
            for _ in 0..500 {
                if fetch() != Err(errors::COORDINATOR_LOAD_IN_PROGRESS) {
                    return fetch();
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            panic!("partition never loaded");
        };
        assert_eq!(
            fetch(),
            Err(errors::NOT_COORDINATOR),
            "no offsets topic yet"
        );
        state.apply_snapshot(snapshot(vec![offsets(2, 0)])).unwrap();
        assert_eq!(wait_loaded(), Ok(vec![("t".to_string(), vec![(0, None)])]));
        let committed = Committed {
            offset: 42,
            leader_epoch: -1,
            metadata: String::new(),
            commit_ms: 1,
            expire_ms: None,
        };
        state
            .groups
            .commit_offsets(
                "g",
                -1,
                "",
                None,
                vec![("t".into(), 0, committed.clone())],
                9,
            )
            .unwrap();
        // A member waits in JoinGroup (the first rebalance's delay; no runtime runs its
        // timer here) when the partition's leadership moves away: it is told to look for
        // the new coordinator.
        let join = crate::groups::JoinRequest {
            member_id: String::new(),
            group_instance_id: None,
            require_known_member_id: false,
            supports_skip_assignment: false,
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 10_000,
            session_timeout_ms: 10_000,
            protocol_type: "consumer".into(),
            protocols: vec![("range".into(), bytes::Bytes::new())],
        };
        let crate::groups::Reply::Later(mut waiting) = state.groups.join("joining", join) else {
            panic!("the first rebalance waits");
        };
        // Broker 1 leads the partition now: the groups are not this broker's any more.
        state.apply_snapshot(snapshot(vec![offsets(1, 1)])).unwrap();
        assert_eq!(waiting.try_recv().unwrap().error, errors::NOT_COORDINATOR);
        assert_eq!(fetch(), Err(errors::NOT_COORDINATOR));
        assert_eq!(state.groups.list(&[]), Vec::new());
        // Back again: the group comes back from the partition's log.
        state.apply_snapshot(snapshot(vec![offsets(2, 2)])).unwrap();
        assert_eq!(
            wait_loaded(),
            Ok(vec![("t".to_string(), vec![(0, Some(committed))])])
        );
        // Metadata lists the offsets topic as internal.
        let view = state.metadata_view();
        assert!(view.topics.iter().any(|t| t.is_internal));
    }
}
