//! The group as others see it: DescribeGroups, its metadata record in
//! `__consumer_offsets`, and a group restored from that record after a restart.

use bytes::Bytes;

use super::{timeout, Group, GroupDescription, GroupState, MemberDescription};
use crate::groups::consumer::written::Written;
use crate::groups::consumer::{ConsumerGroup, TopicImage};
use crate::groups::member::{JoinResult, Member, SyncResult};
use crate::groups::offsets::Offsets;
use crate::groups::operation::{Ctx, Effect};
use crate::groups::records::{GroupRecord, MemberRecord};
use kafkalite_core::error_codes as errors;

impl Group {
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
                // Kafka shows the last assignment in every state (a rebalance from
                // Stable keeps it until the new one; from CompletingRebalance it is reset).
                assignment: m.assignment.clone(),
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

    /// The consumer group `written` describes, as replayed (`written.exists()`): this id
    /// is that group, whatever classic record it also has (which is then deleted).
    pub fn restore_consumer(&mut self, written: Written, image: &TopicImage, cx: &Ctx) {
        if !written.exists() {
            return;
        }
        self.classic_record_dropped = self.generation > 0 || !self.members.is_empty();
        self.members.clear();
        self.static_members.clear();
        self.leader = None;
        self.protocol_type = None;
        self.protocol_name = None;
        self.subscribed_topics = None;
        self.generation = 0;
        self.state = GroupState::Empty;
        self.consumer = Some(ConsumerGroup::restore(written, image, cx));
    }

    /// Timers of every member after a restore: `WatchMember` for classic members, the
    /// sessions (and revocations under way) of a consumer group's.
    pub fn watch_all(&self, cx: &mut Ctx) {
        if let Some(cg) = &self.consumer {
            cg.watch_members(cx);
        }
        for m in self.members.values() {
            cx.effects.push(Effect::WatchMember {
                member_id: m.id.clone(),
                incarnation: m.incarnation,
                deadline: m.heartbeat_deadline,
            });
        }
    }

    /// This broker stops coordinating the group (its partition's leadership moved): members
    /// waiting in JoinGroup or SyncGroup are told NOT_COORDINATOR, so they look for the new
    /// coordinator, and the group is Dead here (its timers do nothing any more).
    pub fn unload(&mut self) {
        for m in self.members.values_mut() {
            let id = m.id.clone();
            m.answer_join(JoinResult::error(&id, errors::NOT_COORDINATOR));
            m.answer_sync(SyncResult::error(errors::NOT_COORDINATOR));
        }
        self.state = GroupState::Dead;
    }
}
