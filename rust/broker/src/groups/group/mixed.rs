//! One group id, both protocols (KIP-848's mixed groups, as Kafka 4.1 runs them):
//!
//! - a consumer group with members serves classic members' JoinGroup, SyncGroup,
//!   Heartbeat and LeaveGroup itself (`consumer::classic`); an empty one becomes a classic
//!   group again at the first JoinGroup;
//! - a classic group of the embedded consumer protocol with members is upgraded online
//!   when a consumer-protocol member joins: its members stay, at their generation, with
//!   their assignments (`upgrade_to_consumer`);
//! - a consumer group whose last consumer-protocol member leaves or is fenced becomes a
//!   classic group again, its classic members with their target assignments, and rebalances
//!   (`downgrade_to_classic`).
//!
//! `group.consumer.migration.policy` says which of the two conversions may happen; a group
//! too large for the other kind stays as it is.

use tokio::time::Instant;

use super::{timeout, Group, GroupState, JoinRequest, SyncRequest};
use crate::groups::consumer::classic::{metadata_for, owned_ids};
use crate::groups::consumer::member::{ClassicMember, ConsumerMember, Subscription};
use crate::groups::consumer::reconcile::{MemberState, Progress};
use crate::groups::consumer::{ConsumerGroup, Deadline, Refusal, TopicImage};
use crate::groups::consumer_protocol::{
    encode_assignment, parse_assignment, parse_subscription, version_of,
};
use crate::groups::member::{JoinResult, Member, Reply, SyncResult};
use crate::groups::operation::CONSUMER_PROTOCOL_TYPE;
use crate::groups::operation::{Ctx, Effect};
use kafkalite_core::error_codes as errors;

impl Group {
    /// The consumer group, if the id is one with members (classic requests go to it).
    fn mixed(&mut self) -> Option<&mut ConsumerGroup> {
        self.consumer.as_mut().filter(|cg| !cg.members.is_empty())
    }

    /// JoinGroup: served by the consumer group if it has members; an empty consumer group
    /// becomes a classic one.
    pub fn classic_join(
        &mut self,
        req: JoinRequest,
        image: &TopicImage,
        cx: &mut Ctx,
    ) -> Reply<JoinResult> {
        if let Some(cg) = self.mixed() {
            return Reply::Now(cg.classic_join(req, image, cx));
        }
        self.drop_consumer();
        self.join(req, cx)
    }

    /// SyncGroup, by whichever kind the group is.
    pub fn classic_sync(&mut self, req: SyncRequest, cx: &mut Ctx) -> Reply<SyncResult> {
        if self.consumer.is_some() {
            return Reply::Now(match self.mixed() {
                Some(cg) => cg.classic_sync(&req, cx),
                None => SyncResult::error(errors::UNKNOWN_MEMBER_ID),
            });
        }
        self.sync(req, cx)
    }

    /// Heartbeat, by whichever kind the group is.
    pub fn classic_heartbeat(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        cx: &mut Ctx,
    ) -> i16 {
        match self.consumer.as_mut() {
            Some(cg) => cg.classic_heartbeat(member_id, instance, generation, cx),
            None => self.heartbeat(member_id, instance, generation, cx),
        }
    }

    /// LeaveGroup, by whichever kind the group is: members leaving a consumer group are
    /// fenced (which may turn it classic).
    pub fn classic_leave(
        &mut self,
        leaving: &[(String, Option<String>)],
        cx: &mut Ctx,
    ) -> Vec<i16> {
        let Some(cg) = self.consumer.as_ref() else {
            return self.leave(leaving, cx);
        };
        let (codes, fenced) = cg.classic_leave(leaving);
        self.fence_consumer_members(&fenced, cx);
        codes
    }

    /// Remove consumer-group members (left, expired, fenced). If only classic members
    /// would remain and the policy allows it, the group becomes classic instead (without
    /// them); otherwise the group epoch moves on.
    pub fn fence_consumer_members(&mut self, member_ids: &[String], cx: &mut Ctx) {
        let Some(cg) = self.consumer.as_mut() else {
            return;
        };
        let leaving: Vec<String> = member_ids
            .iter()
            .filter(|id| cg.members.contains_key(*id))
            .cloned()
            .collect();
        if leaving.is_empty() {
            return;
        }
        let remaining = cg.members.len() - leaving.len();
        let downgrade = remaining > 0
            && cg.only_classic_members_remain(&leaving)
            && cx.config.migration_policy.downgrades()
            && remaining <= cx.config.max_size;
        if downgrade {
            self.downgrade_to_classic(&leaving, cx);
        } else {
            cg.fence_members(&leaving, cx.now_ms);
        }
    }

