//! Which protocol a group runs, and what its members are told when a join phase ends.

use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;

use super::{Group, GroupState};
use crate::groups::member::{JoinResult, JoinedMember};
use crate::groups::operation::CONSUMER_PROTOCOL_TYPE;
use kafkalite_core::error_codes as errors;

impl Group {
    pub(super) fn supports_protocols(
        &self,
        protocol_type: &str,
        protocols: &[(String, Bytes)],
    ) -> bool {
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
    pub(super) fn select_protocol(&self) -> Option<String> {
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

    pub(super) fn member_metadata(&self) -> Vec<JoinedMember> {
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

    pub(super) fn current_join_result(&self, member_id: &str, with_members: bool) -> JoinResult {
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

    pub(super) fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
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
}

/// Topics of a ConsumerProtocolSubscription (version i16, then topics: [string]); later
/// versions only append fields, so any version's topics read the same way.
pub(super) fn subscription_topics(metadata: &[u8]) -> Option<Vec<String>> {
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
