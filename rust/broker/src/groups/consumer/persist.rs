//! A consumer group in `__consumer_offsets`: what of it Kafka 4.1 persists (the group
//! epoch with the metadata hash of its subscribed topics, each member's metadata and
//! current assignment, the target assignment and its epoch), the records that bring the
//! log up to date after a change (`take_writes`: only what changed since the last write,
//! tombstones for members gone), and the group rebuilt from those records (`restore`), so
//! members keep their epochs and assignments across a restart or a coordinator move.
//!
//! Operations mark the members they touch; `take_writes` compares only those (all of them
//! after a new target assignment) with what was last written.

use std::collections::BTreeSet;

use super::group::ConsumerGroup;
use super::heartbeat::timeout;
use super::member::{compile_regex, ConsumerMember, Subscription, STATIC_LEAVE_EPOCH};
use super::reconcile::{MemberState, Progress};
use super::topics::TopicImage;
use super::written::{key, ConsumerWrite, Touched, Written};
use crate::groups::consumer_records::{
    ConsumerValue, CurrentValue, GroupEpochValue, MemberValue, CURRENT_MEMBER, GROUP_EPOCH,
    MEMBER_METADATA, TARGET_EPOCH, TARGET_MEMBER,
};
use crate::groups::operation::{Ctx, Effect};

impl ConsumerGroup {
    /// Note that `member_id` (joined, updated, moved on, left) may need new records.
    pub fn touch(&mut self, member_id: &str) {
        if !self.touched.all {
            self.touched.members.insert(member_id.to_string());
        }
    }

    /// Note that every member may need new records (a new target assignment).
    pub fn touch_all(&mut self) {
        self.touched.all = true;
        self.touched.members.clear();
    }

    /// The records that bring the log from what was last written to the group as it is
    /// now, oldest kinds first as Kafka orders them (member metadata, group epoch, target
    /// assignment, its epoch, current assignments; tombstones of members gone). What is
    /// returned counts as written; a failed write hands it back with `unwritten`.
    pub fn take_writes(&mut self, group: &str) -> Vec<ConsumerWrite> {
        let mut out = std::mem::take(&mut self.unwritten);
        let touched = std::mem::take(&mut self.touched);
        if self.group_epoch == 0 && !self.written.exists() {
            // Never had a member (a join that was refused): nothing to keep.
            return out;
        }
        let ids: BTreeSet<String> = if touched.all {
            self.members
                .keys()
                .chain(self.written.members.keys())
                .chain(self.written.targets.keys())
                .cloned()
                .collect()
        } else {
            touched.members
        };
        let mut targets = Vec::new();
        let mut current = Vec::new();
        let mut gone = Vec::new();
        for id in &ids {
            let Some(m) = self.members.get(id) else {
                if self.written.members.remove(id).is_some()
                    | self.written.current.remove(id).is_some()
                    | self.written.targets.remove(id).is_some()
                {
                    for kind in [CURRENT_MEMBER, TARGET_MEMBER, MEMBER_METADATA] {
                        gone.push((key(group, kind, Some(id)), None));
                    }
                }
                continue;
            };
            let metadata = member_value(m);
            if self.written.members.get(id) != Some(&metadata) {
                out.push((
                    key(group, MEMBER_METADATA, Some(id)),
                    Some(ConsumerValue::Member(metadata.clone())),
                ));
                self.written.members.insert(id.clone(), metadata);
            }
            let target = self.target.get(id).cloned().unwrap_or_default();
            if self.written.targets.get(id) != Some(&target) {
                targets.push((
                    key(group, TARGET_MEMBER, Some(id)),
                    Some(ConsumerValue::Target(target.clone())),
                ));
                self.written.targets.insert(id.clone(), target);
            }
            let progress = current_value(m);
            if self.written.current.get(id) != Some(&progress) {
                current.push((
                    key(group, CURRENT_MEMBER, Some(id)),
                    Some(ConsumerValue::Current(progress.clone())),
                ));
                self.written.current.insert(id.clone(), progress);
            }
        }
        let epoch_changed =
            self.written.group_epoch.as_ref().map(|e| e.epoch) != Some(self.group_epoch);
        if epoch_changed {
            let value = GroupEpochValue {
                epoch: self.group_epoch,
                metadata_hash: self.subscribed.metadata_hash(),
            };
            out.push((
                key(group, GROUP_EPOCH, None),
                Some(ConsumerValue::GroupEpoch(value.clone())),
            ));
            self.written.group_epoch = Some(value);
        }
        out.extend(targets);
        if self.written.assignment_epoch != Some(self.assignment_epoch) {
            out.push((
                key(group, TARGET_EPOCH, None),
                Some(ConsumerValue::TargetEpoch(self.assignment_epoch)),
            ));
            self.written.assignment_epoch = Some(self.assignment_epoch);
        }
        out.extend(current);
        out.extend(gone);
        out
    }

