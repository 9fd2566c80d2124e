//! ConsumerGroupHeartbeat on one group, as Kafka 4.1's `GroupMetadataManager` answers it:
//! the request's checks, joining (epoch 0), heartbeats with their epoch checks, leaving
//! (epoch -1, or -2 for a static member that will come back), then a new target assignment
//! if the group epoch moved, and the member's next reconciliation step.

use std::time::Duration;

use regex::Regex;
use tokio::time::Instant;

use super::group::ConsumerGroup;
use super::member::{
    compile_regex, ConsumerMember, Subscription, TopicFilter, LEAVE_EPOCH, STATIC_LEAVE_EPOCH,
};
use super::reconcile::{reconcile, MemberState, Progress};
use super::topics::{is_subset, Assignment, TopicImage};
use crate::config::group::ConsumerTimeouts;
use crate::groups::operation::{Ctx, Effect};
use kafkalite_core::error_codes as errors;

/// From v1 the client makes up its member id (KIP-1082), so it must send one.
const CLIENT_MEMBER_ID_VERSION: i16 = 1;

#[derive(Clone, Debug, Default)]
pub struct HeartbeatRequest {
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub subscribed_topic_names: Option<Vec<String>>,
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    pub owned: Option<Assignment>,
    pub client_id: String,
    pub client_host: String,
    /// The topics a regex subscription may match (`None`: every topic).
    pub regex_filter: Option<TopicFilter>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatAnswer {
    pub member_id: String,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    pub assignment: Option<Assignment>,
}

/// An error code with Kafka's message for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub code: i16,
    pub message: String,
}

impl Refusal {
    pub fn new(code: i16, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
        }
    }
}

fn invalid(message: &str) -> Refusal {
    Refusal::new(errors::INVALID_REQUEST, message)
}

fn blank(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.trim().is_empty())
}

/// The request's own checks, before any group is looked at; the compiled regex if any.
pub fn validate(
    req: &HeartbeatRequest,
    group_id: &str,
    version: i16,
    assignors: &[String],
) -> Result<Option<Regex>, Refusal> {
    if group_id.trim().is_empty() {
        return Err(invalid("GroupId can't be empty."));
    }
    if blank(req.instance_id.as_deref()) {
        return Err(invalid("InstanceId can't be empty."));
    }
    if blank(req.rack_id.as_deref()) {
        return Err(invalid("RackId can't be empty."));
    }
    if (version >= CLIENT_MEMBER_ID_VERSION || req.member_epoch != 0)
        && req.member_id.trim().is_empty()
    {
        return Err(invalid("MemberId can't be empty."));
    }
    if req.member_epoch == 0 {
        if req.rebalance_timeout_ms == -1 {
            return Err(invalid(
                "RebalanceTimeoutMs must be provided in first request.",
            ));
        }
        if !req.owned.as_ref().is_some_and(Assignment::is_empty) {
            return Err(invalid("TopicPartitions must be empty when (re-)joining."));
        }
        let names = req
            .subscribed_topic_names
            .as_ref()
            .is_some_and(|n| !n.is_empty());
        let regex = req
            .subscribed_topic_regex
            .as_ref()
            .is_some_and(|r| !r.is_empty());
        if !names && !regex {
            return Err(invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when \
                 (re-)joining.",
            ));
        }
    } else if req.member_epoch == STATIC_LEAVE_EPOCH {
        if req.instance_id.is_none() {
            return Err(invalid("InstanceId can't be null."));
        }
    } else if req.member_epoch < STATIC_LEAVE_EPOCH {
        return Err(invalid("MemberEpoch is invalid."));
    }
    let regex = match req.subscribed_topic_regex.as_deref() {
        Some(pattern) if !pattern.is_empty() => Some(compile_regex(pattern).map_err(|e| {
            Refusal::new(
                errors::INVALID_REGULAR_EXPRESSION,
                format!("SubscribedTopicRegex `{pattern}` is not a valid regular expression: {e}."),
            )
        })?),
        _ => None,
    };
    if let Some(name) = &req.server_assignor {
        if !assignors.iter().any(|a| a == name) {
            return Err(Refusal::new(
                errors::UNSUPPORTED_ASSIGNOR,
                format!(
                    "ServerAssignor {name} is not supported. Supported assignors: {}.",
                    assignors.join(", ")
                ),
            ));
        }
    }
    Ok(regex)
}

