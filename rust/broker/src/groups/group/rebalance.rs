//! The join phase: preparing a rebalance, completing it (a new generation, a leader, the
//! answers held back), and what the coordinator's timers do when they fire.

use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::{timeout, Group, GroupState};
use crate::groups::member::{JoinResult, Member, SyncResult};
use crate::groups::operation::{Ctx, Effect, InitialDelay};
use kafkalite_core::error_codes as errors;

impl Group {
    pub(super) fn maybe_prepare_rebalance(&mut self, cx: &mut Ctx) {
        if matches!(
            self.state,
            GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty
        ) {
            self.prepare_rebalance(cx);
        }
    }

    pub(super) fn prepare_rebalance(&mut self, cx: &mut Ctx) {
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

    pub(super) fn all_members_joined(&self) -> bool {
        self.pending_members.is_empty() && self.members.values().all(Member::is_awaiting_join)
    }

    /// The leader must be a member that rejoined; pick one if the current leader did not.
    pub(super) fn elect_joined_leader(&mut self) -> bool {
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

    pub(super) fn complete_join(&mut self, cx: &mut Ctx) {
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
