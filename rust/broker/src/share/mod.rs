//! Share groups (KIP-932, "queues for Kafka") as Kafka 4.4 runs them on one broker:
//!
//! - `group` + `assignor`: membership through ShareGroupHeartbeat and Kafka's simple share
//!   assignor (a partition may be shared by several members);
//! - `partition_state`: each share-partition's in-flight records on the partition leader
//!   (available, acquired under a lock, acknowledged, archived; delivery counts);
//! - `session`: share sessions, so ShareFetch sends only what changed;
//! - `coordinator` + `records`: the share coordinator persisting share-partition state in
//!   `__share_group_state` in Kafka's record format, over the coordinator runtime;
//! - this module: `ShareGroups`, what the handlers call, tying them together: acquisition
//!   for ShareFetch, acknowledgements (also piggybacked on ShareFetch), lock expiry and
//!   member expiry on a timer, each change of acknowledged state written through the
//!   coordinator before the answer goes out.
//!
//! Ownership, for cluster mode later: share-partition state belongs to the partition
//! leader (keyed by group, topic id and partition) and persisted state to the leader of
//! the `__share_group_state` partition the share-partition's key maps to.
//!
//! Locks, in order: `groups`, then `partitions`, then `sessions`; the coordinator's own
//! lock is taken inside `partitions` (its write is the persisting step).

pub mod assignor;
pub mod coordinator;
pub mod group;
pub mod partition_state;
pub mod records;
pub mod session;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use kafkalite_core::records::BatchHeader;
use kafkalite_core::storage::clock::now_ms;
use uuid::Uuid;

use crate::cluster::topic::Topic;
use crate::coordinator::host::CoordinatorHost;
use crate::coordinator::timers;
use crate::errors::{codes, ApiError};
use coordinator::ShareCoordinator;
use group::{Beat, Heartbeat, ShareGroup};
use partition_state::{AckBatch, Acquired, Limits, SharePartitionState};
use records::{SharePartitionKey, Snapshot};
use session::{ShareSessions, Step};

pub use crate::config::group::ShareSettings;

/// What a group's settings bound acquisition and acknowledgement by.
#[must_use]
pub fn limits(s: &ShareSettings) -> Limits {
    Limits {
        lock_duration_ms: s.record_lock_duration_ms,
        delivery_count_limit: s.delivery_count_limit,
        max_record_locks: s.partition_max_record_locks,
    }
}

/// What share groups ask of the broker beyond any coordinator's needs.
pub trait ShareHost: CoordinatorHost {
    fn share_settings(&self, group: &str) -> ShareSettings;
    fn topic_by_id(&self, id: Uuid) -> Option<Arc<Topic>>;
    /// Whether `group` exists as a group of another type (classic, consumer).
    fn other_group_type(&self, group: &str) -> Option<String>;
    /// `group.share.max.share.sessions`.
    fn max_share_sessions(&self) -> usize;
}

/// One partition's part of a ShareFetch answer.
#[derive(Debug, Default)]
pub struct FetchedPartition {
    pub error: Option<ApiError>,
    pub ack_error: Option<ApiError>,
    pub records: Option<bytes::Bytes>,
    pub acquired: Vec<Acquired>,
}

/// A partition a request names: topic id, partition, its acknowledgement batches.
pub struct RequestedPartition {
    pub topic_id: Uuid,
    pub partition: i32,
    pub acks: Vec<AckBatch>,
}

const LOGGER: &str = "kafkalite.server.share.SharePartitionManager";
/// How often locks and member sessions are checked for expiry.
const SWEEP_INTERVAL: Duration = Duration::from_millis(100);
/// At most this many record bytes per partition and fetch.
const PARTITION_BYTES_MAX: u64 = 16 << 20;

pub struct ShareGroups {
    groups: Mutex<HashMap<String, ShareGroup>>,
    partitions: Mutex<HashMap<SharePartitionKey, SharePartitionState>>,
    sessions: Mutex<ShareSessions>,
    pub coordinator: Arc<ShareCoordinator>,
    host: OnceLock<Weak<dyn ShareHost>>,
    started: AtomicBool,
}

impl ShareGroups {
    #[must_use]
    pub fn new(coordinator: Arc<ShareCoordinator>) -> Arc<ShareGroups> {
        Arc::new(ShareGroups {
            groups: Mutex::new(HashMap::new()),
            partitions: Mutex::new(HashMap::new()),
            sessions: Mutex::new(ShareSessions::with_limit(usize::MAX)),
            coordinator,
            host: OnceLock::new(),
            started: AtomicBool::new(false),
        })
    }

