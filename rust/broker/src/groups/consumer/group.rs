//! One consumer-protocol group's membership: the group epoch (bumped by every change of
//! members, subscriptions or subscribed topics), the target assignment and its epoch, and
//! who holds each partition. Persisted in `__consumer_offsets` as Kafka's records (see
//! `persist`), so members keep their epochs and assignments across a restart.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

use super::assignor::{Assignor, MemberSpec};
use super::member::ConsumerMember;
use super::reconcile::{MemberState, Progress};
use super::topics::{Assignment, TopicImage};
use super::written::{ConsumerWrite, Touched, Written};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsumerGroupState {
    Empty,
    Assigning,
    Reconciling,
    Stable,
}

impl ConsumerGroupState {
    /// The name Kafka uses (`ConsumerGroup.ConsumerGroupState.toString`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

#[derive(Debug, Default)]
pub struct ConsumerGroup {
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, ConsumerMember>,
    /// Target assignment of each member, at `assignment_epoch`.
    pub target: BTreeMap<String, Assignment>,
    /// group.instance.id -> member id.
    pub static_members: HashMap<String, String>,
    /// The assignor of the last target assignment.
    pub assignor: Option<Assignor>,
    /// (topic id, partition) -> the member holding it (assigned or not yet revoked).
    owners: HashMap<(Uuid, i32), String>,
    /// The subscribed topics as the last target assignment saw them.
    pub(crate) subscribed: TopicImage,
    /// Wall-clock ms since which the group has had no members.
    pub empty_since_ms: i64,
    /// The group as its records in `__consumer_offsets` describe it (`persist`).
    pub(super) written: Written,
    /// Members changed since the last write.
    pub(super) touched: Touched,
    /// Records whose write failed, written first next time.
    pub(super) unwritten: Vec<ConsumerWrite>,
}

impl ConsumerGroup {
    #[must_use]
    pub fn new(now_ms: i64) -> ConsumerGroup {
        ConsumerGroup {
            empty_since_ms: now_ms,
            ..ConsumerGroup::default()
        }
    }

    #[must_use]
    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| m.epoch() != self.assignment_epoch || m.progress.state != MemberState::Stable)
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// Whether another member than `member` holds the partition.
    #[must_use]
    pub fn held_by_other(&self, member: &str, topic: Uuid, partition: i32) -> bool {
        self.owners
            .get(&(topic, partition))
            .is_some_and(|owner| owner != member)
    }

    /// Record a member's new progress, moving partition ownership with it.
    pub fn set_progress(&mut self, member_id: &str, progress: Progress) {
        self.touch(member_id);
        let Some(member) = self.members.get_mut(member_id) else {
            return;
        };
        for key in member.progress.holds() {
            if self.owners.get(&key).is_some_and(|o| o == member_id) {
                self.owners.remove(&key);
            }
        }
        for key in progress.holds() {
            self.owners.insert(key, member_id.to_string());
        }
        member.progress = progress;
    }

    pub fn add_member(&mut self, member: ConsumerMember) {
        self.touch(&member.id);
        if let Some(instance) = &member.instance_id {
            self.static_members
                .insert(instance.clone(), member.id.clone());
        }
        let id = member.id.clone();
        let progress = member.progress.clone();
        self.members.insert(id.clone(), member);
        for key in progress.holds() {
            self.owners.insert(key, id.clone());
        }
    }

    /// Remove members (left, expired, fenced): their partitions are free at once, and the
    /// group epoch moves on (once for all of them) so the next heartbeat computes a new
    /// target assignment.
    pub fn fence_members(&mut self, member_ids: &[String], now_ms: i64) {
        let mut removed = false;
        for member_id in member_ids {
            removed |= self.forget_member(member_id).is_some();
        }
        if !removed {
            return;
        }
        // One epoch for the departures, topics only they subscribed to included.
        let known = self.subscribed.clone();
        self.refresh_topics(&known);
        self.group_epoch += 1;
        if self.members.is_empty() {
            self.empty_since_ms = now_ms;
        }
    }

    /// Remove one member (see `fence_members`).
    pub fn remove_member(&mut self, member_id: &str, now_ms: i64) {
        self.fence_members(&[member_id.to_string()], now_ms);
    }

    fn forget_member(&mut self, member_id: &str) -> Option<ConsumerMember> {
        self.touch(member_id);
        let member = self.members.remove(member_id)?;
        self.owners.retain(|_, owner| owner != member_id);
        if let Some(instance) = &member.instance_id {
            if self
                .static_members
                .get(instance)
                .is_some_and(|m| m == member_id)
            {
                self.static_members.remove(instance);
            }
        }
        self.target.remove(member_id);
        Some(member)
    }

