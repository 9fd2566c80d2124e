//! One classic-protocol group: its state machine (Empty, PreparingRebalance,
//! CompletingRebalance, Stable, Dead), members and committed offsets.
//!
//! This follows Kafka's `GroupCoordinator`/`GroupMetadata` closely, so clients see the same
//! answers in the same situations:
//! - JoinGroup answers are held back until the join phase completes (all known members
//!   rejoined, or the rebalance timeout passed), so concurrent joiners never see
//!   UNKNOWN_MEMBER_ID storms; the first joiner leads and receives every member's metadata.
//! - The first rebalance of an empty group waits `group.initial.rebalance.delay.ms` for more
//!   members (each new joiner extends it, up to the rebalance timeout).
//! - SyncGroup answers wait for the leader's assignment, which is passed through unread.
//!
//! Nothing here blocks or awaits: methods change state and push `Effect`s (timers to start,
//! a metadata record to write) that the coordinator carries out while the group is locked.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::config::GroupConfig;
use super::errors;
use super::member::{JoinResult, JoinedMember, Member, Reply, SyncResult};
use super::offsets::{Offsets, RetentionBase};
use super::records::{GroupRecord, MemberRecord};

/// How long a new member may wait in its first JoinGroup (Kafka's
/// `group.new.member.join.timeout`), since it cannot heartbeat before it has an id.
pub const NEW_MEMBER_JOIN_TIMEOUT: Duration = Duration::from_secs(300);
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    /// The name Kafka uses in DescribeGroups and ListGroups.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// The first rebalance of an empty group: wait `delay_ms`, and again (up to `remaining_ms`
/// in all) while new members keep arriving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InitialDelay {
    pub configured_ms: i64,
    pub delay_ms: i64,
    pub remaining_ms: i64,
}

/// What a state change asks the coordinator to do.
#[derive(Debug)]
pub enum Effect {
    /// Complete the join phase `epoch` after `delay` (unless it completes earlier).
    JoinTimer {
        epoch: u64,
        delay: Duration,
        initial: Option<InitialDelay>,
    },
    /// Members that have not sent SyncGroup for `generation` by then are removed.
    SyncTimer { generation: i32, delay: Duration },
    /// Expire the member if its heartbeat deadline passes.
    WatchMember {
        member_id: String,
        incarnation: u64,
        deadline: Instant,
    },
    /// Forget a member id handed out with MEMBER_ID_REQUIRED if it does not rejoin in time.
    WatchPending {
        member_id: String,
        incarnation: u64,
        timeout: Duration,
    },
    /// Write the group's metadata record.
    StoreGroup,
}

/// The clock, settings and effect list of one operation.
pub struct Ctx<'a> {
    pub now: Instant,
    pub now_ms: i64,
    pub config: &'a GroupConfig,
    pub incarnations: &'a AtomicU64,
    pub effects: Vec<Effect>,
}

impl Ctx<'_> {
    fn incarnation(&self) -> u64 {
        self.incarnations.fetch_add(1, Ordering::Relaxed)
    }
}

pub struct JoinRequest {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// JoinGroup v4+: a new dynamic member first gets MEMBER_ID_REQUIRED and an id.
    pub require_known_member_id: bool,
    /// JoinGroup v9+: a rejoining static leader may be told to skip the assignment.
    pub supports_skip_assignment: bool,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
}

pub struct SyncRequest {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignments: Vec<(String, Bytes)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberDescription {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Bytes,
    pub assignment: Bytes,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupDescription {
    pub state: GroupState,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<MemberDescription>,
}

pub struct Group {
    pub id: String,
    pub state: GroupState,
    /// When the group entered its current state (wall clock, ms).
    pub state_since_ms: i64,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub generation: i32,
    pub leader: Option<String>,
    pub members: HashMap<String, Member>,
    /// Ids handed out with MEMBER_ID_REQUIRED, not yet used to join (id -> incarnation).
    pub pending_members: HashMap<String, u64>,
    /// group.instance.id -> member id.
    pub static_members: HashMap<String, String>,
    /// Members that have not sent SyncGroup since the join phase completed.
    pub pending_sync: HashSet<String>,
    /// Topics the members subscribe to (consumer groups whose metadata parses).
    pub subscribed_topics: Option<BTreeSet<String>>,
    pub offsets: Offsets,
    /// Identifies the current join phase; timers of earlier phases do nothing.
    rebalance_epoch: u64,
    /// The current join phase is the delayed first rebalance of an empty group, which only
    /// its timer completes.
    initial_join: bool,
    new_member_added: bool,
    next_join_seq: u64,
}

impl Group {
    #[must_use]
    pub fn new(id: &str, now_ms: i64) -> Group {
        Group {
            id: id.to_string(),
            state: GroupState::Empty,
            state_since_ms: now_ms,
            protocol_type: None,
            protocol_name: None,
            generation: 0,
            leader: None,
            members: HashMap::new(),
            pending_members: HashMap::new(),
            static_members: HashMap::new(),
            pending_sync: HashSet::new(),
            subscribed_topics: None,
            offsets: Offsets::default(),
            rebalance_epoch: 0,
            initial_join: false,
            new_member_added: false,
            next_join_seq: 0,
        }
    }