    pub fn open(self: &Arc<Self>, host: &Arc<dyn ShareHost>) -> anyhow::Result<()> {
        let _ = self.host.set(Arc::downgrade(host));
        *self.sessions.lock().expect("lock") = ShareSessions::with_limit(host.max_share_sessions());
        let coordinator_host: Arc<dyn CoordinatorHost> =
            Arc::clone(host) as Arc<dyn CoordinatorHost>;
        // `Arc<dyn ShareHost>` to `Arc<dyn CoordinatorHost>`: trait upcasting.
        self.coordinator.open(&coordinator_host)
    }

    fn host(&self) -> Result<Arc<dyn ShareHost>, ApiError> {
        self.host.get().and_then(Weak::upgrade).ok_or_else(|| {
            ApiError::new(codes::COORDINATOR_NOT_AVAILABLE, "the broker is stopping")
        })
    }

    /// Start the expiry sweep once a runtime is there.
    fn ensure_started(self: &Arc<Self>) {
        if self.started.load(Ordering::Acquire) || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        timers::every(Arc::downgrade(self), SWEEP_INTERVAL, |s| s.sweep());
    }

    /// Whether `group` is a share group here.
    #[must_use]
    pub fn is_share_group(&self, group: &str) -> bool {
        self.groups.lock().expect("lock").contains_key(group)
    }

    /// Every share group: (id, state).
    #[must_use]
    pub fn list(&self) -> Vec<(String, &'static str)> {
        self.groups
            .lock()
            .expect("lock")
            .values()
            .map(|g| (g.group_id.clone(), g.state()))
            .collect()
    }

    /// Run `f` over a group (ShareGroupDescribe, DescribeGroups).
    pub fn with_group<T>(&self, group: &str, f: impl FnOnce(&ShareGroup) -> T) -> Option<T> {
        self.groups.lock().expect("lock").get(group).map(f)
    }

