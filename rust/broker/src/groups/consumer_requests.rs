//! The coordinator's consumer-protocol requests (ConsumerGroupHeartbeat,
//! ConsumerGroupDescribe). A group id is a classic or a consumer group: an empty group
//! changes kind when the other protocol's first member arrives; a classic group with
//! members is upgraded online when a consumer-protocol member joins, and a consumer group
//! keeps its classic members (see `group::mixed`).

use std::sync::Arc;

use uuid::Uuid;

use super::consumer::heartbeat::{self, HeartbeatAnswer, HeartbeatRequest, Refusal};
use super::consumer::member::LEAVE_EPOCH;
use super::consumer::{Assignment, ConsumerGroup, ConsumerGroupState, TopicImage};
use super::coordinator::GroupCoordinator;
use super::group::Group;
use kafkalite_core::error_codes as errors;

/// One member as ConsumerGroupDescribe shows it.
#[derive(Clone, Debug)]
pub struct ConsumerMemberDescription {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub member_epoch: i32,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub assignment: Vec<(Uuid, String, Vec<i32>)>,
    pub target_assignment: Vec<(Uuid, String, Vec<i32>)>,
    /// The member joined with the classic protocol (JoinGroup).
    pub classic: bool,
}

#[derive(Clone, Debug)]
pub struct ConsumerGroupDescription {
    pub state: ConsumerGroupState,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub assignor_name: String,
    pub members: Vec<ConsumerMemberDescription>,
}

impl GroupCoordinator {
    /// Every topic, as assignments see them. Internal topics are in it too: Kafka matches
    /// a group's names and regexes against its whole metadata image, so a subscription
    /// that names `__consumer_offsets`, or a regex that matches it, is assigned it (a
    /// client that wants no internal topics leaves them out of what it subscribes to).
    pub(super) fn topic_image(&self) -> TopicImage {
        let mut image = TopicImage::default();
        let Ok(broker) = self.broker_state() else {
            return image;
        };
        for name in broker.topic_names() {
            if let Some(topic) = broker.topic(&name) {
                image.insert(&name, topic.id, topic.partition_count());
            }
        }
        image
    }

    /// Whether the consumer protocol is served (`group.coordinator.rebalance.protocols`);
    /// without it Kafka answers its requests UNSUPPORTED_VERSION.
    #[must_use]
    pub fn consumer_protocol_enabled(&self) -> bool {
        self.config.consumer_protocol
    }

    /// ConsumerGroupHeartbeat (`version` of the request).
    pub fn consumer_heartbeat(
        self: &Arc<Self>,
        group_id: &str,
        req: HeartbeatRequest,
        version: i16,
    ) -> Result<HeartbeatAnswer, Refusal> {
        let regex = heartbeat::validate(&req, group_id, version, &self.config.consumer_assignors)?;
        let image = self.topic_image();
        // Read at every heartbeat, as Kafka does: a changed group config reaches members
        // at their next one.
        let timeouts = self.broker_state().map_or_else(
            |_| self.config.consumer_timeouts(),
            |b| b.consumer_timeouts(group_id),
        );
        let joining = req.member_epoch == 0;
        let member_id = req.member_id.clone();
        let unknown = || {
            // A group this coordinator does not hold as a consumer group (never had it, or
            // it was deleted) has no such member; the client rejoins.
            Refusal::new(
                errors::UNKNOWN_MEMBER_ID,
                format!("Member {member_id} is not a member of group {group_id}."),
            )
        };
        let outcome = self.with_group(group_id, joining, |g, cx| {
            if g.consumer.is_none() {
                if !joining {
                    return Err(unknown());
                }
                g.become_consumer_group(group_id, &image, cx)?;
            }
            let cg = g.consumer.as_mut().expect("set above");
            if req.member_epoch == LEAVE_EPOCH {
                // Leaving may leave only classic members: the group may turn classic.
                let member = cg.leaving_member(group_id, &req)?;
                g.fence_consumer_members(&[member], cx);
                return Ok(HeartbeatAnswer {
                    member_id: req.member_id,
                    member_epoch: LEAVE_EPOCH,
                    heartbeat_interval_ms: 0,
                    assignment: None,
                });
            }
            cg.heartbeat(group_id, req, regex, &image, timeouts, cx)
        });
        match outcome {
            Ok(Some(answer)) => answer,
            Ok(None) => Err(unknown()),
            Err(code) => Err(Refusal::new(code, "")),
        }
    }