    // -----------------------------------------------------------------------------------
    // Queries

    fn transition(&mut self, to: GroupState, cx: &Ctx) {
        self.state = to;
        self.state_since_ms = cx.now_ms;
    }

    fn is_leader(&self, member_id: &str) -> bool {
        self.leader.as_deref() == Some(member_id)
    }

    /// Members in order of arrival.
    fn members_in_order(&self) -> Vec<&Member> {
        let mut members: Vec<&Member> = self.members.values().collect();
        members.sort_by_key(|m| m.join_seq);
        members
    }

    fn rebalance_timeout(&self) -> Duration {
        let ms = self
            .members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0);
        Duration::from_millis(u64::try_from(ms).unwrap_or(0))
    }

    fn supports_protocols(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.state == GroupState::Empty {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols
                .iter()
                .any(|(name, _)| self.members.values().all(|m| m.supports(name)))
    }

    /// The protocol every member supports that most members prefer; ties go to the
    /// leader's order of preference.
    fn select_protocol(&self) -> Option<String> {
        let ordered = self.members_in_order();
        let reference = self
            .leader
            .as_ref()
            .and_then(|l| self.members.get(l))
            .or_else(|| ordered.first().copied())?;
        let candidates: Vec<&str> = reference
            .protocols
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| self.members.values().all(|m| m.supports(name)))
            .collect();
        let mut votes: HashMap<&str, usize> = HashMap::new();
        for m in self.members.values() {
            if let Some(choice) = m.vote(&candidates) {
                *votes.entry(choice).or_default() += 1;
            }
        }
        let mut best: Option<(&str, usize)> = None;
        for name in candidates {
            let n = votes.get(name).copied().unwrap_or(0);
            if best.is_none_or(|(_, b)| n > b) {
                best = Some((name, n));
            }
        }
        best.map(|(name, _)| name.to_string())
    }

    fn member_metadata(&self) -> Vec<JoinedMember> {
        let protocol = self.protocol_name.as_deref().unwrap_or("");
        self.members_in_order()
            .into_iter()
            .map(|m| JoinedMember {
                member_id: m.id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(protocol),
            })
            .collect()
    }

    fn current_join_result(&self, member_id: &str, with_members: bool) -> JoinResult {
        JoinResult {
            error: errors::NONE,
            member_id: member_id.to_string(),
            generation_id: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader: self.leader.clone().unwrap_or_default(),
            skip_assignment: false,
            members: if with_members {
                self.member_metadata()
            } else {
                Vec::new()
            },
        }
    }

    fn all_members_joined(&self) -> bool {
        self.pending_members.is_empty() && self.members.values().all(Member::is_awaiting_join)
    }

    /// A group.instance.id must map to this member id; a member id must exist.
    fn validate_member(&self, member_id: &str, instance: Option<&str>) -> Result<(), i16> {
        match instance {
            Some(instance) => match self.static_members.get(instance) {
                Some(current) if current != member_id => Err(errors::FENCED_INSTANCE_ID),
                Some(_) => Ok(()),
                None => Err(errors::UNKNOWN_MEMBER_ID),
            },
            None if self.members.contains_key(member_id) => Ok(()),
            None => Err(errors::UNKNOWN_MEMBER_ID),
        }
    }

    fn accepts_joining(&self, member_id: &str, max_size: usize) -> bool {
        match self.state {
            GroupState::Empty | GroupState::Dead => true,
            GroupState::PreparingRebalance => {
                self.members
                    .get(member_id)
                    .is_some_and(Member::is_awaiting_join)
                    || self
                        .members
                        .values()
                        .filter(|m| m.is_awaiting_join())
                        .count()
                        < max_size
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.members.contains_key(member_id) || self.members.len() < max_size
            }
        }
    }

    fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if self.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return None;
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for m in self.members.values() {
            topics.extend(subscription_topics(&m.metadata(protocol))?);
        }
        Some(topics)
    }

    #[must_use]
    pub fn is_subscribed_to(&self, topic: &str) -> bool {
        self.subscribed_topics
            .as_ref()
            .is_some_and(|t| t.contains(topic))
    }