    fn resolver(
        host: &Arc<dyn ShareHost>,
    ) -> impl Fn(&BTreeSet<String>) -> BTreeMap<String, (Uuid, i32)> + '_ {
        move |names: &BTreeSet<String>| {
            names
                .iter()
                .filter_map(|n| {
                    host.topic(n)
                        .map(|t| (n.clone(), (t.id, t.partition_count())))
                })
                .collect()
        }
    }

    /// ShareGroupHeartbeat.
    pub fn heartbeat(
        self: &Arc<Self>,
        group_id: &str,
        hb: Heartbeat,
    ) -> Result<(Beat, i32), ApiError> {
        self.ensure_started();
        let host = self.host()?;
        let settings = host.share_settings(group_id);
        let mut groups = self.groups.lock().expect("lock");
        if !groups.contains_key(group_id) {
            if let Some(kind) = host.other_group_type(group_id) {
                return Err(ApiError::new(
                    codes::GROUP_ID_NOT_FOUND,
                    format!("Group {group_id} is not a share group (it is a {kind} group)."),
                ));
            }
            if hb.member_epoch != 0 {
                return Err(ApiError::new(
                    codes::UNKNOWN_MEMBER_ID,
                    format!(
                        "Member {} is not a member of group {group_id}.",
                        hb.member_id
                    ),
                ));
            }
        }
        let member = hb.member_id.clone();
        let leaving = hb.member_epoch == group::LEAVE_GROUP_MEMBER_EPOCH;
        let group = groups
            .entry(group_id.to_string())
            .or_insert_with(|| ShareGroup::new(group_id));
        let beat = group.heartbeat(
            hb,
            &Self::resolver(&host),
            settings.session_timeout_ms,
            now_ms(),
        )?;
        drop(groups);
        if leaving {
            self.member_gone(group_id, &member, &settings);
        }
        Ok((beat, settings.heartbeat_interval_ms))
    }

    /// A member left or expired: its sessions end, its records come back.
    fn member_gone(&self, group_id: &str, member: &str, settings: &ShareSettings) {
        self.sessions.lock().expect("lock").remove(group_id, member);
        self.release_member(group_id, member, settings);
    }

    fn release_member(&self, group_id: &str, member: &str, settings: &ShareSettings) {
        let mut released = false;
        let mut partitions = self.partitions.lock().expect("lock");
        for (key, state) in partitions
            .iter_mut()
            .filter(|(k, _)| k.group_id == group_id)
        {
            if state.release_member(member, &limits(settings)) > 0 {
                released = true;
                self.persist(key, state);
            }
        }
        drop(partitions);
        if released {
            if let Ok(host) = self.host() {
                host.data_arrived().notify_waiters();
            }
        }
    }

    /// Write a share-partition's state through the share coordinator. A failure is
    /// logged: the in-memory state stays authoritative while this broker leads.
    fn persist(&self, key: &SharePartitionKey, state: &SharePartitionState) {
        let (start_offset, batches) = state.persisted();
        let now = now_ms();
        let previous = self.coordinator.read(key).ok().flatten();
        let snapshot = Snapshot {
            snapshot_epoch: previous
                .as_ref()
                .map_or(0, |p| p.snapshot_epoch.wrapping_add(1)),
            state_epoch: previous.as_ref().map_or(0, |p| p.state_epoch),
            leader_epoch: 0,
            start_offset,
            delivery_complete_count: state.delivery_complete_count(),
            create_timestamp: previous.as_ref().map_or(now, |p| p.create_timestamp),
            write_timestamp: now,
            batches,
        };
        if let Err(e) = self.coordinator.write(key, Some(snapshot)) {
            kafkalite_core::logging::warn(
                LOGGER,
                &format!("cannot persist {}: {e}", key.coordinator_key()),
            );
        }
    }

    /// The expiry sweep: acquisition locks, then member sessions.
    fn sweep(self: &Arc<Self>) {
        let Ok(host) = self.host() else {
            return;
        };
        let now = now_ms();
        let mut settings: HashMap<String, ShareSettings> = HashMap::new();
        let mut released = false;
        {
            let mut partitions = self.partitions.lock().expect("lock");
            for (key, state) in partitions.iter_mut() {
                let s = settings
                    .entry(key.group_id.clone())
                    .or_insert_with(|| host.share_settings(&key.group_id));
                if state.expire_locks(now, &limits(s)) > 0 {
                    released = true;
                    self.persist(key, state);
                }
            }
        }
        let expired: Vec<(String, String)> = {
            let resolve = Self::resolver(&host);
            let mut groups = self.groups.lock().expect("lock");
            groups
                .values_mut()
                .flat_map(|g| {
                    let id = g.group_id.clone();
                    g.expire(now, &resolve)
                        .into_iter()
                        .map(move |m| (id.clone(), m))
                })
                .collect()
        };
        for (group, member) in expired {
            kafkalite_core::logging::info(
                "kafkalite.coordinator.group.GroupMetadataManager",
                &format!("[GroupId {group}] Member {member} fenced from the group because its session expired."),
            );
            let s = settings
                .entry(group.clone())
                .or_insert_with(|| host.share_settings(&group))
                .clone();
            self.member_gone(&group, &member, &s);
        }
        // Sessions of members no group has (never joined, or gone while the broker
        // restarted) would hold a place in the bounded cache forever.
        {
            let groups = self.groups.lock().expect("lock");
            self.sessions
                .lock()
                .expect("lock")
                .retain(|g, m| groups.get(g).is_some_and(|g| g.members.contains_key(m)));
        }
        if released {
            host.data_arrived().notify_waiters();
        }
    }

    /// Step `member`'s share session for a request at `epoch`.
    pub fn session_step(
        self: &Arc<Self>,
        group: &str,
        member: &str,
        epoch: i32,
        added: &[(Uuid, i32)],
        forgotten: &[(Uuid, i32)],
    ) -> Result<Step, ApiError> {
        self.ensure_started();
        self.sessions
            .lock()
            .expect("lock")
            .step(group, member, epoch, added, forgotten)
    }

    /// The session's partitions.
    #[must_use]
    pub fn session_partitions(&self, group: &str, member: &str) -> Vec<(Uuid, i32)> {
        self.sessions
            .lock()
            .expect("lock")
            .partitions(group, member)
    }

    /// A closed session's records go back (ShareFetch / ShareAcknowledge at epoch -1).
    pub fn session_closed(&self, group: &str, member: &str) {
        if let Ok(host) = self.host() {
            let settings = host.share_settings(group);
            self.release_member(group, member, &settings);
        }
    }

    /// The leader's partition for a share-partition, or the error to answer with.
    fn leader_partition(
        host: &Arc<dyn ShareHost>,
        topic_id: Uuid,
        index: i32,
    ) -> Result<Arc<crate::cluster::partition::Partition>, ApiError> {
        let topic = host.topic_by_id(topic_id).ok_or_else(|| {
            ApiError::new(
                codes::UNKNOWN_TOPIC_ID,
                "This server does not host this topic ID.",
            )
        })?;
        let partition = topic.partition(index).ok_or_else(|| {
            ApiError::new(
                codes::UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.",
            )
        })?;
        if partition.replica_state().leader != host.node_id() {
            return Err(ApiError::new(
                codes::NOT_LEADER_OR_FOLLOWER,
                "This server is not the leader for that topic-partition.",
            ));
        }
        Ok(partition)
    }

    /// The share-partition's state, initialized on first use from what the share
    /// coordinator persisted, else from `share.auto.offset.reset`.
    fn state_for<'a>(
        &self,
        partitions: &'a mut HashMap<SharePartitionKey, SharePartitionState>,
        key: &SharePartitionKey,
        partition: &crate::cluster::partition::Partition,
        settings: &ShareSettings,
    ) -> Result<&'a mut SharePartitionState, ApiError> {
        if !partitions.contains_key(key) {
            let state = match self.coordinator.read(key)? {
                Some(s) => SharePartitionState::from_persisted(s.start_offset, &s.batches),
                None => {
                    let start = initial_offset(partition, &settings.auto_offset_reset);
                    let state = SharePartitionState::starting_at(start);
                    self.persist(key, &state);
                    state
                }
            };
            partitions.insert(key.clone(), state);
        }
        let state = partitions.get_mut(key).expect("inserted");
        let log_start = partition.log.lock().expect("lock").log_start_offset();
        state.move_start_to(log_start);
        Ok(state)
    }

    /// Apply `member`'s acknowledgements to one share-partition, persisting the change.
    pub fn acknowledge(
        &self,
        group: &str,
        member: &str,
        topic_id: Uuid,
        index: i32,
        batches: &[AckBatch],
        renew: bool,
    ) -> Result<(), ApiError> {
        let host = self.host()?;
        let partition = Self::leader_partition(&host, topic_id, index)?;
        let settings = host.share_settings(group);
        if renew && !settings.renew_acknowledge_enable {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                "Renew acknowledgements are disabled for this group (share.renew.acknowledge.enable=false).",
            ));
        }
        let key = SharePartitionKey {
            group_id: group.to_string(),
            topic_id,
            partition: index,
        };
        let mut partitions = self.partitions.lock().expect("lock");
        let state = self.state_for(&mut partitions, &key, &partition, &settings)?;
        let released = state.acknowledge(member, batches, renew, &limits(&settings), now_ms())?;
        self.persist(&key, state);
        drop(partitions);
        if released {
            host.data_arrived().notify_waiters();
        }
        Ok(())
    }

    /// Acquire records of one share-partition for `member`: at most `max_records` (whole
    /// batches) and about `max_bytes`.
    #[allow(clippy::too_many_arguments)]
    pub fn acquire(
        &self,
        group: &str,
        member: &str,
        topic_id: Uuid,
        index: i32,
        max_records: usize,
        strict: bool,
        max_bytes: u64,
    ) -> FetchedPartition {
        let mut out = FetchedPartition::default();
        let result = (|| -> Result<(), ApiError> {
            let host = self.host()?;
            let partition = Self::leader_partition(&host, topic_id, index)?;
            let settings = host.share_settings(group);
            let limits = limits(&settings);
            let key = SharePartitionKey {
                group_id: group.to_string(),
                topic_id,
                partition: index,
            };
            let bound = if settings.isolation_read_committed {
                partition.last_stable_offset()
            } else {
                partition.high_watermark()
            };
            let mut partitions = self.partitions.lock().expect("lock");
            let state = self.state_for(&mut partitions, &key, &partition, &settings)?;
            let mut position = state.next_fetch_offset();
            let mut bytes: Vec<u8> = Vec::new();
            let budget = max_bytes.clamp(1, PARTITION_BYTES_MAX);
            // A few reads at most: records held by others may fill the first one.
            for _ in 0..8 {
                if out
                    .acquired
                    .iter()
                    .map(|a| (a.1 - a.0 + 1) as usize)
                    .sum::<usize>()
                    >= max_records
                    || position >= bound
                    || !state.has_acquirable(bound, &limits)
                {
                    break;
                }
                let slice = {
                    let log = partition.log.lock().expect("lock");
                    log.read(
                        position,
                        budget.saturating_sub(bytes.len() as u64).max(1),
                        Some(bound),
                    )
                };
                let Ok(Some(slice)) = slice else {
                    break;
                };
                let mut buf = vec![0u8; usize::try_from(slice.len).unwrap_or(0)];
                slice
                    .file
                    .read_exact_at(&mut buf, slice.position)
                    .map_err(|e| ApiError::new(codes::KAFKA_STORAGE_ERROR, e.to_string()))?;
                let mut batches = Vec::new();
                let mut spans = Vec::new();
                let mut at = 0usize;
                // read_committed: the aborted transactions' batches are never delivered.
                let mut aborted: HashMap<i64, i64> = if settings.isolation_read_committed {
                    partition
                        .aborted_between(position, bound)
                        .into_iter()
                        .collect()
                } else {
                    HashMap::new()
                };
                while let Ok(h) = BatchHeader::parse(&buf[at..]) {
                    let size = h.total_size();
                    if at + size > buf.len() {
                        break;
                    }
                    let last = h.base_offset + i64::from(h.last_offset_delta);
                    let mut skipped = h.is_control();
                    if h.is_transactional() {
                        match aborted.get(&h.producer_id) {
                            Some(&first) if h.base_offset >= first => {
                                skipped = true;
                                if h.is_control() {
                                    // The abort marker ends that transaction.
                                    aborted.remove(&h.producer_id);
                                }
                            }
                            _ => {}
                        }
                    }
                    if last >= position {
                        batches.push((h.base_offset, last, skipped));
                        spans.push(at..at + size);
                    }
                    at += size;
                }
                if batches.is_empty() {
                    break;
                }
                let remaining = max_records
                    - out
                        .acquired
                        .iter()
                        .map(|a| (a.1 - a.0 + 1) as usize)
                        .sum::<usize>();
                let (runs, sent) =
                    state.acquire(member, &batches, remaining, strict, &limits, now_ms());
                for (span, send) in spans.into_iter().zip(sent) {
                    if send {
                        bytes.extend_from_slice(&buf[span]);
                    }
                }
                out.acquired.extend(runs);
                position = batches.last().map_or(position, |b| b.1 + 1);
                if bytes.len() as u64 >= budget {
                    break;
                }
            }
            if !bytes.is_empty() {
                out.records = Some(bytes::Bytes::from(bytes));
            }
            Ok(())
        })();
        if let Err(e) = result {
            out.error = Some(e);
        }
        out
    }

    /// Per share-partition of `group`: (topic id, partition, start offset, lag, counts).
    #[must_use]
    pub fn describe_offsets(&self, group: &str) -> Vec<(Uuid, i32, i64, i64)> {
        let Ok(host) = self.host() else {
            return Vec::new();
        };
        let partitions = self.partitions.lock().expect("lock");
        let mut out: Vec<(Uuid, i32, i64, i64)> = partitions
            .iter()
            .filter(|(k, _)| k.group_id == group)
            .map(|(k, s)| {
                let hw = host
                    .topic_by_id(k.topic_id)
                    .and_then(|t| t.partition(k.partition))
                    .map_or(s.start_offset(), |p| p.high_watermark());
                let done = i64::from(s.delivery_complete_count());
                (
                    k.topic_id,
                    k.partition,
                    s.start_offset(),
                    (hw - s.start_offset() - done).max(0),
                )
            })
            .collect();
        for (k, snap) in self.coordinator.group_states(group) {
            if !partitions.contains_key(&k) {
                out.push((k.topic_id, k.partition, snap.start_offset, -1));
            }
        }
        out.sort();
        out
    }
}