impl ConsumerGroup {
    /// One heartbeat of an already validated request.
    pub fn heartbeat(
        &mut self,
        group_id: &str,
        req: HeartbeatRequest,
        regex: Option<Regex>,
        image: &TopicImage,
        timeouts: ConsumerTimeouts,
        cx: &mut Ctx,
    ) -> Result<HeartbeatAnswer, Refusal> {
        if req.member_epoch == LEAVE_EPOCH || req.member_epoch == STATIC_LEAVE_EPOCH {
            return self.leave(group_id, &req, cx);
        }
        let member_id = self.admit(group_id, &req, cx)?;
        let is_new = !self.members.contains_key(&member_id);
        let mut changed = true;
        if is_new {
            let member = self.new_member(&member_id, &req, regex.clone(), timeouts, cx);
            match req
                .instance_id
                .as_ref()
                .and_then(|i| self.static_members.get(i))
                .cloned()
            {
                Some(old) => changed = self.replace_static(&old, member),
                None => self.add_member(member),
            }
            let m = &self.members[&member_id];
            cx.effects.push(Effect::ConsumerSession {
                member_id: member_id.clone(),
                incarnation: m.incarnation,
                deadline: m.session_deadline,
            });
        } else {
            let session = timeout(timeouts.session_timeout_ms);
            let member = self.members.get_mut(&member_id).expect("known member");
            let before = member.subscription.clone();
            update(member, &req, regex);
            member.session_deadline = cx.now + session;
            changed = member.subscription != before;
            self.touch(&member_id);
        }
        if let Some(m) = self.members.get_mut(&member_id) {
            m.subscription.resolve(image, req.regex_filter.as_ref());
        }
        // A joiner, a new subscription or changed topics: one new group epoch for all.
        if self.refresh_topics(image) || changed {
            self.group_epoch += 1;
        }
        self.maybe_assign(image, &cx.config.consumer_assignors);

        let owned = if req.member_epoch == 0 {
            Some(Assignment::new())
        } else {
            req.owned.clone()
        };
        let assignment_changed = self.reconcile_member(&member_id, owned.as_ref(), cx);
        let member = &self.members[&member_id];
        let full = req.member_epoch == 0
            || (req.rebalance_timeout_ms != -1
                && (req.subscribed_topic_names.is_some() || req.subscribed_topic_regex.is_some())
                && req.owned.is_some());
        Ok(HeartbeatAnswer {
            member_id,
            member_epoch: member.progress.epoch,
            heartbeat_interval_ms: timeouts.heartbeat_interval_ms,
            assignment: (full || assignment_changed).then(|| member.progress.assigned.clone()),
        })
    }

    /// Move a member one step towards its target assignment, given what it reported owning
    /// (`None`: not reported); whether what it is assigned changed. A consumer-protocol
    /// member asked to revoke partitions gets a rebalance timeout to do so (classic members
    /// have join and sync timeouts instead).
    pub(super) fn reconcile_member(
        &mut self,
        member_id: &str,
        owned: Option<&Assignment>,
        cx: &mut Ctx,
    ) -> bool {
        let target = self.target.get(member_id).cloned().unwrap_or_default();
        let Some(member) = self.members.get(member_id) else {
            return false;
        };
        let before = member.progress.clone();
        let next = reconcile(&before, self.assignment_epoch, &target, owned, |t, p| {
            self.held_by_other(member_id, t, p)
        });
        let assignment_changed = next.assigned != before.assigned;
        let revoking = next.state == MemberState::UnrevokedPartitions
            && (before.state != MemberState::UnrevokedPartitions
                || before.pending_revocation != next.pending_revocation);
        self.set_progress(member_id, next);
        let member = self.members.get_mut(member_id).expect("known member");
        if member.uses_classic_protocol() {
            return assignment_changed;
        }
        if revoking {
            let delay = timeout(member.rebalance_timeout_ms);
            member.revocation_deadline = Some(cx.now + delay);
            cx.effects.push(Effect::ConsumerRevocation {
                member_id: member_id.to_string(),
                incarnation: member.incarnation,
                delay,
            });
        } else if member.progress.state != MemberState::UnrevokedPartitions {
            member.revocation_deadline = None;
        }
        assignment_changed
    }