    #[must_use]
    pub fn is_consumer_group(&self) -> bool {
        self.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
    }

    #[must_use]
    pub fn describe(&self) -> GroupDescription {
        let stable = self.state == GroupState::Stable;
        let protocol = if stable {
            self.protocol_name.clone().unwrap_or_default()
        } else {
            String::new()
        };
        let members = self
            .members_in_order()
            .into_iter()
            .map(|m| MemberDescription {
                member_id: m.id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                metadata: if stable {
                    m.metadata(&protocol)
                } else {
                    Bytes::new()
                },
                assignment: if stable {
                    m.assignment.clone()
                } else {
                    Bytes::new()
                },
            })
            .collect();
        GroupDescription {
            state: self.state,
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol,
            members,
        }
    }

    /// The metadata record of the group as it stands.
    #[must_use]
    pub fn to_record(&self) -> GroupRecord {
        let protocol = self.protocol_name.as_deref().unwrap_or("");
        GroupRecord {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation,
            protocol: self.protocol_name.clone(),
            leader: self.leader.clone(),
            current_state_timestamp: self.state_since_ms,
            members: self
                .members_in_order()
                .into_iter()
                .map(|m| MemberRecord {
                    member_id: m.id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.metadata(protocol),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    /// A group as replayed from `__consumer_offsets`: Stable with its members (who keep
    /// their assignments if they heartbeat within their session timeout, as after a Kafka
    /// coordinator failover), or Empty. Each member needs a `WatchMember` effect.
    #[must_use]
    pub fn restore(id: &str, record: Option<GroupRecord>, offsets: Offsets, cx: &Ctx) -> Group {
        let mut g = Group::new(id, cx.now_ms);
        g.offsets = offsets;
        let Some(record) = record else {
            return g;
        };
        g.protocol_type = Some(record.protocol_type).filter(|t| !t.is_empty());
        g.generation = record.generation;
        if record.current_state_timestamp >= 0 {
            g.state_since_ms = record.current_state_timestamp;
        }
        let Some(protocol) = record.protocol.filter(|_| !record.members.is_empty()) else {
            return g;
        };
        for m in record.members {
            if let Some(instance) = &m.group_instance_id {
                g.static_members
                    .insert(instance.clone(), m.member_id.clone());
            }
            let member = Member {
                id: m.member_id.clone(),
                group_instance_id: m.group_instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                protocols: vec![(protocol.clone(), m.subscription)],
                assignment: m.assignment,
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
                heartbeat_deadline: cx.now + timeout(m.session_timeout_ms),
                incarnation: cx.incarnation(),
                join_seq: g.next_seq(),
            };
            g.members.insert(m.member_id, member);
        }
        g.leader = record
            .leader
            .filter(|l| g.members.contains_key(l))
            .or_else(|| g.members_in_order().first().map(|m| m.id.clone()));
        g.protocol_name = Some(protocol);
        g.subscribed_topics = g.compute_subscribed_topics();
        g.state = GroupState::Stable;
        g
    }

    /// `WatchMember` effects for every member (after a restore).
    pub fn watch_all(&self, cx: &mut Ctx) {
        for m in self.members.values() {
            cx.effects.push(Effect::WatchMember {
                member_id: m.id.clone(),
                incarnation: m.incarnation,
                deadline: m.heartbeat_deadline,
            });
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.next_join_seq += 1;
        self.next_join_seq
    }

    fn touch(&mut self, member_id: &str, cx: &Ctx) {
        if let Some(m) = self.members.get_mut(member_id) {
            m.heartbeat_deadline = cx.now + timeout(m.session_timeout_ms);
        }
    }

    // -----------------------------------------------------------------------------------
    // Membership changes

    fn add_member(&mut self, member: Member) {
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader.is_none() {
            self.leader = Some(member.id.clone());
        }
        if let Some(instance) = &member.group_instance_id {
            self.static_members
                .insert(instance.clone(), member.id.clone());
        }
        self.pending_members.remove(&member.id);
        self.members.insert(member.id.clone(), member);
    }

    /// Remove a member without answering its calls or rebalancing.
    fn remove_member(&mut self, member_id: &str) -> Option<Member> {
        let member = self.members.remove(member_id);
        if let Some(instance) = member.as_ref().and_then(|m| m.group_instance_id.as_ref()) {
            if self.static_members.get(instance).map(String::as_str) == Some(member_id) {
                self.static_members.remove(instance);
            }
        }
        if self.is_leader(member_id) {
            self.leader = self.members_in_order().first().map(|m| m.id.clone());
        }
        self.pending_members.remove(member_id);
        self.pending_sync.remove(member_id);
        member
    }

    /// A member left or failed: answer its pending calls and rebalance the rest.
    fn remove_member_and_update(&mut self, member_id: &str, cx: &mut Ctx) {
        if let Some(mut m) = self.remove_member(member_id) {
            m.answer_join(JoinResult::error("", errors::UNKNOWN_MEMBER_ID));
            m.answer_sync(SyncResult::error(errors::UNKNOWN_MEMBER_ID));
        }
        if matches!(
            self.state,
            GroupState::Stable | GroupState::CompletingRebalance
        ) {
            self.maybe_prepare_rebalance(cx);
        }
    }

    fn add_member_and_rebalance(
        &mut self,
        member_id: String,
        req: JoinRequest,
        cx: &mut Ctx,
    ) -> Reply<JoinResult> {
        let (tx, rx) = oneshot::channel();
        let incarnation = cx.incarnation();
        let deadline = cx.now + NEW_MEMBER_JOIN_TIMEOUT;
        let join_seq = self.next_seq();
        let member = Member {
            id: member_id.clone(),
            group_instance_id: req.group_instance_id,
            client_id: req.client_id,
            client_host: req.client_host,
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms: req.session_timeout_ms,
            protocol_type: req.protocol_type,
            protocols: req.protocols,
            assignment: Bytes::new(),
            awaiting_join: Some(tx),
            awaiting_sync: None,
            is_new: true,
            heartbeat_deadline: deadline,
            incarnation,
            join_seq,
        };
        if self.state == GroupState::PreparingRebalance && self.generation == 0 {
            self.new_member_added = true;
        }
        self.add_member(member);
        cx.effects.push(Effect::WatchMember {
            member_id,
            incarnation,
            deadline,
        });
        self.maybe_prepare_rebalance(cx);
        Reply::Later(rx)
    }

    fn update_member_and_rebalance(
        &mut self,
        member_id: &str,
        req: JoinRequest,
        cx: &mut Ctx,
    ) -> Reply<JoinResult> {
        let (tx, rx) = oneshot::channel();
        if let Some(m) = self.members.get_mut(member_id) {
            m.protocols = req.protocols;
            m.rebalance_timeout_ms = req.rebalance_timeout_ms;
            m.session_timeout_ms = req.session_timeout_ms;
            // An earlier JoinGroup of the same member (a retry) is superseded.
            m.awaiting_join = Some(tx);
        }
        self.maybe_prepare_rebalance(cx);
        Reply::Later(rx)
    }

    /// A static member came back with a new member id: the old id is fenced, the member
    /// keeps its place (and, if nothing changed, its assignment without a rebalance).
    fn replace_static_member(
        &mut self,
        old_id: &str,
        new_id: String,
        req: JoinRequest,
        cx: &mut Ctx,
    ) -> Reply<JoinResult> {
        let Some(mut m) = self.members.remove(old_id) else {
            return self.add_member_and_rebalance(new_id, req, cx);
        };
        let current_leader = self.leader.clone();
        m.answer_join(JoinResult::error(old_id, errors::FENCED_INSTANCE_ID));
        m.answer_sync(SyncResult::error(errors::FENCED_INSTANCE_ID));
        if self.is_leader(old_id) {
            self.leader = Some(new_id.clone());
        }
        if let Some(instance) = &req.group_instance_id {
            self.static_members.insert(instance.clone(), new_id.clone());
        }
        if self.pending_sync.remove(old_id) {
            self.pending_sync.insert(new_id.clone());
        }
        let (tx, rx) = oneshot::channel();
        m.id.clone_from(&new_id);
        m.client_id = req.client_id;
        m.client_host = req.client_host;
        m.protocols = req.protocols;
        m.rebalance_timeout_ms = req.rebalance_timeout_ms;
        m.session_timeout_ms = req.session_timeout_ms;
        m.incarnation = cx.incarnation();
        m.heartbeat_deadline = cx.now + timeout(req.session_timeout_ms);
        m.awaiting_join = Some(tx);
        cx.effects.push(Effect::WatchMember {
            member_id: new_id.clone(),
            incarnation: m.incarnation,
            deadline: m.heartbeat_deadline,
        });
        self.members.insert(new_id.clone(), m);
        match self.state {
            GroupState::Stable if self.select_protocol() == self.protocol_name => {
                cx.effects.push(Effect::StoreGroup);
                let skip = self.is_leader(&new_id) && req.supports_skip_assignment;
                let mut result = self.current_join_result(&new_id, skip);
                result.skip_assignment = skip;
                if !skip {
                    // An older client that led the group learns it is a follower of its
                    // former self, and simply syncs to get its assignment back.
                    result.leader = current_leader.unwrap_or_default();
                }
                if let Some(m) = self.members.get_mut(&new_id) {
                    m.answer_join(result);
                }
            }
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance(cx);
            }
            _ => {}
        }
        Reply::Later(rx)
    }

    // -----------------------------------------------------------------------------------
    // Rebalancing

    fn maybe_prepare_rebalance(&mut self, cx: &mut Ctx) {
        if matches!(
            self.state,
            GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty
        ) {
            self.prepare_rebalance(cx);
        }
    }

    fn prepare_rebalance(&mut self, cx: &mut Ctx) {
        if self.state == GroupState::CompletingRebalance {
            // Members waiting in SyncGroup rejoin instead.
            for m in self.members.values_mut() {
                m.assignment = Bytes::new();
                m.answer_sync(SyncResult::error(errors::REBALANCE_IN_PROGRESS));
            }
        }
        self.pending_sync.clear();
        let initial = self.state == GroupState::Empty;
        self.rebalance_epoch += 1;
        self.initial_join = initial;
        let rebalance_timeout = self.rebalance_timeout();
        self.transition(GroupState::PreparingRebalance, cx);
        let effect = if initial {
            let delay_ms = cx.config.initial_rebalance_delay_ms;
            Effect::JoinTimer {
                epoch: self.rebalance_epoch,
                delay: Duration::from_millis(delay_ms as u64),
                initial: Some(InitialDelay {
                    configured_ms: delay_ms,
                    delay_ms,
                    remaining_ms: (rebalance_timeout.as_millis() as i64 - delay_ms).max(0),
                }),
            }
        } else {
            Effect::JoinTimer {
                epoch: self.rebalance_epoch,
                delay: rebalance_timeout,
                initial: None,
            }
        };
        cx.effects.push(effect);
    }

    /// Complete the join phase now if every known member has rejoined (not during the
    /// delayed first rebalance, which only its timer ends).
    pub fn try_complete_join(&mut self, cx: &mut Ctx) {
        if self.state == GroupState::PreparingRebalance
            && !self.initial_join
            && self.all_members_joined()
        {
            self.complete_join(cx);
        }
    }

    /// The leader must be a member that rejoined; pick one if the current leader did not.
    fn elect_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader.as_ref() else {
            return false;
        };
        if self
            .members
            .get(leader)
            .is_some_and(Member::is_awaiting_join)
        {
            return true;
        }
        let joined = self
            .members_in_order()
            .into_iter()
            .find(|m| m.is_awaiting_join())
            .map(|m| m.id.clone());
        match joined {
            Some(id) => {
                self.leader = Some(id);
                true
            }
            None => false,
        }
    }

    fn complete_join(&mut self, cx: &mut Ctx) {
        // Dynamic members that did not rejoin are out; static ones keep their place until
        // their session expires.
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| !m.is_awaiting_join() && m.group_instance_id.is_none())
            .map(|m| m.id.clone())
            .collect();
        for id in gone {
            self.remove_member(&id);
        }
        if !self.elect_joined_leader() && !self.members.is_empty() {
            // Nobody rejoined: wait for their sessions to expire, then try again.
            self.rebalance_epoch += 1;
            self.initial_join = false;
            cx.effects.push(Effect::JoinTimer {
                epoch: self.rebalance_epoch,
                delay: self.rebalance_timeout(),
                initial: None,
            });
            return;
        }
        self.generation += 1;
        self.initial_join = false;
        self.new_member_added = false;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.subscribed_topics = None;
            self.transition(GroupState::Empty, cx);
            cx.effects.push(Effect::StoreGroup);
            return;
        }
        self.protocol_name = self.select_protocol();
        self.subscribed_topics = self.compute_subscribed_topics();
        self.transition(GroupState::CompletingRebalance, cx);
        let leader = self.leader.clone().unwrap_or_default();
        let everyone = self.member_metadata();
        let base = self.current_join_result("", false);
        for m in self.members.values_mut() {
            if m.is_awaiting_join() {
                let mut result = base.clone();
                result.member_id.clone_from(&m.id);
                if m.id == leader {
                    result.members.clone_from(&everyone);
                }
                m.answer_join(result);
            }
            m.heartbeat_deadline = cx.now + timeout(m.session_timeout_ms);
            if m.is_new {
                // Its deadline moved from the new-member join timeout to its session
                // timeout: re-arm the timer (the old one retires with the incarnation).
                m.is_new = false;
                m.incarnation = cx.incarnation();
                cx.effects.push(Effect::WatchMember {
                    member_id: m.id.clone(),
                    incarnation: m.incarnation,
                    deadline: m.heartbeat_deadline,
                });
            }
        }
        self.pending_sync = self.members.keys().cloned().collect();
        cx.effects.push(Effect::SyncTimer {
            generation: self.generation,
            delay: self.rebalance_timeout(),
        });
    }

    // -----------------------------------------------------------------------------------
    // Requests

    pub fn join(&mut self, req: JoinRequest, cx: &mut Ctx) -> Reply<JoinResult> {
        let reply = if !self.accepts_joining(&req.member_id, cx.config.max_size) {
            self.remove_member(&req.member_id);
            Reply::Now(JoinResult::error("", errors::GROUP_MAX_SIZE_REACHED))
        } else if req.member_id.is_empty() {
            self.join_new_member(req, cx)
        } else {
            self.join_current_member(req, cx)
        };
        self.try_complete_join(cx);
        reply
    }

    fn join_new_member(&mut self, req: JoinRequest, cx: &mut Ctx) -> Reply<JoinResult> {
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            return Reply::Now(JoinResult::error("", errors::INCONSISTENT_GROUP_PROTOCOL));
        }
        let prefix = req.group_instance_id.as_deref().unwrap_or(&req.client_id);
        let new_id = format!("{prefix}-{}", uuid::Uuid::new_v4());
        match req.group_instance_id.clone() {
            Some(instance) => match self.static_members.get(&instance).cloned() {
                Some(old_id) => self.replace_static_member(&old_id, new_id, req, cx),
                None => self.add_member_and_rebalance(new_id, req, cx),
            },
            None if req.require_known_member_id => {
                let incarnation = cx.incarnation();
                self.pending_members.insert(new_id.clone(), incarnation);
                cx.effects.push(Effect::WatchPending {
                    member_id: new_id.clone(),
                    incarnation,
                    timeout: timeout(req.session_timeout_ms),
                });
                Reply::Now(JoinResult::error(&new_id, errors::MEMBER_ID_REQUIRED))
            }
            None => self.add_member_and_rebalance(new_id, req, cx),
        }
    }

