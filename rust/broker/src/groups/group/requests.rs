//! The requests a member makes once it has joined: SyncGroup, Heartbeat, LeaveGroup; the
//! checks of OffsetCommit; and which committed offsets have expired.

use std::collections::HashMap;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::{timeout, Group, GroupState, SyncRequest};
use crate::groups::member::{Reply, SyncResult};
use crate::groups::offsets::RetentionBase;
use crate::groups::operation::{Ctx, Effect, CONSUMER_PROTOCOL_TYPE};
use kafkalite_core::error_codes as errors;

impl Group {
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

    /// May this TxnOffsetCommit write? Kafka's check of a transactional commit: a dead
    /// group is COORDINATOR_NOT_AVAILABLE; a committer outside the group (generation -1, no
    /// member) may commit whatever the group's state (older producers send no member);
    /// a member must be current. No rebalance refuses it.
    pub fn validate_txn_commit(
        &self,
        generation: i32,
        member_id: &str,
        instance: Option<&str>,
    ) -> Result<(), i16> {
        if self.state == GroupState::Dead {
            return Err(errors::COORDINATOR_NOT_AVAILABLE);
        }
        if generation < 0 && self.state == GroupState::Empty {
            return Ok(());
        }
        if generation >= 0 || !member_id.is_empty() || instance.is_some() {
            self.validate_member(member_id, instance)?;
            if generation != self.generation {
                return Err(errors::ILLEGAL_GENERATION);
            }
        }
        Ok(())
    }

    /// Offsets whose retention has passed (Kafka's rules: an empty group's offsets expire
    /// `offsets.retention.minutes` after it became empty; a stable consumer group's offsets
    /// of topics it no longer subscribes to, after their commit; a standalone consumer's,
    /// after their commit).
    #[must_use]
    pub fn expired_offsets(&self, now_ms: i64, retention_ms: i64) -> Vec<(String, i32)> {
        if let Some(cg) = &self.consumer {
            let base = if cg.members.is_empty() {
                RetentionBase::EmptySince(cg.empty_since_ms)
            } else {
                RetentionBase::Never
            };
            return self.offsets.expired(now_ms, retention_ms, &base);
        }
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
}