impl ShareGroups {
    /// The group as an admin operation on its offsets needs it: a share group with no
    /// members (created empty when `create`), else NON_EMPTY_GROUP / GROUP_ID_NOT_FOUND.
    fn empty_group(&self, group_id: &str, create: bool) -> Result<(), ApiError> {
        let host = self.host()?;
        let mut groups = self.groups.lock().expect("lock");
        match groups.get(group_id) {
            Some(g) if !g.members.is_empty() => Err(ApiError::new(
                codes::NON_EMPTY_GROUP,
                format!("The group {group_id} is not empty."),
            )),
            Some(_) => Ok(()),
            None => {
                if let Some(kind) = host.other_group_type(group_id) {
                    return Err(ApiError::new(
                        codes::GROUP_ID_NOT_FOUND,
                        format!("Group {group_id} is not a share group (it is a {kind} group)."),
                    ));
                }
                let persisted = !self.coordinator.group_states(group_id).is_empty();
                if !create && !persisted {
                    return Err(ApiError::new(
                        codes::GROUP_ID_NOT_FOUND,
                        format!("Group {group_id} not found."),
                    ));
                }
                groups.insert(group_id.to_string(), ShareGroup::new(group_id));
                Ok(())
            }
        }
    }

    /// AlterShareGroupOffsets: check the group (empty, created if new) once.
    pub fn begin_alter(&self, group_id: &str) -> Result<(), ApiError> {
        self.empty_group(group_id, true)
    }