    fn join_current_member(&mut self, req: JoinRequest, cx: &mut Ctx) -> Reply<JoinResult> {
        let member_id = req.member_id.clone();
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            return Reply::Now(JoinResult::error(
                &member_id,
                errors::INCONSISTENT_GROUP_PROTOCOL,
            ));
        }
        if self.pending_members.contains_key(&member_id) {
            return self.add_member_and_rebalance(member_id, req, cx);
        }
        if let Err(e) = self.validate_member(&member_id, req.group_instance_id.as_deref()) {
            return Reply::Now(JoinResult::error(&member_id, e));
        }
        let (matches, leader) = match self.members.get(&member_id) {
            Some(m) => (m.matches(&req.protocols), self.is_leader(&member_id)),
            None => return Reply::Now(JoinResult::error(&member_id, errors::UNKNOWN_MEMBER_ID)),
        };
        match self.state {
            GroupState::PreparingRebalance => self.update_member_and_rebalance(&member_id, req, cx),
            // The member missed our answer: the same metadata gets the same answer again.
            GroupState::CompletingRebalance if matches => {
                Reply::Now(self.current_join_result(&member_id, leader))
            }
            // A leader's rejoin always rebalances (it may have seen a metadata change).
            GroupState::Stable if matches && !leader => {
                Reply::Now(self.current_join_result(&member_id, false))
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_member_and_rebalance(&member_id, req, cx)
            }
            GroupState::Empty | GroupState::Dead => {
                Reply::Now(JoinResult::error(&member_id, errors::UNKNOWN_MEMBER_ID))
            }
        }
    }

    pub fn sync(&mut self, req: SyncRequest, cx: &mut Ctx) -> Reply<SyncResult> {
        let id = req.member_id.as_str();
        if let Err(e) = self.validate_member(id, req.group_instance_id.as_deref()) {
            return Reply::Now(SyncResult::error(e));
        }
        if req.generation_id != self.generation {
            return Reply::Now(SyncResult::error(errors::ILLEGAL_GENERATION));
        }
        if req
            .protocol_type
            .as_ref()
            .is_some_and(|t| self.protocol_type.as_ref() != Some(t))
            || req
                .protocol_name
                .as_ref()
                .is_some_and(|n| self.protocol_name.as_ref() != Some(n))
        {
            return Reply::Now(SyncResult::error(errors::INCONSISTENT_GROUP_PROTOCOL));
        }
        match self.state {
            GroupState::Empty | GroupState::Dead => {
                Reply::Now(SyncResult::error(errors::UNKNOWN_MEMBER_ID))
            }
            GroupState::PreparingRebalance => {
                Reply::Now(SyncResult::error(errors::REBALANCE_IN_PROGRESS))
            }
            GroupState::CompletingRebalance => {
                let (tx, rx) = oneshot::channel();
                if let Some(m) = self.members.get_mut(id) {
                    m.awaiting_sync = Some(tx);
                }
                self.pending_sync.remove(id);
                if self.is_leader(id) {
                    let mut given: HashMap<String, Bytes> = req.assignments.into_iter().collect();
                    let protocol_type = self.protocol_type.clone();
                    let protocol_name = self.protocol_name.clone();
                    for m in self.members.values_mut() {
                        // Members the leader left out get an empty assignment.
                        m.assignment = given.remove(&m.id).unwrap_or_default();
                        if m.is_awaiting_sync() {
                            m.heartbeat_deadline = cx.now + timeout(m.session_timeout_ms);
                        }
                        m.answer_sync(SyncResult {
                            error: errors::NONE,
                            protocol_type: protocol_type.clone(),
                            protocol_name: protocol_name.clone(),
                            assignment: m.assignment.clone(),
                        });
                    }
                    self.transition(GroupState::Stable, cx);
                    cx.effects.push(Effect::StoreGroup);
                }
                Reply::Later(rx)
            }
            GroupState::Stable => {
                self.pending_sync.remove(id);
                self.touch(id, cx);
                let assignment = self
                    .members
                    .get(id)
                    .map(|m| m.assignment.clone())
                    .unwrap_or_default();
                Reply::Now(SyncResult {
                    error: errors::NONE,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: self.protocol_name.clone(),
                    assignment,
                })
            }
        }
    }

    pub fn heartbeat(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        cx: &Ctx,
    ) -> i16 {
        if let Err(e) = self.validate_member(member_id, instance) {
            return e;
        }
        if generation != self.generation {
            return errors::ILLEGAL_GENERATION;
        }
        match self.state {
            GroupState::Empty | GroupState::Dead => errors::UNKNOWN_MEMBER_ID,
            GroupState::PreparingRebalance => {
                self.touch(member_id, cx);
                errors::REBALANCE_IN_PROGRESS
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.touch(member_id, cx);
                errors::NONE
            }
        }
    }

    /// LeaveGroup for each (member id, group.instance.id); an empty member id removes the
    /// static member with that instance id (an administrative removal).
    pub fn leave(&mut self, leaving: &[(String, Option<String>)], cx: &mut Ctx) -> Vec<i16> {
        let out = leaving
            .iter()
            .map(|(member_id, instance)| {
                if member_id.is_empty() {
                    let current = instance
                        .as_ref()
                        .and_then(|i| self.static_members.get(i).cloned());
                    match current {
                        Some(current) => {
                            self.remove_member_and_update(&current, cx);
                            errors::NONE
                        }
                        None => errors::UNKNOWN_MEMBER_ID,
                    }
                } else if self.pending_members.remove(member_id).is_some() {
                    errors::NONE
                } else {
                    match self.validate_member(member_id, instance.as_deref()) {
                        Err(e) => e,
                        Ok(()) => {
                            self.remove_member_and_update(member_id, cx);
                            errors::NONE
                        }
                    }
                }
            })
            .collect();
        self.try_complete_join(cx);
        out
    }

    /// May this OffsetCommit write? Simple consumers (generation -1, no member) may commit
    /// to an empty group only; members must be current.
    pub fn validate_commit(
        &mut self,
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
        cx: &Ctx,
    ) -> Result<(), i16> {
        if generation >= 0 || !member_id.is_empty() || instance.is_some() {
            self.validate_member(member_id, instance)?;
            if generation != self.generation {
                return Err(errors::ILLEGAL_GENERATION);
            }
        } else if self.state != GroupState::Empty {
            return Err(errors::UNKNOWN_MEMBER_ID);
        }
        match self.state {
            GroupState::Empty => Ok(()),
            // During PreparingRebalance commits still go through; the next heartbeat tells
            // the member about the rebalance.
            GroupState::Stable | GroupState::PreparingRebalance => {
                self.touch(member_id, cx);
                Ok(())
            }
            GroupState::CompletingRebalance => Err(errors::REBALANCE_IN_PROGRESS),
            GroupState::Dead => Err(errors::UNKNOWN_MEMBER_ID),
        }
    }

    /// Offsets whose retention has passed (Kafka's rules: an empty group's offsets expire
    /// `offsets.retention.minutes` after it became empty; a stable consumer group's offsets
    /// of topics it no longer subscribes to, after their commit; a standalone consumer's,
    /// after their commit).
    #[must_use]
    pub fn expired_offsets(&self, now_ms: i64, retention_ms: i64) -> Vec<(String, i32)> {
        let base = match (&self.protocol_type, self.state) {
            (Some(_), GroupState::Empty) => RetentionBase::EmptySince(self.state_since_ms),
            (Some(t), GroupState::Stable) if t == CONSUMER_PROTOCOL_TYPE => {
                match &self.subscribed_topics {
                    Some(topics) => RetentionBase::Unsubscribed(topics),
                    None => RetentionBase::Never,
                }
            }
            (None, _) => RetentionBase::CommitTime,
            _ => RetentionBase::Never,
        };
        self.offsets.expired(now_ms, retention_ms, &base)
    }

    /// Nothing left to keep: no members, no pending joiners, no offsets.
    #[must_use]
    pub fn is_removable(&self) -> bool {
        self.state == GroupState::Empty
            && self.offsets.is_empty()
            && self.pending_members.is_empty()
    }

    // -----------------------------------------------------------------------------------
    // Timers

    pub fn on_join_timer(&mut self, epoch: u64, initial: Option<InitialDelay>, cx: &mut Ctx) {
        if self.state != GroupState::PreparingRebalance || epoch != self.rebalance_epoch {
            return;
        }
        if let Some(i) = initial {
            if self.new_member_added && i.remaining_ms != 0 {
                self.new_member_added = false;
                let delay_ms = i.configured_ms.min(i.remaining_ms);
                cx.effects.push(Effect::JoinTimer {
                    epoch,
                    delay: Duration::from_millis(delay_ms as u64),
                    initial: Some(InitialDelay {
                        configured_ms: i.configured_ms,
                        delay_ms,
                        remaining_ms: (i.remaining_ms - i.delay_ms).max(0),
                    }),
                });
                return;
            }
        }
        self.complete_join(cx);
    }

    pub fn on_sync_timer(&mut self, generation: i32, cx: &mut Ctx) {
        if generation != self.generation
            || !matches!(
                self.state,
                GroupState::CompletingRebalance | GroupState::Stable
            )
            || self.pending_sync.is_empty()
        {
            return;
        }
        let missing: Vec<String> = self.pending_sync.drain().collect();
        for id in missing {
            if let Some(mut m) = self.remove_member(&id) {
                m.answer_join(JoinResult::error("", errors::UNKNOWN_MEMBER_ID));
            }
        }
        self.maybe_prepare_rebalance(cx);
        self.try_complete_join(cx);
    }

    /// The member's heartbeat deadline came: `Some(next deadline)` to keep watching, `None`
    /// when the member is gone (expired now, or earlier).
    pub fn on_heartbeat_deadline(
        &mut self,
        member_id: &str,
        incarnation: u64,
        cx: &mut Ctx,
    ) -> Option<Instant> {
        let m = self.members.get_mut(member_id)?;
        if m.incarnation != incarnation {
            return None;
        }
        if m.heartbeat_deadline > cx.now {
            return Some(m.heartbeat_deadline);
        }
        if m.keeps_alive_by_waiting() {
            m.heartbeat_deadline = cx.now + timeout(m.session_timeout_ms);
            return Some(m.heartbeat_deadline);
        }
        self.remove_member_and_update(member_id, cx);
        self.try_complete_join(cx);
        None
    }

    pub fn on_pending_deadline(&mut self, member_id: &str, incarnation: u64, cx: &mut Ctx) {
        if self.pending_members.get(member_id) == Some(&incarnation) {
            self.pending_members.remove(member_id);
            self.try_complete_join(cx);
        }
    }
}

fn timeout(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// Topics of a ConsumerProtocolSubscription (version i16, then topics: [string]); later
/// versions only append fields, so any version's topics read the same way.
fn subscription_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let version = i16::from_be_bytes(metadata.get(..2)?.try_into().ok()?);
    if version < 0 {
        return None;
    }
    let mut rest = &metadata[2..];
    let count = i32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
    rest = &rest[4..];
    let count = usize::try_from(count).ok()?;
    if count > rest.len() / 2 {
        return None;
    }
    let mut topics = Vec::with_capacity(count);
    for _ in 0..count {
        let len = i16::from_be_bytes(rest.get(..2)?.try_into().ok()?);
        let len = usize::try_from(len).ok()?;
        let name = rest.get(2..2 + len)?;
        topics.push(std::str::from_utf8(name).ok()?.to_string());
        rest = &rest[2 + len..];
    }
    Some(topics)
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
