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
//!
//! The group's methods live by job: `membership` (JoinGroup: new, known and static
//! members), `rebalance` (the join phase and its completion, and the timers' callbacks),
//! `requests` (SyncGroup, Heartbeat, LeaveGroup, commit checks, offset expiry), `protocol`
//! (choosing the protocol, what joiners are told), `snapshot` (DescribeGroups, the metadata
//! record and a group restored from it), `mixed` (a consumer group serving classic members,
//! and converting between the two kinds of group).

mod membership;
mod mixed;
mod protocol;
mod rebalance;
mod requests;
mod snapshot;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Duration;

use bytes::Bytes;

use crate::groups::consumer::written::ConsumerWrite;
use crate::groups::consumer::ConsumerGroup;
use crate::groups::member::Member;
use crate::groups::offsets::Offsets;
use crate::groups::operation::{Ctx, CONSUMER_PROTOCOL_TYPE};
use kafkalite_core::error_codes as errors;

/// How long a new member may wait in its first JoinGroup (Kafka's
/// `group.new.member.join.timeout`), since it cannot heartbeat before it has an id.
pub const NEW_MEMBER_JOIN_TIMEOUT: Duration = Duration::from_secs(300);

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
    /// Set while the group id belongs to a consumer-protocol (KIP-848) group; the classic
    /// fields above then stay Empty.
    pub consumer: Option<ConsumerGroup>,
    /// Records of a consumer group this id no longer is (deleted from the log with the
    /// group's next write).
    pub consumer_tombstones: Vec<ConsumerWrite>,
    /// The classic group's metadata record is to be deleted (the id became a consumer
    /// group).
    pub classic_record_dropped: bool,
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
            consumer: None,
            consumer_tombstones: Vec::new(),
            classic_record_dropped: false,
            rebalance_epoch: 0,
            initial_join: false,
            new_member_added: false,
            next_join_seq: 0,
        }
    }

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

    fn next_seq(&mut self) -> u64 {
        self.next_join_seq += 1;
        self.next_join_seq
    }

    fn touch(&mut self, member_id: &str, cx: &Ctx) {
        if let Some(m) = self.members.get_mut(member_id) {
            m.heartbeat_deadline = cx.now + timeout(m.session_timeout_ms);
        }
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

    /// Nothing left to keep: no members, no pending joiners, no offsets.
    #[must_use]
    pub fn is_removable(&self) -> bool {
        self.has_no_members() && self.offsets.is_empty() && self.pending_members.is_empty()
    }

    /// Stop being a consumer group: its records are deleted with the next write.
    pub fn drop_consumer(&mut self) {
        if let Some(cg) = self.consumer.take() {
            let tombstones = cg.written().tombstones(&self.id);
            self.consumer_tombstones.extend(tombstones);
        }
    }

    /// The consumer-group records to write after an operation: tombstones of a consumer
    /// group this id no longer is, then what changed in the one it is.
    pub fn take_consumer_writes(&mut self) -> Vec<ConsumerWrite> {
        let mut out = std::mem::take(&mut self.consumer_tombstones);
        if let Some(cg) = self.consumer.as_mut() {
            out.extend(cg.take_writes(&self.id));
        }
        out
    }

    /// Empty under either protocol.
    #[must_use]
    pub fn has_no_members(&self) -> bool {
        self.state == GroupState::Empty
            && self.consumer.as_ref().is_none_or(|c| c.members.is_empty())
    }
}

fn timeout(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

#[cfg(test)]
mod mixed_tests;
#[cfg(test)]
mod tests;