    /// A consumer-protocol member joins a classic group (`self.consumer` is `None`): an
    /// empty one is replaced by an empty consumer group; one with members is upgraded if
    /// it may be, else refused as Kafka refuses it.
    pub fn become_consumer_group(
        &mut self,
        group_id: &str,
        image: &TopicImage,
        cx: &mut Ctx,
    ) -> Result<(), Refusal> {
        if self.state == GroupState::Empty {
            // Members that were only handed an id (MEMBER_ID_REQUIRED) are forgotten.
            self.pending_members.clear();
            self.classic_record_dropped |= self.generation > 0;
            self.consumer = Some(ConsumerGroup::new(cx.now_ms));
            self.protocol_type = None;
            self.protocol_name = None;
            return Ok(());
        }
        let cannot = |why: &str| {
            Refusal::new(
                errors::GROUP_ID_NOT_FOUND,
                format!("Cannot upgrade classic group {group_id} to consumer group because {why}."),
            )
        };
        if !cx.config.migration_policy.upgrades() {
            return Err(cannot("online upgrade is disabled"));
        }
        if !self.is_consumer_group() {
            return Err(cannot(
                "the group does not use the consumer embedded protocol",
            ));
        }
        if self.members.len() > cx.config.consumer_max_size {
            return Err(cannot(
                "the group size exceeds the consumer group maximum size",
            ));
        }
        if self.members.len() >= cx.config.consumer_max_size {
            // The joiner would not fit: Kafka refuses the heartbeat and keeps the group.
            return Err(Refusal::new(
                errors::GROUP_MAX_SIZE_REACHED,
                format!(
                    "The consumer group has reached its maximum capacity of {} members.",
                    cx.config.consumer_max_size
                ),
            ));
        }
        self.upgrade_to_consumer(group_id, image, cx)
    }

    /// Kafka's `ConsumerGroup.fromClassicGroup`: every member keeps its generation as its
    /// epoch and its last assignment as both its current and target assignment; members
    /// waiting in JoinGroup or SyncGroup are told to rejoin.
    fn upgrade_to_consumer(
        &mut self,
        group_id: &str,
        image: &TopicImage,
        cx: &mut Ctx,
    ) -> Result<(), Refusal> {
        let malformed = || {
            Refusal::new(
                errors::GROUP_ID_NOT_FOUND,
                format!(
                    "Cannot upgrade classic group {group_id} to consumer group because the \
                     embedded consumer protocol is malformed."
                ),
            )
        };
        let protocol = self.protocol_name.clone().unwrap_or_default();
        let generation = self.generation;
        let mut members = Vec::with_capacity(self.members.len());
        for m in self.members_in_order() {
            let assigned = if m.assignment.is_empty() {
                // Joined and never synced.
                Default::default()
            } else {
                let a = parse_assignment(&m.assignment).ok_or_else(malformed)?;
                if a.user_data.as_ref().is_some_and(|d| !d.is_empty()) {
                    return Err(Refusal::new(
                        errors::GROUP_ID_NOT_FOUND,
                        format!(
                            "Cannot upgrade classic group {group_id} to consumer group because \
                             an unsupported custom assignor is in use. Please refer to the \
                             documentation or switch to a default assignor before \
                             re-attempting the upgrade."
                        ),
                    ));
                }
                owned_ids(&a.partitions, image)
            };
            let subscription =
                parse_subscription(&metadata_for(&m.protocols, &protocol)).ok_or_else(malformed)?;
            members.push(ConsumerMember {
                id: m.id.clone(),
                instance_id: m.group_instance_id.clone(),
                rack_id: subscription.rack_id,
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                subscription: Subscription {
                    names: subscription.topics,
                    regex: None,
                    resolved: None,
                },
                server_assignor: None,
                progress: Progress {
                    epoch: generation,
                    previous_epoch: generation,
                    state: MemberState::Stable,
                    assigned,
                    pending_revocation: Default::default(),
                },
                left_static: false,
                session_deadline: cx.now + timeout(m.session_timeout_ms),
                revocation_deadline: None,
                incarnation: cx.incarnation(),
                classic: Some(ClassicMember {
                    session_timeout_ms: m.session_timeout_ms,
                    protocols: m.protocols.clone(),
                }),
                join_deadline: None,
                sync_deadline: None,
                classic_timer: false,
            });
        }
        let mut cg = ConsumerGroup::new(cx.now_ms);
        cg.group_epoch = generation;
        cg.assignment_epoch = generation;
        for member in members {
            cx.effects.push(Effect::ConsumerSession {
                member_id: member.id.clone(),
                incarnation: member.incarnation,
                deadline: member.session_deadline,
            });
            cg.target
                .insert(member.id.clone(), member.progress.assigned.clone());
            cg.add_member(member);
        }
        cg.refresh_topics(image);
        for m in self.members.values_mut() {
            let id = m.id.clone();
            m.answer_join(JoinResult::error(&id, errors::REBALANCE_IN_PROGRESS));
            m.answer_sync(SyncResult::error(errors::REBALANCE_IN_PROGRESS));
        }
        self.members.clear();
        self.static_members.clear();
        self.pending_members.clear();
        self.pending_sync.clear();
        self.leader = None;
        self.protocol_type = None;
        self.protocol_name = None;
        self.subscribed_topics = None;
        self.generation = 0;
        self.transition(GroupState::Empty, cx);
        self.consumer = Some(cg);
        self.classic_record_dropped = true;
        Ok(())
    }

