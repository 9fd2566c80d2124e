//! The group coordinator: every group of this node, looked up by id, each behind its own
//! mutex (never held across an await); the glue between the groups' state machines, their
//! timers and `__consumer_offsets`.
//!
//! `__consumer_offsets` is created on first write (as Kafka creates it on first use), with
//! `offsets.topic.num.partitions` partitions and `cleanup.policy=compact`; if it exists at
//! startup it is replayed: committed offsets come back, and groups come back as they were
//! last stored (Stable with their members, who keep their assignments if they heartbeat
//! within their session timeout, or Empty).
//!
//! Offset requests (OffsetCommit, OffsetFetch, OffsetDelete, retention) are in
//! `offset_requests`, another `impl` of this type.
//!
//! In cluster mode the topic is the cluster's: this broker holds only the groups of the
//! partitions it leads (`shards`), loads and unloads them as leadership moves (see
//! `placement`), and answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for the rest.
//!
//! Lock order: the groups map, then the shards, then a group, then the internal topic's
//! creation (and the registry's admin lock inside it), then a partition log.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::Duration;

use kafkalite_core::storage::clock::now_ms;

use super::config::GroupConfig;
use super::group::{Group, GroupDescription, GroupState, JoinRequest, SyncRequest};
use super::member::{JoinResult, Reply, SyncResult};
use super::offsets::{Committed, PendingTxnOffset};
use super::offsets_topic::{OffsetsTopic, Write};
use crate::cluster::topic::INTERNAL_OFFSETS_TOPIC;
use crate::config::{BrokerConfig, ConfigError};
use crate::coordinator::internal_log::{self, Placement};
use crate::coordinator::runtime::Shards;
use crate::coordinator::timers;
use crate::errors::ApiError;
use crate::groups::host::GroupHost;
use crate::groups::operation::{Ctx, Effect};
use kafkalite_core::error_codes as errors;

pub type GroupCell = Mutex<Group>;

/// One row of ListGroups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedGroup {
    pub group_id: String,
    pub protocol_type: String,
    /// "classic" or "consumer" (ListGroups v5).
    pub group_type: &'static str,
    /// The state's name under the group's protocol.
    pub state: &'static str,
}

/// Committed offsets of one topic as OffsetFetch returns them (`None`: nothing committed).
pub type FetchedTopic = (String, Vec<(i32, Option<Committed>)>);

pub struct GroupCoordinator {
    pub(super) config: GroupConfig,
    pub(super) groups: Mutex<HashMap<String, Arc<GroupCell>>>,
    /// `__consumer_offsets` once it exists (in cluster mode: as the cluster has it).
    pub(super) store: RwLock<Option<Arc<OffsetsTopic>>>,
    /// Which groups this broker coordinates (all of them on a single node).
    pub(super) shards: Shards,
    /// Offsets of open transactions, by producer id (`txn_offsets`).
    pub(super) pending_txn: Mutex<HashMap<i64, Vec<PendingTxnOffset>>>,
    /// The broker whose registry holds `__consumer_offsets` (set by `open`).
    broker: OnceLock<Weak<dyn GroupHost>>,
    creating: Mutex<()>,
    started: AtomicBool,
    incarnations: AtomicU64,
}

impl GroupCoordinator {
    /// A coordinator with the broker's `group.*` and `offsets.*` settings.
    pub fn new(config: &BrokerConfig) -> Result<Arc<GroupCoordinator>, ConfigError> {
        let shards = if config.zookeeper_connect.is_some() {
            Shards::none()
        } else {
            Shards::everything()
        };
        Ok(Self::build(GroupConfig::from_raw(&config.raw)?, shards))
    }

    /// A single node's coordinator (every group is its own).
    #[must_use]
    pub fn with_config(config: GroupConfig) -> Arc<GroupCoordinator> {
        Self::build(config, Shards::everything())
    }

