//! Classic members of a consumer group (KIP-848's mixed groups): consumers still using
//! JoinGroup, SyncGroup and Heartbeat in a group the coordinator assigns, as Kafka 4.1's
//! `GroupMetadataManager.classicGroup*ToConsumerGroup` serve them.
//!
//! A classic member is a consumer-group member like any other: its subscription comes
//! from its JoinGroup metadata, it moves towards its target assignment at each JoinGroup
//! (reconciled against the partitions the metadata says it owns), and its generation is
//! its member epoch. JoinGroup and SyncGroup are answered at once (there is no leader and
//! no join phase); SyncGroup hands out the member's assigned partitions in the consumer
//! protocol's format. Heartbeat says REBALANCE_IN_PROGRESS when the member has to rejoin:
//! the group epoch moved past it, it has partitions to give up, or partitions it waited
//! for are free now. A member told to rejoin must do so within its rebalance timeout, and
//! one that joined must sync within it, or it is fenced.

use bytes::Bytes;
use tokio::time::Instant;

use super::group::ConsumerGroup;
use super::heartbeat::{timeout, uuid_string, Deadline};
use super::member::{ClassicMember, ConsumerMember, Subscription};
use super::reconcile::{MemberState, Progress};
use super::topics::{Assignment, TopicImage};
use crate::groups::consumer_protocol::{self, encode_assignment, parse_subscription};
use crate::groups::group::{JoinRequest, SyncRequest};
use crate::groups::member::{JoinResult, SyncResult};
use crate::groups::operation::{Ctx, Effect, CONSUMER_PROTOCOL_TYPE};
use kafkalite_core::error_codes as errors;