    /// Members using the classic protocol.
    #[must_use]
    pub fn classic_members(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.uses_classic_protocol())
            .count()
    }

    /// Whether every member but `leaving` uses the classic protocol.
    #[must_use]
    pub fn only_classic_members_remain(&self, leaving: &[String]) -> bool {
        self.members
            .values()
            .all(|m| m.uses_classic_protocol() || leaving.contains(&m.id))
    }

    /// Whether a JoinGroup of `protocol_type` offering `protocols` fits the group: the
    /// embedded consumer protocol, with a protocol every classic member supports.
    #[must_use]
    pub fn supports_classic_protocols(&self, protocol_type: &str, protocols: &[&str]) -> bool {
        if protocol_type != crate::groups::operation::CONSUMER_PROTOCOL_TYPE {
            return false;
        }
        if self.members.is_empty() {
            return !protocols.is_empty();
        }
        protocols.iter().any(|name| {
            self.members
                .values()
                .filter_map(|m| m.classic.as_ref())
                .all(|c| c.protocols.iter().any(|(n, _)| n == name))
        })
    }

    /// Whether `member` waits for a partition of its target that another member still
    /// holds (a classic member is told to rejoin once none is left).
    #[must_use]
    pub fn waiting_on_unreleased_partition(&self, member: &ConsumerMember) -> bool {
        if member.progress.state != MemberState::UnreleasedPartitions {
            return false;
        }
        let Some(target) = self.target.get(&member.id) else {
            return false;
        };
        target.iter().any(|(topic, parts)| {
            parts.iter().any(|p| {
                !member
                    .progress
                    .assigned
                    .get(topic)
                    .is_some_and(|a| a.contains(p))
                    && self.owners.contains_key(&(*topic, *p))
            })
        })
    }

    /// Replace a static member that left (epoch -2) by its successor under the same
    /// instance id: the successor takes over its partitions, epoch and target.
    /// Whether the successor subscribes to something else.
    pub fn replace_static(&mut self, old_id: &str, mut member: ConsumerMember) -> bool {
        self.touch(old_id);
        let mut changed = true;
        if let Some(old) = self.members.remove(old_id) {
            member.progress = old.progress;
            changed = old.subscription != member.subscription;
        }
        for owner in self.owners.values_mut() {
            if owner == old_id {
                owner.clone_from(&member.id);
            }
        }
        if let Some(target) = self.target.remove(old_id) {
            self.target.insert(member.id.clone(), target);
        }
        self.add_member(member);
        changed
    }

    /// Every topic some member's subscription names or matches.
    #[must_use]
    pub fn subscribed_topics(&self, image: &TopicImage) -> BTreeSet<String> {
        let mut topics = BTreeSet::new();
        for m in self.members.values() {
            topics.extend(m.subscription.topics(image));
        }
        topics
    }

    /// Whether a member subscribes to `topic` (by name, or by a regex that matched it when
    /// the topics were last looked at).
    #[must_use]
    pub fn is_subscribed_to(&self, topic: &str) -> bool {
        self.subscribed.get(topic).is_some()
            || self
                .members
                .values()
                .any(|m| m.subscription.names.iter().any(|n| n == topic))
    }

    /// Whether the subscribed topics changed (created, deleted, grown, or another set of
    /// them subscribed), remembering them as they are now.
    pub fn refresh_topics(&mut self, image: &TopicImage) -> bool {
        let now = image.restricted_to(&self.subscribed_topics(image));
        let changed = now != self.subscribed;
        self.subscribed = now;
        changed
    }

    /// The assignor members asked for most (ties: the configured order), else the first
    /// configured one this broker has.
    #[must_use]
    pub fn preferred_assignor(&self, configured: &[String]) -> Assignor {
        let known: Vec<Assignor> = configured
            .iter()
            .filter_map(|n| Assignor::from_name(n))
            .collect();
        let mut votes: BTreeMap<usize, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(a) = m.server_assignor.as_deref().and_then(Assignor::from_name) {
                if let Some(rank) = known.iter().position(|k| *k == a) {
                    *votes.entry(rank).or_default() += 1;
                }
            }
        }
        votes
            .iter()
            .max_by_key(|(rank, n)| (**n, std::cmp::Reverse(**rank)))
            .map(|(rank, _)| known[*rank])
            .or_else(|| known.first().copied())
            .unwrap_or(Assignor::Uniform)
    }

    /// Compute a new target assignment if the group epoch moved past the last one.
    pub fn maybe_assign(&mut self, image: &TopicImage, configured: &[String]) {
        if self.group_epoch <= self.assignment_epoch {
            return;
        }
        let assignor = self.preferred_assignor(configured);
        let specs: BTreeMap<String, MemberSpec> = self
            .members
            .iter()
            .map(|(id, m)| {
                let mut current = self.target.get(id).cloned().unwrap_or_default();
                if current.is_empty() {
                    current = m.progress.assigned.clone();
                }
                (
                    id.clone(),
                    MemberSpec {
                        topics: m.subscription.topics(image),
                        current,
                    },
                )
            })
            .collect();
        self.target = assignor.assign(&specs, image);
        self.touch_all();
        self.assignor = Some(assignor);
        self.assignment_epoch = self.group_epoch;
    }

    /// Topic names by id, for describing assignments.
    #[must_use]
    pub fn topic_names(image: &TopicImage, a: &Assignment) -> Vec<(Uuid, String, Vec<i32>)> {
        a.iter()
            .map(|(id, ps)| {
                (
                    *id,
                    image.name_of(*id).unwrap_or_default().to_string(),
                    ps.iter().copied().collect(),
                )
            })
            .collect()
    }
}