    fn build(config: GroupConfig, shards: Shards) -> Arc<GroupCoordinator> {
        Arc::new(GroupCoordinator {
            config,
            groups: Mutex::new(HashMap::new()),
            store: RwLock::new(None),
            shards,
            pending_txn: Mutex::new(HashMap::new()),
            broker: OnceLock::new(),
            creating: Mutex::new(()),
            started: AtomicBool::new(false),
            incarnations: AtomicU64::new(1),
        })
    }

    #[must_use]
    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// Bind to the broker (after its topics are loaded) and replay `__consumer_offsets` if
    /// it exists, expiring offsets whose retention passed while the broker was down. In
    /// cluster mode groups are loaded partition by partition as leadership arrives.
    pub fn open(self: &Arc<Self>, broker: &Arc<dyn GroupHost>) -> anyhow::Result<()> {
        let _ = self.broker.set(Arc::downgrade(broker));
        if self.shards.is_cluster() {
            return Ok(());
        }
        let Some(topic) = broker.topic(INTERNAL_OFFSETS_TOPIC) else {
            return Ok(());
        };
        let store = OffsetsTopic::new(
            topic.id,
            topic.partition_slots(),
            Placement::SingleNode,
            self.config.writes,
        );
        let loaded = store.replay()?;
        *self.store.write().expect("lock") = Some(Arc::new(store));
        *self.pending_txn.lock().expect("lock") = loaded.pending;
        let image = self.topic_image();
        let cx = self.ctx();
        let mut groups = self.groups.lock().expect("lock");
        for (id, g) in loaded.groups {
            let mut group = Group::restore(&id, g.metadata, g.offsets, &cx);
            group.restore_consumer(g.consumer, &image, &cx);
            groups.insert(id, Arc::new(Mutex::new(group)));
        }
        drop(groups);
        self.expire_offsets();
        Ok(())
    }