impl ConsumerGroup {
    /// JoinGroup of a classic member.
    pub fn classic_join(
        &mut self,
        req: JoinRequest,
        image: &TopicImage,
        cx: &mut Ctx,
    ) -> JoinResult {
        let refused = |code| JoinResult::error(&req.member_id, code);
        let unknown = req.member_id.is_empty();
        let member_id = if unknown {
            uuid_string()
        } else {
            req.member_id.clone()
        };
        if !self.members.contains_key(&member_id)
            && self.members.len() >= cx.config.consumer_max_size
        {
            return refused(errors::GROUP_MAX_SIZE_REACHED);
        }
        let names: Vec<&str> = req.protocols.iter().map(|(n, _)| n.as_str()).collect();
        if !self.supports_classic_protocols(&req.protocol_type, &names) {
            return refused(errors::INCONSISTENT_GROUP_PROTOCOL);
        }
        if unknown && req.require_known_member_id && req.group_instance_id.is_none() {
            // As in a classic group: the member comes back with the id it is given.
            return JoinResult::error(&member_id, errors::MEMBER_ID_REQUIRED);
        }
        // Every protocol carries the same subscription; Kafka reads the first.
        let Some(subscription) = req
            .protocols
            .first()
            .and_then(|(_, metadata)| parse_subscription(metadata))
        else {
            return refused(errors::UNKNOWN_SERVER_ERROR);
        };
        let known = match &req.group_instance_id {
            None => self.members.contains_key(&member_id),
            Some(instance) => match self.static_members.get(instance).cloned() {
                // A static member coming back under a new id takes its place (and what it
                // held); its subscription is compared with its predecessor's.
                Some(old) if unknown => {
                    let mut successor = self.members[&old].clone();
                    successor.id.clone_from(&member_id);
                    successor.incarnation = cx.incarnation();
                    successor.join_deadline = None;
                    successor.sync_deadline = None;
                    successor.classic_timer = false;
                    self.replace_static(&old, successor);
                    self.watch_session(&member_id, cx);
                    true
                }
                None if unknown => false,
                None => return refused(errors::UNKNOWN_MEMBER_ID),
                Some(old) if old != member_id => return refused(errors::FENCED_INSTANCE_ID),
                Some(_) => true,
            },
        };
        if !known {
            let member = self.classic_member(&member_id, &req, cx);
            self.add_member(member);
            self.watch_session(&member_id, cx);
        }
        let member = self
            .members
            .get_mut(&member_id)
            .expect("member added above");
        let before = member.subscription.names.clone();
        member.subscription.names.clone_from(&subscription.topics);
        if subscription.rack_id.is_some() {
            member.rack_id.clone_from(&subscription.rack_id);
        }
        if req.rebalance_timeout_ms != -1 {
            member.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        member.instance_id.clone_from(&req.group_instance_id);
        member.client_id.clone_from(&req.client_id);
        member.client_host.clone_from(&req.client_host);
        member.left_static = false;
        member.classic = Some(ClassicMember {
            session_timeout_ms: req.session_timeout_ms,
            protocols: req.protocols.clone(),
        });
        let changed = !known || member.subscription.names != before;
        self.touch(&member_id);
        if self.refresh_topics(image) || changed {
            self.group_epoch += 1;
        }
        self.maybe_assign(image, &cx.config.consumer_assignors);
        let owned = owned_ids(&subscription.owned, image);
        self.reconcile_member(&member_id, Some(&owned), cx);

        let member = self.members.get_mut(&member_id).expect("known member");
        member.join_deadline = None;
        member.session_deadline = cx.now + timeout(req.session_timeout_ms);
        let sync_deadline = cx.now + timeout(req.rebalance_timeout_ms);
        member.sync_deadline = Some(sync_deadline);
        let answer = JoinResult {
            error: errors::NONE,
            member_id: member_id.clone(),
            generation_id: member.progress.epoch,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: member
                .classic
                .as_ref()
                .map(|c| c.protocol_name().to_string()),
            leader: String::new(),
            skip_assignment: false,
            members: Vec::new(),
        };
        self.watch_classic_deadlines(&member_id, cx);
        answer
    }

    /// SyncGroup of a classic member: its assigned partitions.
    pub fn classic_sync(&mut self, req: &SyncRequest, cx: &mut Ctx) -> SyncResult {
        let member = match self.classic_member_of(&req.member_id, req.group_instance_id.as_deref())
        {
            Ok(m) => m,
            Err(code) => return SyncResult::error(code),
        };
        if req.generation_id != member.epoch() {
            return SyncResult::error(errors::ILLEGAL_GENERATION);
        }
        let classic = member.classic.as_ref().expect("a classic member");
        if req
            .protocol_type
            .as_ref()
            .is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
            || req
                .protocol_name
                .as_ref()
                .is_some_and(|n| n != classic.protocol_name())
        {
            return SyncResult::error(errors::INCONSISTENT_GROUP_PROTOCOL);
        }
        let member_id = member.id.clone();
        if self.group_epoch > member.epoch()
            && member.progress.state != MemberState::UnrevokedPartitions
        {
            self.ask_to_rejoin(&member_id, cx);
            return SyncResult::error(errors::REBALANCE_IN_PROGRESS);
        }
        let version = classic
            .protocols
            .first()
            .and_then(|(_, m)| consumer_protocol::version_of(m))
            .unwrap_or(0);
        let assignment = encode_assignment(&self.by_name(&member.progress.assigned), version);
        let session = timeout(classic.session_timeout_ms);
        let member = self.members.get_mut(&member_id).expect("known member");
        member.sync_deadline = None;
        member.session_deadline = cx.now + session;
        SyncResult {
            error: errors::NONE,
            protocol_type: req.protocol_type.clone(),
            protocol_name: req.protocol_name.clone(),
            assignment,
        }
    }

    /// Heartbeat of a classic member: NONE, or REBALANCE_IN_PROGRESS when it must rejoin.
    pub fn classic_heartbeat(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        cx: &mut Ctx,
    ) -> i16 {
        let member = match self.classic_member_of(member_id, instance) {
            Ok(m) => m,
            Err(code) => return code,
        };
        if generation != member.epoch() {
            return errors::ILLEGAL_GENERATION;
        }
        let rejoin = member.epoch() < self.group_epoch
            || member.progress.state == MemberState::UnrevokedPartitions
            || (member.progress.state == MemberState::UnreleasedPartitions
                && !self.waiting_on_unreleased_partition(member));
        let id = member.id.clone();
        let session = timeout(member.classic.as_ref().map_or(0, |c| c.session_timeout_ms));
        self.members
            .get_mut(&id)
            .expect("known member")
            .session_deadline = cx.now + session;
        if rejoin {
            self.ask_to_rejoin(&id, cx);
            return errors::REBALANCE_IN_PROGRESS;
        }
        errors::NONE
    }

    /// LeaveGroup: an error per (member id, group.instance.id), and the members to fence.
    /// An empty member id removes the static member with that instance id.
    #[must_use]
    pub fn classic_leave(&self, leaving: &[(String, Option<String>)]) -> (Vec<i16>, Vec<String>) {
        let mut codes = Vec::with_capacity(leaving.len());
        let mut fenced = Vec::new();
        for (member_id, instance) in leaving {
            let found = match instance {
                None => self
                    .members
                    .get(member_id)
                    .map(|m| m.id.clone())
                    .ok_or(errors::UNKNOWN_MEMBER_ID),
                Some(instance) => match self.static_members.get(instance) {
                    None => Err(errors::UNKNOWN_MEMBER_ID),
                    Some(id) if !member_id.is_empty() && id != member_id => {
                        Err(errors::FENCED_INSTANCE_ID)
                    }
                    Some(id) => Ok(id.clone()),
                },
            };
            match found {
                Ok(id) => {
                    codes.push(errors::NONE);
                    if !fenced.contains(&id) {
                        fenced.push(id);
                    }
                }
                Err(code) => codes.push(code),
            }
        }
        (codes, fenced)
    }

    /// A classic member's join or sync timer fired.
    #[must_use]
    pub fn classic_deadline_check(
        &mut self,
        member_id: &str,
        incarnation: u64,
        now: Instant,
    ) -> Deadline {
        let Some(member) = self.members.get_mut(member_id) else {
            return Deadline::Gone;
        };
        if member.incarnation != incarnation {
            return Deadline::Gone;
        }
        let next = [member.join_deadline, member.sync_deadline]
            .into_iter()
            .flatten()
            .min();
        match next {
            Some(deadline) if deadline <= now => Deadline::Passed,
            Some(deadline) => Deadline::Later(deadline),
            None => {
                member.classic_timer = false;
                Deadline::Gone
            }
        }
    }

    /// Tell a member to rejoin: it must within its rebalance timeout (unless already told).
    fn ask_to_rejoin(&mut self, member_id: &str, cx: &mut Ctx) {
        let member = self.members.get_mut(member_id).expect("known member");
        if member.join_deadline.is_none() {
            member.join_deadline = Some(cx.now + timeout(member.rebalance_timeout_ms));
            self.watch_classic_deadlines(member_id, cx);
        }
    }

    /// Start the member's join/sync timer unless it runs.
    fn watch_classic_deadlines(&mut self, member_id: &str, cx: &mut Ctx) {
        let member = self.members.get_mut(member_id).expect("known member");
        if member.classic_timer {
            return;
        }
        let Some(deadline) = [member.join_deadline, member.sync_deadline]
            .into_iter()
            .flatten()
            .min()
        else {
            return;
        };
        member.classic_timer = true;
        cx.effects.push(Effect::ConsumerClassicDeadline {
            member_id: member_id.to_string(),
            incarnation: member.incarnation,
            deadline,
        });
    }

    /// The classic member a SyncGroup or Heartbeat names, or the error it gets.
    fn classic_member_of(
        &self,
        member_id: &str,
        instance: Option<&str>,
    ) -> Result<&ConsumerMember, i16> {
        let member = match instance {
            None => self
                .members
                .get(member_id)
                .ok_or(errors::UNKNOWN_MEMBER_ID)?,
            Some(instance) => {
                let id = self
                    .static_members
                    .get(instance)
                    .ok_or(errors::UNKNOWN_MEMBER_ID)?;
                if id != member_id {
                    return Err(errors::FENCED_INSTANCE_ID);
                }
                self.members.get(id).ok_or(errors::UNKNOWN_MEMBER_ID)?
            }
        };
        if !member.uses_classic_protocol() {
            return Err(errors::UNKNOWN_MEMBER_ID);
        }
        Ok(member)
    }

    fn watch_session(&self, member_id: &str, cx: &mut Ctx) {
        let m = &self.members[member_id];
        cx.effects.push(Effect::ConsumerSession {
            member_id: member_id.to_string(),
            incarnation: m.incarnation,
            deadline: m.session_deadline,
        });
    }

    fn classic_member(&self, member_id: &str, req: &JoinRequest, cx: &Ctx) -> ConsumerMember {
        ConsumerMember {
            id: member_id.to_string(),
            instance_id: req.group_instance_id.clone(),
            rack_id: None,
            client_id: req.client_id.clone(),
            client_host: req.client_host.clone(),
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms: req.session_timeout_ms,
            subscription: Subscription {
                names: Vec::new(),
                regex: None,
                resolved: None,
            },
            server_assignor: None,
            progress: Progress::joining(),
            left_static: false,
            session_deadline: cx.now + timeout(req.session_timeout_ms),
            revocation_deadline: None,
            incarnation: cx.incarnation(),
            classic: Some(ClassicMember {
                session_timeout_ms: req.session_timeout_ms,
                protocols: req.protocols.clone(),
            }),
            join_deadline: None,
            sync_deadline: None,
            classic_timer: false,
        }
    }

    /// An assignment by topic name (topics the group no longer sees are left out), topics
    /// in name order.
    #[must_use]
    pub fn by_name(&self, assignment: &Assignment) -> Vec<(String, Vec<i32>)> {
        let mut out: Vec<(String, Vec<i32>)> = assignment
            .iter()
            .filter_map(|(id, parts)| {
                let name = self.subscribed.name_of(*id)?;
                Some((name.to_string(), parts.iter().copied().collect()))
            })
            .collect();
        out.sort();
        out
    }
}

/// Owned partitions by topic name, as topic ids (topics that do not exist are left out).
#[must_use]
pub fn owned_ids(owned: &[(String, Vec<i32>)], image: &TopicImage) -> Assignment {
    let mut out = Assignment::new();
    for (topic, parts) in owned {
        if let Some(meta) = image.get(topic) {
            out.entry(meta.id)
                .or_default()
                .extend(parts.iter().copied());
        }
    }
    super::topics::normalized(out)
}

/// The metadata of `protocol` among a member's protocols (its first if none matches).
#[must_use]
pub fn metadata_for(protocols: &[(String, Bytes)], protocol: &str) -> Bytes {
    protocols
        .iter()
        .find(|(n, _)| n == protocol)
        .or_else(|| protocols.first())
        .map(|(_, m)| m.clone())
        .unwrap_or_default()
}
