//! A share group's membership as Kafka's group coordinator keeps it for share groups
//! (`ShareGroup`, the share parts of `GroupMetadataManager`): members join, heartbeat and
//! leave with ShareGroupHeartbeat; a change of members, subscriptions or the subscribed
//! topics' partitions bumps the group epoch and the simple assignor computes the target
//! assignment at that epoch; a member takes it (and the epoch) at its next heartbeat. There
//! is no revocation step: a partition may be shared, so it is simply handed over.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::assignor::{self, Assignment};
use crate::errors::{codes, ApiError};

#[derive(Clone, Debug)]
pub struct Member {
    pub member_id: String,
    pub member_epoch: i32,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed: BTreeSet<String>,
    pub assignment: Assignment,
    /// When the session expires unless a heartbeat comes (ms since the epoch).
    pub expires_at_ms: i64,
}

#[derive(Debug, Default)]
pub struct ShareGroup {
    pub group_id: String,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, Member>,
    target: BTreeMap<String, Assignment>,
    /// The subscribed topics' (id, partitions) the target was computed from.
    topics_seen: BTreeMap<String, (Uuid, i32)>,
}

/// One heartbeat as the handler decoded it.
pub struct Heartbeat {
    pub member_id: String,
    pub member_epoch: i32,
    pub rack_id: Option<String>,
    pub subscribed: Option<Vec<String>>,
    pub client_id: String,
    pub client_host: String,
}

/// The answer: the member's epoch and, when it changed or on a join, its assignment.
pub struct Beat {
    pub member_id: String,
    pub member_epoch: i32,
    pub assignment: Option<Assignment>,
}

/// Resolves subscribed topic names to the existing ones: name -> (id, partitions).
pub type TopicResolver<'a> = dyn Fn(&BTreeSet<String>) -> BTreeMap<String, (Uuid, i32)> + 'a;

/// The member epoch that means "leave the group".
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;

impl ShareGroup {
    #[must_use]
    pub fn new(group_id: &str) -> ShareGroup {
        ShareGroup {
            group_id: group_id.to_string(),
            ..ShareGroup::default()
        }
    }

    /// Kafka's state names: Empty, Stable (every member at the assignment epoch) or
    /// Reconciling.
    #[must_use]
    pub fn state(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self
            .members
            .values()
            .all(|m| m.member_epoch == self.assignment_epoch)
        {
            "Stable"
        } else {
            "Reconciling"
        }
    }

    /// Every topic some member subscribes to.
    #[must_use]
    pub fn subscribed_topics(&self) -> BTreeSet<String> {
        self.members
            .values()
            .flat_map(|m| m.subscribed.iter().cloned())
            .collect()
    }