    /// Set a share-partition's start offset (nothing in flight from then on), persisted.
    pub fn alter_start_offset(
        &self,
        group_id: &str,
        topic_id: Uuid,
        partition: i32,
        offset: i64,
    ) -> Result<(), ApiError> {
        let host = self.host()?;
        let p = Self::leader_partition(&host, topic_id, partition)?;
        if offset < 0 {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                format!("The start offset {offset} is negative."),
            ));
        }
        let key = SharePartitionKey {
            group_id: group_id.to_string(),
            topic_id,
            partition,
        };
        let log_start = p.log.lock().expect("lock").log_start_offset();
        let mut state = SharePartitionState::starting_at(offset.max(log_start));
        let mut partitions = self.partitions.lock().expect("lock");
        state.state_epoch = partitions
            .get(&key)
            .map_or(0, |s| s.state_epoch.wrapping_add(1));
        self.persist(&key, &state);
        partitions.insert(key, state);
        Ok(())
    }

    /// DeleteShareGroupOffsets: check the group (existing, empty) once.
    pub fn begin_delete_offsets(&self, group_id: &str) -> Result<(), ApiError> {
        self.empty_group(group_id, false)
    }

    /// Forget every share-partition of `topic_id` in the group (tombstones in
    /// `__share_group_state`): a consumer starts again from `share.auto.offset.reset`.
    pub fn delete_topic_state(&self, group_id: &str, topic_id: Uuid) -> Result<(), ApiError> {
        let mut partitions = self.partitions.lock().expect("lock");
        let mut keys: BTreeSet<SharePartitionKey> = partitions
            .keys()
            .filter(|k| k.group_id == group_id && k.topic_id == topic_id)
            .cloned()
            .collect();
        keys.extend(
            self.coordinator
                .group_states(group_id)
                .into_iter()
                .map(|(k, _)| k)
                .filter(|k| k.topic_id == topic_id),
        );
        for key in keys {
            self.coordinator.write(&key, None)?;
            partitions.remove(&key);
        }
        Ok(())
    }

    /// DeleteGroups for a share group: refused while it has members; its state goes too.
    /// `None` when `group_id` is no share group here.
    pub fn delete_group(&self, group_id: &str) -> Option<Result<(), ApiError>> {
        let known =
            self.is_share_group(group_id) || !self.coordinator.group_states(group_id).is_empty();
        if !known {
            return None;
        }
        if let Err(e) = self.empty_group(group_id, false) {
            return Some(Err(e));
        }
        let topics: BTreeSet<Uuid> = self
            .coordinator
            .group_states(group_id)
            .into_iter()
            .map(|(k, _)| k.topic_id)
            .chain(
                self.partitions
                    .lock()
                    .expect("lock")
                    .keys()
                    .filter(|k| k.group_id == group_id)
                    .map(|k| k.topic_id),
            )
            .collect();
        for topic in topics {
            if let Err(e) = self.delete_topic_state(group_id, topic) {
                return Some(Err(e));
            }
        }
        self.groups.lock().expect("lock").remove(group_id);
        Some(Ok(()))
    }
}

/// Where a share-partition starts: `earliest` (the log start), `latest` (the high
/// watermark) or `by_duration:<ISO-8601>` (the first record at or after now minus it).
fn initial_offset(partition: &crate::cluster::partition::Partition, reset: &str) -> i64 {
    let log = partition.log.lock().expect("lock");
    match reset {
        "earliest" => log.log_start_offset(),
        r if r.starts_with("by_duration:") => {
            let ms = crate::config::group::iso_duration_ms(&r["by_duration:".len()..]).unwrap_or(0);
            log.offset_for_timestamp(now_ms().saturating_sub(ms))
                .ok()
                .flatten()
                .map_or_else(|| partition.high_watermark(), |(o, _)| o)
        }
        _ => partition.high_watermark(),
    }
}