    /// Kafka's `ClassicGroup.fromConsumerGroup`: the remaining (classic) members form a
    /// Stable classic group at the group epoch, each with its target assignment in its own
    /// subscription's version, which then rebalances.
    fn downgrade_to_classic(&mut self, leaving: &[String], cx: &mut Ctx) {
        let Some(cg) = self.consumer.take() else {
            return;
        };
        self.consumer_tombstones
            .extend(cg.written().tombstones(&self.id));
        self.classic_record_dropped = false;
        self.members.clear();
        self.static_members.clear();
        self.pending_members.clear();
        self.pending_sync.clear();
        self.leader = None;
        self.generation = cg.group_epoch;
        self.protocol_type = Some(CONSUMER_PROTOCOL_TYPE.to_string());
        for m in cg.members.values().filter(|m| !leaving.contains(&m.id)) {
            let Some(classic) = m.classic.clone() else {
                continue;
            };
            let join_seq = self.next_seq();
            self.add_member(Member {
                id: m.id.clone(),
                group_instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: classic.session_timeout_ms,
                protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
                protocols: classic.protocols,
                assignment: bytes::Bytes::new(),
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
                heartbeat_deadline: cx.now + timeout(classic.session_timeout_ms),
                incarnation: cx.incarnation(),
                join_seq,
            });
        }
        self.protocol_name = self.select_protocol();
        self.subscribed_topics = self.compute_subscribed_topics();
        let protocol = self.protocol_name.clone().unwrap_or_default();
        for m in self.members.values_mut() {
            let target = cg.target.get(&m.id).cloned().unwrap_or_default();
            let version = version_of(&m.metadata(&protocol)).unwrap_or(0);
            m.assignment = encode_assignment(&cg.by_name(&target), version);
        }
        self.transition(GroupState::Stable, cx);
        cx.effects.push(Effect::StoreGroup);
        self.watch_all(cx);
        // Members learn of the rebalance at their next heartbeat and rejoin.
        self.prepare_rebalance(cx);
    }

    /// A consumer-group member's session timer fired: the next deadline to watch, or
    /// `None` once the member is gone (fenced here if its session ran out).
    pub fn consumer_session_check(
        &mut self,
        member_id: &str,
        incarnation: u64,
        cx: &mut Ctx,
    ) -> Option<Instant> {
        let check = self
            .consumer
            .as_ref()?
            .session_check(member_id, incarnation, cx.now);
        self.on_deadline(member_id, check, cx)
    }

    /// A consumer-protocol member's revocation timer fired.
    pub fn consumer_revocation_check(&mut self, member_id: &str, incarnation: u64, cx: &mut Ctx) {
        let overdue = self
            .consumer
            .as_ref()
            .is_some_and(|cg| cg.revocation_overdue(member_id, incarnation, cx.now));
        if overdue {
            self.fence_consumer_members(&[member_id.to_string()], cx);
        }
    }

    /// A classic member's join/sync timer fired.
    pub fn consumer_classic_deadline_check(
        &mut self,
        member_id: &str,
        incarnation: u64,
        cx: &mut Ctx,
    ) -> Option<Instant> {
        let check = self
            .consumer
            .as_mut()?
            .classic_deadline_check(member_id, incarnation, cx.now);
        self.on_deadline(member_id, check, cx)
    }

    fn on_deadline(&mut self, member_id: &str, check: Deadline, cx: &mut Ctx) -> Option<Instant> {
        match check {
            Deadline::Later(next) => Some(next),
            Deadline::Passed => {
                self.fence_consumer_members(&[member_id.to_string()], cx);
                None
            }
            Deadline::Gone => None,
        }
    }
}