    /// Which member this heartbeat is from (an id not yet in the group for a joiner), or
    /// why it is refused.
    fn admit(&self, group_id: &str, req: &HeartbeatRequest, cx: &Ctx) -> Result<String, Refusal> {
        let full = || {
            Refusal::new(
                errors::GROUP_MAX_SIZE_REACHED,
                format!(
                    "The consumer group has reached its maximum capacity of {} members.",
                    cx.config.consumer_max_size
                ),
            )
        };
        let fresh_id = || {
            if req.member_id.is_empty() {
                // v0: the coordinator names the member.
                uuid_string()
            } else {
                req.member_id.clone()
            }
        };
        let Some(instance) = &req.instance_id else {
            return match self.members.get(&req.member_id) {
                Some(m) => {
                    if req.member_epoch != 0 {
                        check_epoch(m, req.member_epoch, req.owned.as_ref())?;
                    }
                    Ok(m.id.clone())
                }
                None if req.member_epoch == 0 => {
                    if self.members.len() >= cx.config.consumer_max_size {
                        return Err(full());
                    }
                    Ok(fresh_id())
                }
                None => Err(Refusal::new(
                    errors::UNKNOWN_MEMBER_ID,
                    format!(
                        "Member {} is not a member of group {group_id}.",
                        req.member_id
                    ),
                )),
            };
        };
        let holder = self
            .static_members
            .get(instance)
            .and_then(|id| self.members.get(id));
        if req.member_epoch == 0 {
            return match holder {
                None if self.members.len() >= cx.config.consumer_max_size => Err(full()),
                None => Ok(fresh_id()),
                Some(old) if old.left_static => Ok(fresh_id()),
                Some(old) => Err(Refusal::new(
                    errors::UNRELEASED_INSTANCE_ID,
                    format!(
                        "Static member {} with instance id {instance} cannot join the group \
                         because the instance id is owned by {} member.",
                        req.member_id, old.id
                    ),
                )),
            };
        }
        match holder {
            None => Err(Refusal::new(
                errors::UNKNOWN_MEMBER_ID,
                format!("Instance id {instance} is unknown."),
            )),
            Some(m) if m.id != req.member_id => {
                Err(fenced_instance(&req.member_id, instance, &m.id))
            }
            Some(m) => {
                check_epoch(m, req.member_epoch, req.owned.as_ref())?;
                Ok(m.id.clone())
            }
        }
    }

    fn new_member(
        &self,
        member_id: &str,
        req: &HeartbeatRequest,
        regex: Option<Regex>,
        timeouts: ConsumerTimeouts,
        cx: &Ctx,
    ) -> ConsumerMember {
        let session_timeout_ms = timeouts.session_timeout_ms;
        let mut member = ConsumerMember {
            id: member_id.to_string(),
            instance_id: req.instance_id.clone(),
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms,
            subscription: Subscription {
                names: Vec::new(),
                regex: None,
                resolved: None,
            },
            server_assignor: None,
            progress: Progress::joining(),
            left_static: false,
            session_deadline: cx.now + timeout(session_timeout_ms),
            revocation_deadline: None,
            incarnation: cx.incarnation(),
            classic: None,
            join_deadline: None,
            sync_deadline: None,
            classic_timer: false,
        };
        update(&mut member, req, regex);
        member
    }

    /// The member a leave (epoch -1 or -2) is from, or why it is refused.
    pub fn leaving_member(
        &self,
        group_id: &str,
        req: &HeartbeatRequest,
    ) -> Result<String, Refusal> {
        match &req.instance_id {
            None if self.members.contains_key(&req.member_id) => Ok(req.member_id.clone()),
            None => Err(Refusal::new(
                errors::UNKNOWN_MEMBER_ID,
                format!(
                    "Member {} is not a member of group {group_id}.",
                    req.member_id
                ),
            )),
            Some(instance) => match self.static_members.get(instance) {
                None => Err(Refusal::new(
                    errors::UNKNOWN_MEMBER_ID,
                    format!("Instance id {instance} is unknown."),
                )),
                Some(id) if *id != req.member_id => {
                    Err(fenced_instance(&req.member_id, instance, id))
                }
                Some(id) => Ok(id.clone()),
            },
        }
    }