    pub(super) fn ctx(&self) -> Ctx<'_> {
        Ctx {
            now: tokio::time::Instant::now(),
            now_ms: now_ms(),
            config: &self.config,
            incarnations: &self.incarnations,
            effects: Vec::new(),
        }
    }

    /// Start the background work once a runtime is there: expiry timers of replayed
    /// members, and the periodic offset-retention check.
    pub(super) fn ensure_started(self: &Arc<Self>) {
        if self.started.load(Ordering::Acquire) || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        for cell in self.snapshot().into_iter().map(|(_, c)| c) {
            let mut group = cell.lock().expect("lock");
            let mut cx = self.ctx();
            group.watch_all(&mut cx);
            self.apply(&cell, &mut group, cx.effects);
        }
        let interval =
            Duration::from_millis(self.config.offsets_retention_check_interval_ms as u64);
        timers::every(Arc::downgrade(self), interval, |c| c.expire_offsets());
    }

    pub(super) fn snapshot(&self) -> Vec<(String, Arc<GroupCell>)> {
        self.groups
            .lock()
            .expect("lock")
            .iter()
            .map(|(id, c)| (id.clone(), Arc::clone(c)))
            .collect()
    }

    /// Run `f` on the live group `id` (created first if `create`), then carry out its
    /// effects. `Ok(None)`: no such group; `Err`: this broker does not coordinate it now
    /// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
    pub(super) fn with_group<R>(
        self: &Arc<Self>,
        id: &str,
        create: bool,
        f: impl FnOnce(&mut Group, &mut Ctx) -> R,
    ) -> Result<Option<R>, i16> {
        self.ensure_started();
        loop {
            let cell = {
                let mut groups = self.groups.lock().expect("lock");
                // Asked under the map's lock: an unload takes it too, so no group of a
                // partition that is leaving is created or found after it went.
                let code = self.shards.check(id);
                if code != errors::NONE {
                    return Err(code);
                }
                match groups.get(id) {
                    Some(cell) => Arc::clone(cell),
                    None if create => {
                        let cell = Arc::new(Mutex::new(Group::new(id, now_ms())));
                        groups.insert(id.to_string(), Arc::clone(&cell));
                        cell
                    }
                    None => return Ok(None),
                }
            };
            // Its holder may be waiting for the ISR (a transactional offset commit).
            let mut group = internal_log::lock_blocking(&cell);
            if group.state == GroupState::Dead {
                // Deleted meanwhile (and already gone from the map): look again.
                continue;
            }
            let mut cx = self.ctx();
            let result = f(&mut group, &mut cx);
            self.apply(&cell, &mut group, cx.effects);
            let vacant = is_vacant(&group);
            drop(group);
            if vacant {
                self.remove_group(id, &cell, is_vacant);
            }
            return Ok(Some(result));
        }
    }

    /// Run `f` on a group a timer holds, unless it has died.
    pub(super) fn with_cell<R>(
        self: &Arc<Self>,
        cell: &Arc<GroupCell>,
        f: impl FnOnce(&mut Group, &mut Ctx) -> R,
    ) -> Option<R> {
        let mut group = cell.lock().expect("lock");
        if group.state == GroupState::Dead {
            return None;
        }
        let mut cx = self.ctx();
        let result = f(&mut group, &mut cx);
        self.apply(cell, &mut group, cx.effects);
        let vacant = is_vacant(&group);
        let id = group.id.clone();
        drop(group);
        if vacant {
            self.remove_group(&id, cell, is_vacant);
        }
        Some(result)
    }

    /// After `delay`, run `f` on the group in `cell` (unless it or the coordinator is gone).
    fn on_cell_after(
        self: &Arc<Self>,
        cell: &Arc<GroupCell>,
        delay: Duration,
        f: impl FnOnce(&mut Group, &mut Ctx) + Send + 'static,
    ) {
        let cell = Arc::clone(cell);
        timers::after(Arc::downgrade(self), delay, move |c| {
            c.with_cell(&cell, f);
        });
    }

    /// Start the timers an operation asked for, then write what it changed in one batch:
    /// a consumer group's records (`Group::take_consumer_writes`), a classic group's
    /// metadata record or its tombstone.
    pub(super) fn apply(
        self: &Arc<Self>,
        cell: &Arc<GroupCell>,
        group: &mut Group,
        effects: Vec<Effect>,
    ) {
        let mut store_group = false;
        for effect in effects {
            match effect {
                Effect::JoinTimer {
                    epoch,
                    delay,
                    initial,
                } => self.on_cell_after(cell, delay, move |g, cx| {
                    g.on_join_timer(epoch, initial, cx);
                }),
                Effect::SyncTimer { generation, delay } => {
                    self.on_cell_after(cell, delay, move |g, cx| g.on_sync_timer(generation, cx));
                }
                Effect::WatchMember {
                    member_id,
                    incarnation,
                    deadline,
                } => {
                    let cell = Arc::clone(cell);
                    timers::until_done(Arc::downgrade(self), deadline, move |c| {
                        c.with_cell(&cell, |g, cx| {
                            g.on_heartbeat_deadline(&member_id, incarnation, cx)
                        })
                        .flatten()
                    });
                }
                Effect::WatchPending {
                    member_id,
                    incarnation,
                    timeout,
                } => self.on_cell_after(cell, timeout, move |g, cx| {
                    g.on_pending_deadline(&member_id, incarnation, cx);
                }),
                Effect::ConsumerSession {
                    member_id,
                    incarnation,
                    deadline,
                } => {
                    let cell = Arc::clone(cell);
                    timers::until_done(Arc::downgrade(self), deadline, move |c| {
                        c.with_cell(&cell, |g, cx| {
                            g.consumer_session_check(&member_id, incarnation, cx)
                        })
                        .flatten()
                    });
                }
                Effect::ConsumerRevocation {
                    member_id,
                    incarnation,
                    delay,
                } => self.on_cell_after(cell, delay, move |g, cx| {
                    g.consumer_revocation_check(&member_id, incarnation, cx);
                }),
                Effect::ConsumerClassicDeadline {
                    member_id,
                    incarnation,
                    deadline,
                } => {
                    let cell = Arc::clone(cell);
                    timers::until_done(Arc::downgrade(self), deadline, move |c| {
                        c.with_cell(&cell, |g, cx| {
                            g.consumer_classic_deadline_check(&member_id, incarnation, cx)
                        })
                        .flatten()
                    });
                }
                Effect::StoreGroup => store_group = true,
            }
        }
        self.store_group(group, store_group);
    }

    /// Write a group's changed records. Group state only matters after a restart or a
    /// coordinator move; a failed write is not worth failing the request for (Kafka would
    /// fail it and the client retry): a consumer group's records are kept to go first with
    /// its next write, a classic group's metadata is written again at its next change.
    fn store_group(&self, group: &mut Group, store_classic: bool) {
        let consumer = group.take_consumer_writes();
        let classic_tombstone = std::mem::take(&mut group.classic_record_dropped);
        if consumer.is_empty() && !store_classic && !classic_tombstone {
            return;
        }
        let record = store_classic.then(|| group.to_record());
        let mut writes: Vec<Write> = Vec::with_capacity(consumer.len() + 1);
        if classic_tombstone {
            writes.push(Write::Group(None));
        }
        writes.extend(consumer.iter().map(|(k, v)| Write::Consumer(k, v.as_ref())));
        if let Some(record) = &record {
            writes.push(Write::Group(Some(record)));
        }
        if let Err(e) = self.append(&group.id, &writes, true) {
            kafkalite_core::logging::error(
                "kafkalite.coordinator.group.GroupCoordinator",
                &format!("Storing group {:?} failed: {e}", group.id),
            );
            if let Some(cg) = group.consumer.as_mut() {
                cg.unwritten(consumer);
            }
        }
    }

    fn current_store(&self) -> Option<Arc<OffsetsTopic>> {
        self.store.read().expect("lock").clone()
    }

    /// The internal topic, created on first use (on a single node; in cluster mode the
    /// controller creates it, and a broker without it coordinates nothing).
    pub(super) fn store(&self) -> Result<Arc<OffsetsTopic>, ApiError> {
        if let Some(store) = self.current_store() {
            return Ok(store);
        }
        if self.shards.is_cluster() {
            return Err(ApiError::new(
                errors::NOT_COORDINATOR,
                "__consumer_offsets does not exist yet",
            ));
        }
        let _creating = self.creating.lock().expect("lock");
        if let Some(store) = self.current_store() {
            return Ok(store);
        }
        let broker = self.broker.get().and_then(Weak::upgrade).ok_or_else(|| {
            ApiError::new(
                errors::COORDINATOR_NOT_AVAILABLE,
                "the broker is shutting down",
            )
        })?;
        let topic = broker.create_internal_topic(
            INTERNAL_OFFSETS_TOPIC,
            self.config.offsets_topic_partitions,
            self.config.offsets_topic_configs(),
        )?;
        let store = Arc::new(OffsetsTopic::new(
            topic.id,
            topic.partition_slots(),
            Placement::SingleNode,
            self.config.writes,
        ));
        *self.store.write().expect("lock") = Some(Arc::clone(&store));
        Ok(store)
    }

    /// Write a group's records. `create`: create the internal topic if needed (tombstones
    /// need not: without the topic there is nothing to delete).
    pub(super) fn append(
        &self,
        group: &str,
        writes: &[Write],
        create: bool,
    ) -> Result<(), ApiError> {
        let store = if create {
            self.store()?
        } else {
            match self.current_store() {
                Some(store) => store,
                None => return Ok(()),
            }
        };
        self.append_to(&store, group, writes, None, false)
    }

    /// Append what a client is answered for (OffsetCommit, OffsetDelete): in cluster mode
    /// only once the ISR has it, as Kafka's `offsets.commit.required.acks=-1`. Answered on
    /// the leader's append, a commit could be shown by OffsetFetch, then lost with the
    /// leader, and the group's committed offset would move backwards.
    pub(super) fn append_replicated(&self, group: &str, writes: &[Write]) -> Result<(), ApiError> {
        self.append_to(&*self.store()?, group, writes, None, true)
    }

    /// Write a transaction's offsets for `group` as `producer`'s transactional batch.
    pub(super) fn append_transactional(
        &self,
        group: &str,
        writes: &[Write],
        producer: (i64, i16),
    ) -> Result<(), ApiError> {
        self.append_to(&*self.store()?, group, writes, Some(producer), true)
    }

    fn append_to(
        &self,
        store: &OffsetsTopic,
        group: &str,
        writes: &[Write],
        producer: Option<(i64, i16)>,
        replicated: bool,
    ) -> Result<(), ApiError> {
        let broker = self.broker_state()?;
        store.append(
            group,
            writes,
            producer,
            replicated,
            now_ms(),
            broker.data_arrived(),
        )
    }

    /// The `__consumer_offsets` partition of `group` (`None` before the topic exists).
    #[must_use]
    pub(super) fn index_of(&self, group: &str) -> Option<i32> {
        self.current_store().map(|s| s.index_of(group))
    }

    /// This broker's node id (once bound to the broker).
    pub(super) fn node_id(&self) -> Option<i32> {
        self.broker_state().ok().map(|b| b.node_id())
    }

    pub(super) fn broker_state(&self) -> Result<Arc<dyn GroupHost>, ApiError> {
        self.broker.get().and_then(Weak::upgrade).ok_or_else(|| {
            ApiError::new(
                errors::COORDINATOR_NOT_AVAILABLE,
                "the broker is shutting down",
            )
        })
    }

    // -----------------------------------------------------------------------------------
    // Group membership

    pub fn join(self: &Arc<Self>, group_id: &str, req: JoinRequest) -> Reply<JoinResult> {
        if group_id.is_empty() {
            return Reply::Now(JoinResult::error(&req.member_id, errors::INVALID_GROUP_ID));
        }
        if req.session_timeout_ms < self.config.min_session_timeout_ms
            || req.session_timeout_ms > self.config.max_session_timeout_ms
        {
            return Reply::Now(JoinResult::error(
                &req.member_id,
                errors::INVALID_SESSION_TIMEOUT,
            ));
        }
        let member_id = req.member_id.clone();
        // A consumer group with members serves classic members too (by topic id).
        let image = self.topic_image();
        let join = |g: &mut Group, cx: &mut Ctx| g.classic_join(req, &image, cx);
        match self.with_group(group_id, member_id.is_empty(), join) {
            Ok(Some(reply)) => reply,
            Ok(None) => Reply::Now(JoinResult::error(&member_id, errors::UNKNOWN_MEMBER_ID)),
            Err(code) => Reply::Now(JoinResult::error(&member_id, code)),
        }
    }

    pub fn sync(self: &Arc<Self>, group_id: &str, req: SyncRequest) -> Reply<SyncResult> {
        if group_id.is_empty() {
            return Reply::Now(SyncResult::error(errors::INVALID_GROUP_ID));
        }
        match self.with_group(group_id, false, |g, cx| g.classic_sync(req, cx)) {
            Ok(Some(reply)) => reply,
            Ok(None) => Reply::Now(SyncResult::error(errors::UNKNOWN_MEMBER_ID)),
            Err(code) => Reply::Now(SyncResult::error(code)),
        }
    }

    pub fn heartbeat(
        self: &Arc<Self>,
        group_id: &str,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
    ) -> i16 {
        if group_id.is_empty() {
            return errors::INVALID_GROUP_ID;
        }
        self.with_group(group_id, false, |g, cx| {
            g.classic_heartbeat(member_id, instance, generation, cx)
        })
        .map_or_else(|code| code, |r| r.unwrap_or(errors::UNKNOWN_MEMBER_ID))
    }

    /// LeaveGroup: an error per (member id, group.instance.id), or a group-level error.
    pub fn leave(
        self: &Arc<Self>,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<i16>, i16> {
        if group_id.is_empty() {
            return Err(errors::INVALID_GROUP_ID);
        }
        Ok(self
            .with_group(group_id, false, |g, cx| g.classic_leave(members, cx))?
            .unwrap_or_else(|| vec![errors::UNKNOWN_MEMBER_ID; members.len()]))
    }

    /// Remove `cell` (still registered as `id`) if `check` agrees once both are locked:
    /// tombstone its offsets and metadata, mark it Dead.
    pub(super) fn remove_group(
        &self,
        id: &str,
        cell: &Arc<GroupCell>,
        check: impl FnOnce(&Group) -> bool,
    ) -> i16 {
        let mut groups = self.groups.lock().expect("lock");
        if !groups.get(id).is_some_and(|c| Arc::ptr_eq(c, cell)) {
            return errors::GROUP_ID_NOT_FOUND;
        }
        let mut group = cell.lock().expect("lock");
        if !check(&group) {
            return errors::NON_EMPTY_GROUP;
        }
        let offsets: Vec<(String, i32)> = group
            .offsets
            .iter()
            .map(|(t, p, _)| (t.to_string(), p))
            .collect();
        let mut writes: Vec<Write> = offsets
            .iter()
            .map(|(t, p)| Write::Offset(t, *p, None))
            .collect();
        if group.generation > 0 {
            // Only groups that had members ever stored metadata.
            writes.push(Write::Group(None));
        }
        let consumer: Vec<_> = group
            .consumer
            .as_ref()
            .map(|cg| cg.written().tombstones(id))
            .unwrap_or_default()
            .into_iter()
            .chain(std::mem::take(&mut group.consumer_tombstones))
            .collect();
        writes.extend(consumer.iter().map(|(k, v)| Write::Consumer(k, v.as_ref())));
        if let Err(e) = self.append(id, &writes, false) {
            return e.code;
        }
        group.state = GroupState::Dead;
        groups.remove(id);
        errors::NONE
    }

    // -----------------------------------------------------------------------------------
    // Administration

    /// DescribeGroups: `Ok(None)` for an unknown group (described as Dead), `Err` when
    /// this broker does not coordinate it.
    pub fn describe(self: &Arc<Self>, group_id: &str) -> Result<Option<GroupDescription>, i16> {
        self.with_group(group_id, false, |g, _| g.describe())
    }

    /// DescribeGroups, telling a consumer-protocol group (`Ok(Some(None))`) from an
    /// unknown one (`Ok(None)`).
    pub fn describe_classic(
        self: &Arc<Self>,
        group_id: &str,
    ) -> Result<Option<Option<GroupDescription>>, i16> {
        self.with_group(group_id, false, |g, _| {
            g.consumer.is_none().then(|| g.describe())
        })
    }

    /// ListGroups, filtered by state names (case-insensitive) when any are given.
    pub fn list(self: &Arc<Self>, states: &[String]) -> Vec<ListedGroup> {
        self.ensure_started();
        let mut out: Vec<ListedGroup> = self
            .snapshot()
            .into_iter()
            .filter_map(|(id, cell)| {
                let g = cell.lock().expect("lock");
                let (group_type, state) = g.type_and_state();
                let keep = g.state != GroupState::Dead
                    && (states.is_empty() || states.iter().any(|s| s.eq_ignore_ascii_case(state)));
                let protocol_type = if g.consumer.is_some() {
                    super::operation::CONSUMER_PROTOCOL_TYPE.to_string()
                } else {
                    g.protocol_type.clone().unwrap_or_default()
                };
                keep.then_some(ListedGroup {
                    group_id: id,
                    protocol_type,
                    group_type,
                    state,
                })
            })
            .collect();
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        out
    }

    /// DeleteGroups of one group: only an Empty group goes (with its offsets).
    pub fn delete_group(self: &Arc<Self>, group_id: &str) -> i16 {
        self.ensure_started();
        let cell = {
            let groups = self.groups.lock().expect("lock");
            let code = self.shards.check(group_id);
            if code != errors::NONE {
                return code;
            }
            groups.get(group_id).cloned()
        };
        match cell {
            None => errors::GROUP_ID_NOT_FOUND,
            Some(cell) => self.remove_group(group_id, &cell, Group::has_no_members),
        }
    }
}

/// A group that never had members or an offset (created by a request that failed, or by a
/// member id handed out and never used): nothing to keep.
fn is_vacant(g: &Group) -> bool {
    g.is_removable() && g.generation == 0 && g.protocol_type.is_none() && g.consumer.is_none()
}