    /// ConsumerGroupDescribe of one group.
    pub fn consumer_describe(
        self: &Arc<Self>,
        group_id: &str,
    ) -> Result<ConsumerGroupDescription, Refusal> {
        let image = self.topic_image();
        let described = self.with_group(group_id, false, |g, _| {
            g.consumer.as_ref().map(|cg| describe(cg, &image))
        });
        match described {
            Ok(Some(Some(d))) => Ok(d),
            Ok(Some(None)) => Err(Refusal::new(
                errors::GROUP_ID_NOT_FOUND,
                format!("Group {group_id} is not a consumer group."),
            )),
            Ok(None) => Err(Refusal::new(
                errors::GROUP_ID_NOT_FOUND,
                format!("Group {group_id} not found."),
            )),
            Err(code) => Err(Refusal::new(code, "")),
        }
    }
}

fn describe(cg: &ConsumerGroup, image: &TopicImage) -> ConsumerGroupDescription {
    let names = |a: &Assignment| ConsumerGroup::topic_names(image, a);
    ConsumerGroupDescription {
        state: cg.state(),
        group_epoch: cg.group_epoch,
        assignment_epoch: cg.assignment_epoch,
        assignor_name: cg
            .assignor
            .map(|a| a.name().to_string())
            .unwrap_or_default(),
        members: cg
            .members
            .values()
            .map(|m| ConsumerMemberDescription {
                member_id: m.id.clone(),
                instance_id: m.instance_id.clone(),
                rack_id: m.rack_id.clone(),
                member_epoch: m.epoch(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                subscribed_topic_names: m.subscription.names.clone(),
                // Kafka describes "no regex" as an empty one.
                subscribed_topic_regex: Some(
                    m.subscription
                        .regex
                        .as_ref()
                        .map(|r| r.0.clone())
                        .unwrap_or_default(),
                ),
                assignment: names(&m.progress.assigned),
                target_assignment: names(&cg.target.get(&m.id).cloned().unwrap_or_default()),
                classic: m.uses_classic_protocol(),
            })
            .collect(),
    }
}

impl Group {
    /// The group's type as ListGroups v5 names it, and its state's name.
    #[must_use]
    pub fn type_and_state(&self) -> (&'static str, &'static str) {
        match &self.consumer {
            Some(cg) => ("consumer", cg.state().name()),
            None => ("classic", self.state.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groups::config::GroupConfig;
    use crate::groups::group::JoinRequest;
    use crate::groups::member::Reply;

    fn join(member: &str, epoch: i32) -> HeartbeatRequest {
        HeartbeatRequest {
            member_id: member.to_string(),
            member_epoch: epoch,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: Some(vec!["t".to_string()]),
            owned: Some(Assignment::new()),
            ..HeartbeatRequest::default()
        }
    }

    fn classic_join() -> JoinRequest {
        JoinRequest {
            member_id: String::new(),
            group_instance_id: None,
            require_known_member_id: true,
            supports_skip_assignment: false,
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 10_000,
            session_timeout_ms: 10_000,
            protocol_type: "consumer".into(),
            // A v0 subscription to `t`.
            protocols: vec![(
                "range".into(),
                bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 1, 0, 1, b't', 0xff, 0xff, 0xff, 0xff]),
            )],
        }
    }

    #[test]
    fn members_of_a_group_never_stored_are_unknown_and_rejoin_with_epoch_zero() {
        // A fresh coordinator without `__consumer_offsets` holds no membership.
        let c = GroupCoordinator::with_config(GroupConfig::default());
        let lost = c.consumer_heartbeat("g", join("m1", 3), 1).unwrap_err();
        assert_eq!(lost.code, errors::UNKNOWN_MEMBER_ID);
        let back = c.consumer_heartbeat("g", join("m1", 0), 1).unwrap();
        assert_eq!((back.member_id.as_str(), back.member_epoch), ("m1", 1));
        // v0: the coordinator names the member.
        let named = c.consumer_heartbeat("g", join("", 0), 0).unwrap();
        assert_eq!(named.member_id.len(), 22);
        assert_eq!(c.list(&[])[0].group_type, "consumer");
    }

    #[test]
    fn a_consumer_group_serves_classic_members_and_turns_classic_when_they_alone_remain() {
        let c = GroupCoordinator::with_config(GroupConfig::default());
        c.consumer_heartbeat("g", join("m1", 0), 1).unwrap();
        // A classic JoinGroup is served by the consumer group: an id first (no pending
        // member is kept), then the join itself, answered at once.
        let id = match c.join("g", classic_join()) {
            Reply::Now(r) => {
                assert_eq!(r.error, errors::MEMBER_ID_REQUIRED);
                r.member_id
            }
            Reply::Later(_) => panic!("answered at once"),
        };
        assert_eq!(id.len(), 22);
        let joined = match c.join(
            "g",
            JoinRequest {
                member_id: id.clone(),
                ..classic_join()
            },
        ) {
            Reply::Now(r) => r,
            Reply::Later(_) => panic!("answered at once"),
        };
        assert_eq!((joined.error, joined.generation_id), (errors::NONE, 2));
        assert_eq!(joined.protocol_name.as_deref(), Some("range"));
        assert!(matches!(c.describe_classic("g"), Ok(Some(None))));
        // Offsets of a subscribed topic stay while the group has members.
        let subscribed = c.delete_offsets("g", &[("t".to_string(), 0), ("u".to_string(), 0)]);
        assert_eq!(
            subscribed,
            Ok(vec![errors::GROUP_SUBSCRIBED_TO_TOPIC, errors::NONE])
        );
        let described = c.consumer_describe("g").unwrap();
        assert_eq!((described.group_epoch, described.members.len()), (2, 2));
        let classic: Vec<bool> = described.members.iter().map(|m| m.classic).collect();
        assert_eq!(classic.iter().filter(|c| **c).count(), 1);
        // The consumer-protocol member leaves: the classic member alone remains, and the
        // group is classic again, rebalancing.
        let mut leave = join("m1", -1);
        leave.owned = None;
        c.consumer_heartbeat("g", leave, 1).unwrap();
        let listed = &c.list(&[])[0];
        assert_eq!(
            (listed.group_type, listed.state),
            ("classic", "PreparingRebalance")
        );
        let d = c.describe_classic("g").unwrap().unwrap().unwrap();
        assert_eq!(d.members.len(), 1);
        assert_eq!(
            c.heartbeat("g", &id, None, 2),
            errors::REBALANCE_IN_PROGRESS
        );
        let not_consumer = c.consumer_describe("g").unwrap_err();
        assert_eq!(not_consumer.code, errors::GROUP_ID_NOT_FOUND);
    }

    #[test]
    fn an_empty_consumer_group_becomes_classic_at_the_first_join() {
        let c = GroupCoordinator::with_config(GroupConfig::default());
        c.consumer_heartbeat("g", join("m1", 0), 1).unwrap();
        let mut leave = join("m1", -1);
        leave.owned = None;
        c.consumer_heartbeat("g", leave, 1).unwrap();
        assert_eq!(c.list(&[])[0].state, "Empty");
        match c.join("g", classic_join()) {
            Reply::Now(r) => assert_eq!(r.error, errors::MEMBER_ID_REQUIRED),
            Reply::Later(_) => panic!("MEMBER_ID_REQUIRED comes at once"),
        }
        assert_eq!(c.list(&[])[0].group_type, "classic");
    }
}