    /// Records that could not be written: they go first with the next ones.
    pub fn unwritten(&mut self, writes: Vec<ConsumerWrite>) {
        let later = std::mem::replace(&mut self.unwritten, writes);
        self.unwritten.extend(later);
    }

    /// What was last written (its tombstones delete the group's records).
    #[must_use]
    pub fn written(&self) -> &Written {
        &self.written
    }

    /// The group its records describe, as Kafka's coordinator loads it: every member at
    /// its epoch with its assignments, its session starting now. The subscribed topics are
    /// taken as they are now if their metadata hash is the one stored; otherwise the next
    /// heartbeat finds them changed and moves the group epoch on, as Kafka does.
    #[must_use]
    pub fn restore(written: Written, image: &TopicImage, cx: &Ctx) -> ConsumerGroup {
        let mut cg = ConsumerGroup::new(cx.now_ms);
        let stored = written.group_epoch.clone().unwrap_or_default();
        cg.group_epoch = stored.epoch;
        cg.assignment_epoch = written.assignment_epoch.unwrap_or(stored.epoch);
        for (id, metadata) in &written.members {
            cg.add_member(member_from(id, metadata, written.current.get(id), cx));
        }
        for (id, target) in &written.targets {
            if cg.members.contains_key(id) {
                cg.target.insert(id.clone(), target.clone());
            }
        }
        let now = image.restricted_to(&cg.subscribed_topics(image));
        if now.metadata_hash() == stored.metadata_hash {
            cg.subscribed = now;
        }
        if !cg.members.is_empty() {
            cg.assignor = Some(cg.preferred_assignor(&cx.config.consumer_assignors));
        }
        if cg.members.is_empty() {
            cg.empty_since_ms = cx.now_ms;
        }
        cg.written = written;
        cg.touched = Touched::default();
        cg
    }

    /// The timers of restored members: their sessions, and the revocations under way.
    pub fn watch_members(&self, cx: &mut Ctx) {
        for m in self.members.values() {
            cx.effects.push(Effect::ConsumerSession {
                member_id: m.id.clone(),
                incarnation: m.incarnation,
                deadline: m.session_deadline,
            });
            if let Some(deadline) = m.revocation_deadline {
                cx.effects.push(Effect::ConsumerRevocation {
                    member_id: m.id.clone(),
                    incarnation: m.incarnation,
                    delay: deadline.saturating_duration_since(cx.now),
                });
            }
        }
    }