    /// Handle one heartbeat; `topics` resolves the subscribed names that exist now
    /// (name -> (id, partitions)). Returns the answer and the id of a member that left.
    pub fn heartbeat(
        &mut self,
        hb: Heartbeat,
        topics: &TopicResolver<'_>,
        session_timeout_ms: i64,
        now_ms: i64,
    ) -> Result<Beat, ApiError> {
        if hb.member_id.is_empty() {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                "MemberId can't be empty.",
            ));
        }
        if hb.member_epoch == LEAVE_GROUP_MEMBER_EPOCH {
            if self.members.remove(&hb.member_id).is_some() {
                self.bump_and_assign(topics);
            }
            return Ok(Beat {
                member_id: hb.member_id,
                member_epoch: LEAVE_GROUP_MEMBER_EPOCH,
                assignment: None,
            });
        }
        let joining = hb.member_epoch == 0;
        match self.members.get(&hb.member_id) {
            None if !joining => {
                return Err(ApiError::new(
                    codes::UNKNOWN_MEMBER_ID,
                    format!("Member {} is not a member of group {}.", hb.member_id, self.group_id),
                ))
            }
            Some(m) if !joining && m.member_epoch != hb.member_epoch => {
                return Err(ApiError::new(
                    codes::FENCED_MEMBER_EPOCH,
                    format!(
                        "The share group member has a smaller member epoch ({}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                        hb.member_epoch, m.member_epoch
                    ),
                ))
            }
            _ => {}
        }
        if joining
            && hb.subscribed.as_ref().is_none_or(Vec::is_empty)
            && !self.members.contains_key(&hb.member_id)
        {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                "SubscribedTopicNames must be set in first request.",
            ));
        }
        let mut changed = false;
        let member = self.members.entry(hb.member_id.clone()).or_insert_with(|| {
            changed = true;
            Member {
                member_id: hb.member_id.clone(),
                member_epoch: 0,
                rack_id: None,
                client_id: String::new(),
                client_host: String::new(),
                subscribed: BTreeSet::new(),
                assignment: Assignment::new(),
                expires_at_ms: 0,
            }
        });
        member.expires_at_ms = now_ms.saturating_add(session_timeout_ms);
        member.client_id = hb.client_id;
        member.client_host = hb.client_host;
        if hb.rack_id.is_some() {
            member.rack_id = hb.rack_id;
        }
        if let Some(names) = hb.subscribed {
            let names: BTreeSet<String> = names.into_iter().collect();
            if names != member.subscribed {
                member.subscribed = names;
                changed = true;
            }
        }
        // A subscribed topic created, deleted or grown since the last assignment.
        let resolved = topics(&self.subscribed_topics());
        if changed || resolved != self.topics_seen {
            self.bump_and_assign(topics);
        }
        let member = self.members.get_mut(&hb.member_id).expect("member");
        let target = self.target.get(&hb.member_id).cloned().unwrap_or_default();
        let mut assignment = None;
        if member.member_epoch != self.assignment_epoch || joining {
            member.member_epoch = self.assignment_epoch;
            member.assignment = target.clone();
            assignment = Some(target);
        }
        Ok(Beat {
            member_id: hb.member_id,
            member_epoch: member.member_epoch,
            assignment,
        })
    }

    /// Remove members whose session expired by `now_ms`; their ids.
    pub fn expire(&mut self, now_ms: i64, topics: &TopicResolver<'_>) -> Vec<String> {
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| m.expires_at_ms <= now_ms)
            .map(|m| m.member_id.clone())
            .collect();
        if !gone.is_empty() {
            for id in &gone {
                self.members.remove(id);
            }
            self.bump_and_assign(topics);
        }
        gone
    }

    fn bump_and_assign(&mut self, topics: &TopicResolver<'_>) {
        self.group_epoch += 1;
        self.topics_seen = topics(&self.subscribed_topics());
        let subscriptions: BTreeMap<String, BTreeSet<String>> = self
            .members
            .iter()
            .map(|(id, m)| (id.clone(), m.subscribed.clone()))
            .collect();
        self.target = assignor::assign(&subscriptions, &self.topics_seen);
        self.assignment_epoch = self.group_epoch;
    }

    /// Whether `member` is assigned `topic_id`-`partition` now.
    #[must_use]
    pub fn is_assigned(&self, member: &str, topic_id: Uuid, partition: i32) -> bool {
        self.members
            .get(member)
            .and_then(|m| m.assignment.get(&topic_id))
            .is_some_and(|ps| ps.contains(&partition))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hb(member: &str, epoch: i32, topics: Option<&[&str]>) -> Heartbeat {
        Heartbeat {
            member_id: member.into(),
            member_epoch: epoch,
            rack_id: None,
            subscribed: topics.map(|t| t.iter().map(|s| (*s).to_string()).collect()),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
        }
    }

    #[test]
    fn members_join_share_a_partition_and_leave() {
        let id = Uuid::from_u128(9);
        let topics = move |names: &BTreeSet<String>| -> BTreeMap<String, (Uuid, i32)> {
            names
                .iter()
                .filter(|n| *n == "t")
                .map(|n| (n.clone(), (id, 1)))
                .collect()
        };
        let mut g = ShareGroup::new("g");
        let a = g
            .heartbeat(hb("a", 0, Some(&["t"])), &topics, 45_000, 0)
            .unwrap();
        assert_eq!(a.member_epoch, 1);
        assert_eq!(a.assignment.unwrap()[&id], BTreeSet::from([0]));
        let b = g
            .heartbeat(hb("b", 0, Some(&["t"])), &topics, 45_000, 0)
            .unwrap();
        assert_eq!(b.member_epoch, 2);
        assert_eq!(g.state(), "Reconciling");
        let a = g.heartbeat(hb("a", 1, None), &topics, 45_000, 0).unwrap();
        assert_eq!(a.member_epoch, 2);
        assert!(a.assignment.is_some());
        assert_eq!(g.state(), "Stable");
        let stale = g.heartbeat(hb("a", 1, None), &topics, 45_000, 0);
        assert_eq!(stale.err().unwrap().code, codes::FENCED_MEMBER_EPOCH);
        let unknown = g.heartbeat(hb("z", 3, None), &topics, 45_000, 0);
        assert_eq!(unknown.err().unwrap().code, codes::UNKNOWN_MEMBER_ID);
        assert_eq!(
            g.heartbeat(hb("b", -1, None), &topics, 45_000, 0)
                .unwrap()
                .member_epoch,
            -1
        );
        assert_eq!(g.members.len(), 1);
        assert_eq!(g.expire(45_000, &topics), vec!["a".to_string()]);
        assert_eq!(g.state(), "Empty");
    }
}
