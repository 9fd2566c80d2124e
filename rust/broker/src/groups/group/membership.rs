//! JoinGroup: new members (with MEMBER_ID_REQUIRED from v4), known members rejoining,
//! static members replacing their former selves; and removing members.

use bytes::Bytes;
use tokio::sync::oneshot;

use super::{timeout, Group, GroupState, JoinRequest, NEW_MEMBER_JOIN_TIMEOUT};
use crate::groups::member::{JoinResult, Member, Reply, SyncResult};
use crate::groups::operation::{Ctx, Effect};
use kafkalite_core::error_codes as errors;

impl Group {
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

    pub(super) fn join_new_member(&mut self, req: JoinRequest, cx: &mut Ctx) -> Reply<JoinResult> {
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

    pub(super) fn join_current_member(
        &mut self,
        req: JoinRequest,
        cx: &mut Ctx,
    ) -> Reply<JoinResult> {
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

    pub(super) fn accepts_joining(&self, member_id: &str, max_size: usize) -> bool {
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

    pub(super) fn add_member(&mut self, member: Member) {
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
    pub(super) fn remove_member(&mut self, member_id: &str) -> Option<Member> {
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
    pub(super) fn remove_member_and_update(&mut self, member_id: &str, cx: &mut Ctx) {
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

    pub(super) fn add_member_and_rebalance(
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

    pub(super) fn update_member_and_rebalance(
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
    pub(super) fn replace_static_member(
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
}