    fn leave(
        &mut self,
        group_id: &str,
        req: &HeartbeatRequest,
        cx: &mut Ctx,
    ) -> Result<HeartbeatAnswer, Refusal> {
        let member_id = self.leaving_member(group_id, req)?;
        if req.member_epoch == STATIC_LEAVE_EPOCH {
            // Its partitions stay with it until it returns or its session ends.
            if let Some(m) = self.members.get_mut(&member_id) {
                m.left_static = true;
            }
            self.touch(&member_id);
        } else {
            self.remove_member(&member_id, cx.now_ms);
        }
        Ok(left(req))
    }

    /// A member's session timer fired: watch on until the next deadline, or the member's
    /// session ran out (the caller fences it), or the member is gone.
    #[must_use]
    pub fn session_check(&self, member_id: &str, incarnation: u64, now: Instant) -> Deadline {
        let Some(member) = self.members.get(member_id) else {
            return Deadline::Gone;
        };
        if member.incarnation != incarnation {
            return Deadline::Gone;
        }
        if member.session_deadline > now {
            return Deadline::Later(member.session_deadline);
        }
        Deadline::Passed
    }

    /// A member's revocation timer fired: whether it still holds partitions it was asked to
    /// give up a rebalance timeout ago (the caller fences it, so others can have them).
    #[must_use]
    pub fn revocation_overdue(&self, member_id: &str, incarnation: u64, now: Instant) -> bool {
        self.members.get(member_id).is_some_and(|member| {
            member.incarnation == incarnation
                && member.progress.state == MemberState::UnrevokedPartitions
                && member.revocation_deadline.is_some_and(|d| d <= now)
        })
    }
}

/// What a member's timer finds when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// Not yet: look again then.
    Later(Instant),
    /// The deadline passed: the member is fenced.
    Passed,
    /// The member (this life of it) is no longer there.
    Gone,
}

/// The answer to a leave.
fn left(req: &HeartbeatRequest) -> HeartbeatAnswer {
    HeartbeatAnswer {
        member_id: req.member_id.clone(),
        member_epoch: req.member_epoch,
        heartbeat_interval_ms: 0,
        assignment: None,
    }
}

/// What a heartbeat may change about a member (null fields leave it as it was).
fn update(member: &mut ConsumerMember, req: &HeartbeatRequest, regex: Option<Regex>) {
    if req.rebalance_timeout_ms != -1 {
        member.rebalance_timeout_ms = req.rebalance_timeout_ms;
    }
    if let Some(rack) = &req.rack_id {
        member.rack_id = Some(rack.clone());
    }
    if let Some(names) = &req.subscribed_topic_names {
        member.subscription.names.clone_from(names);
    }
    if let Some(pattern) = &req.subscribed_topic_regex {
        member.subscription.regex = regex.map(|r| (pattern.clone(), r));
    }
    if req.server_assignor.is_some() {
        member.server_assignor.clone_from(&req.server_assignor);
    }
    member.client_id.clone_from(&req.client_id);
    member.client_host.clone_from(&req.client_host);
    member.left_static = false;
    // A classic member that comes back with the consumer protocol is one from now on.
    member.classic = None;
    member.join_deadline = None;
    member.sync_deadline = None;
}

fn check_epoch(
    m: &ConsumerMember,
    received: i32,
    owned: Option<&Assignment>,
) -> Result<(), Refusal> {
    let known = m.epoch();
    let fenced = |which: &str| {
        Refusal::new(
            errors::FENCED_MEMBER_EPOCH,
            format!(
                "The consumer group member has a {which} member epoch ({received}) than the one \
                 known by the group coordinator ({known}). The member must abandon all its \
                 partitions and rejoin."
            ),
        )
    };
    if received > known {
        return Err(fenced("greater"));
    }
    if received < known
        && (received != m.progress.previous_epoch
            || !owned.is_some_and(|o| is_subset(o, &m.progress.assigned)))
    {
        return Err(fenced("smaller"));
    }
    Ok(())
}

/// Kafka's words: the member that now holds the instance id is named.
pub(super) fn fenced_instance(member_id: &str, instance: &str, holder: &str) -> Refusal {
    Refusal::new(
        errors::FENCED_INSTANCE_ID,
        format!(
            "Static member {member_id} with instance id {instance} was fenced by member {holder}."
        ),
    )
}

/// A member id as Kafka makes them (a random UUID in URL-safe base64, 22 characters).
pub(crate) fn uuid_string() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(uuid::Uuid::new_v4().as_bytes())
}

pub(super) fn timeout(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}