    /// Everything of the group as records would describe it (tests compare it with what
    /// `take_writes` has written, so no change goes unwritten).
    #[cfg(test)]
    #[must_use]
    pub fn as_written(&self) -> Written {
        Written {
            // The hash is written with each new epoch; the epoch is what must match.
            group_epoch: Some(GroupEpochValue {
                epoch: self.group_epoch,
                metadata_hash: self
                    .written
                    .group_epoch
                    .as_ref()
                    .map_or(0, |e| e.metadata_hash),
            }),
            assignment_epoch: Some(self.assignment_epoch),
            members: self
                .members
                .iter()
                .map(|(id, m)| (id.clone(), member_value(m)))
                .collect(),
            current: self
                .members
                .iter()
                .map(|(id, m)| (id.clone(), current_value(m)))
                .collect(),
            targets: self
                .members
                .keys()
                .map(|id| (id.clone(), self.target.get(id).cloned().unwrap_or_default()))
                .collect(),
        }
    }
}

fn member_value(m: &ConsumerMember) -> MemberValue {
    MemberValue {
        instance_id: m.instance_id.clone(),
        rack_id: m.rack_id.clone(),
        client_id: m.client_id.clone(),
        client_host: m.client_host.clone(),
        subscribed_topic_names: m.subscription.names.clone(),
        // Kafka keeps "no regex" as an empty one.
        subscribed_topic_regex: Some(
            m.subscription
                .regex
                .as_ref()
                .map(|r| r.0.clone())
                .unwrap_or_default(),
        ),
        rebalance_timeout_ms: m.rebalance_timeout_ms,
        server_assignor: m.server_assignor.clone(),
        classic: m.classic.clone(),
    }
}

fn current_value(m: &ConsumerMember) -> CurrentValue {
    CurrentValue {
        member_epoch: m.epoch(),
        previous_member_epoch: m.progress.previous_epoch,
        state: match m.progress.state {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
        },
        assigned: m.progress.assigned.clone(),
        pending_revocation: m.progress.pending_revocation.clone(),
    }
}

fn member_from(
    id: &str,
    metadata: &MemberValue,
    current: Option<&CurrentValue>,
    cx: &Ctx,
) -> ConsumerMember {
    let regex = metadata
        .subscribed_topic_regex
        .as_ref()
        .filter(|r| !r.is_empty())
        .and_then(|r| compile_regex(r).ok().map(|re| (r.clone(), re)));
    let session_timeout_ms = metadata
        .classic
        .as_ref()
        .map_or(cx.config.consumer_session_timeout_ms, |c| {
            c.session_timeout_ms
        });
    let left_static = current.is_some_and(|c| c.member_epoch == STATIC_LEAVE_EPOCH);
    let progress = match current {
        None => Progress::joining(),
        Some(c) => Progress {
            // A static member that left keeps its partitions, not its epoch (as in Kafka).
            epoch: if left_static {
                c.previous_member_epoch
            } else {
                c.member_epoch
            },
            previous_epoch: c.previous_member_epoch,
            state: match c.state {
                1 => MemberState::UnrevokedPartitions,
                2 => MemberState::UnreleasedPartitions,
                _ => MemberState::Stable,
            },
            assigned: c.assigned.clone(),
            pending_revocation: c.pending_revocation.clone(),
        },
    };
    let revoking = progress.state == MemberState::UnrevokedPartitions;
    ConsumerMember {
        id: id.to_string(),
        instance_id: metadata.instance_id.clone(),
        rack_id: metadata.rack_id.clone(),
        client_id: metadata.client_id.clone(),
        client_host: metadata.client_host.clone(),
        rebalance_timeout_ms: metadata.rebalance_timeout_ms,
        session_timeout_ms,
        subscription: Subscription {
            names: metadata.subscribed_topic_names.clone(),
            regex,
            // Resolved again against the principal's topics at its next heartbeat.
            resolved: None,
        },
        server_assignor: metadata.server_assignor.clone(),
        progress,
        left_static,
        session_deadline: cx.now + timeout(session_timeout_ms),
        revocation_deadline: (revoking && metadata.classic.is_none())
            .then(|| cx.now + timeout(metadata.rebalance_timeout_ms)),
        incarnation: cx.incarnation(),
        classic: metadata.classic.clone(),
        join_deadline: None,
        sync_deadline: None,
        classic_timer: false,
    }
}
