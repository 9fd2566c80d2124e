//! Mixed groups driven without a runtime: a classic group upgraded by a consumer-protocol
//! member, its classic members served by the consumer group, and the downgrade when the
//! last consumer-protocol member leaves.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use super::*;
use tokio::time::Instant;

use crate::groups::config::GroupConfig;
use crate::groups::config::MigrationPolicy;
use crate::groups::consumer::heartbeat::HeartbeatRequest;
use crate::groups::consumer::written::Written;
use crate::groups::consumer::{Assignment, TopicImage};
use crate::groups::consumer_protocol::{encode_assignment, parse_assignment};
use crate::groups::member::{JoinResult, Reply, SyncResult};
use crate::groups::operation::Effect;
use crate::groups::records::{GroupRecord, MemberRecord};

const T: Uuid = Uuid::from_u128(42);

/// A v1 subscription to `t` owning `owned`.
fn subscription(owned: &[i32]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(1);
    b.put_i32(1);
    b.put_i16(1);
    b.put_slice(b"t");
    b.put_i32(-1);
    b.put_i32(i32::from(!owned.is_empty()));
    if !owned.is_empty() {
        b.put_i16(1);
        b.put_slice(b"t");
        b.put_i32(owned.len() as i32);
        for p in owned {
            b.put_i32(*p);
        }
    }
    b.freeze()
}

fn parts(ps: &[i32]) -> Assignment {
    if ps.is_empty() {
        return Assignment::new();
    }
    Assignment::from([(T, ps.iter().copied().collect::<BTreeSet<i32>>())])
}

/// The partitions of `t` in a consumer-protocol assignment.
fn assigned(bytes: &[u8]) -> Vec<i32> {
    let a = parse_assignment(bytes).expect("a well-formed assignment");
    a.partitions
        .into_iter()
        .filter(|(t, _)| t == "t")
        .flat_map(|(_, ps)| ps)
        .collect()
}

struct Harness {
    config: GroupConfig,
    incarnations: AtomicU64,
    group: Group,
    image: TopicImage,
    now: Instant,
    effects: Vec<Effect>,
    /// The consumer group's records as a replay of the log would see them.
    log: Written,
}

impl Harness {
    /// A Stable classic group of the consumer protocol in generation 3: `a` owns t-0,1 and
    /// `b` owns t-2,3.
    fn classic(policy: MigrationPolicy) -> Harness {
        let config = GroupConfig {
            migration_policy: policy,
            ..GroupConfig::default()
        };
        let incarnations = AtomicU64::new(1);
        let member = |id: &str, owned: &[i32]| MemberRecord {
            member_id: id.into(),
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 10_000,
            session_timeout_ms: 10_000,
            subscription: subscription(&[]),
            assignment: encode_assignment(&[("t".into(), owned.to_vec())], 1),
            ..MemberRecord::default()
        };
        let record = GroupRecord {
            protocol_type: "consumer".into(),
            generation: 3,
            protocol: Some("range".into()),
            leader: Some("a".into()),
            current_state_timestamp: 0,
            members: vec![member("a", &[0, 1]), member("b", &[2, 3])],
        };
        let now = Instant::now();
        let group = {
            let cx = Ctx {
                now,
                now_ms: 0,
                config: &config,
                incarnations: &incarnations,
                effects: Vec::new(),
            };
            Group::restore("g", Some(record), Default::default(), &cx)
        };
        let mut image = TopicImage::default();
        image.insert("t", T, 4);
        Harness {
            config,
            incarnations,
            group,
            image,
            now,
            effects: Vec::new(),
            log: Written::default(),
        }
    }

    fn run<R>(&mut self, f: impl FnOnce(&mut Group, &TopicImage, &mut Ctx) -> R) -> R {
        let mut cx = Ctx {
            now: self.now,
            now_ms: 1_000,
            config: &self.config,
            incarnations: &self.incarnations,
            effects: Vec::new(),
        };
        let r = f(&mut self.group, &self.image, &mut cx);
        self.effects.extend(cx.effects);
        for (key, value) in self.group.take_consumer_writes() {
            self.log.apply(&key, value);
        }
        if let Some(cg) = self.group.consumer.as_ref().filter(|cg| cg.group_epoch > 0) {
            assert_eq!(self.log, cg.as_written(), "the log describes the group");
        }
        r
    }

    /// A consumer-protocol member joins (upgrading the group if it is classic).
    fn consumer_joins(&mut self, id: &str) -> Result<i32, i16> {
        self.run(|g, image, cx| {
            if g.consumer.is_none() {
                g.become_consumer_group("g", image, cx)
                    .map_err(|r| r.code)?;
            }
            let req = HeartbeatRequest {
                member_id: id.into(),
                member_epoch: 0,
                rebalance_timeout_ms: 30_000,
                subscribed_topic_names: Some(vec!["t".into()]),
                owned: Some(Assignment::new()),
                ..HeartbeatRequest::default()
            };
            let timeouts = cx.config.consumer_timeouts();
            let cg = g.consumer.as_mut().unwrap();
            cg.heartbeat("g", req, None, image, timeouts, cx)
                .map(|a| a.member_epoch)
                .map_err(|r| r.code)
        })
    }

    fn classic_join(&mut self, id: &str, owned: &[i32]) -> JoinResult {
        let req = JoinRequest {
            member_id: id.into(),
            group_instance_id: None,
            require_known_member_id: true,
            supports_skip_assignment: false,
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 10_000,
            session_timeout_ms: 10_000,
            protocol_type: "consumer".into(),
            protocols: vec![
                ("range".into(), subscription(owned)),
                ("cooperative-sticky".into(), subscription(owned)),
            ],
        };
        match self.run(|g, image, cx| g.classic_join(req, image, cx)) {
            Reply::Now(r) => r,
            Reply::Later(_) => panic!("a consumer group answers JoinGroup at once"),
        }
    }

    fn classic_sync(&mut self, id: &str, generation: i32) -> SyncResult {
        let req = SyncRequest {
            member_id: id.into(),
            group_instance_id: None,
            generation_id: generation,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments: Vec::new(),
        };
        match self.run(|g, _, cx| g.classic_sync(req, cx)) {
            Reply::Now(r) => r,
            Reply::Later(_) => panic!("a consumer group answers SyncGroup at once"),
        }
    }

    fn classic_heartbeat(&mut self, id: &str, generation: i32) -> i16 {
        self.run(|g, _, cx| g.classic_heartbeat(id, None, generation, cx))
    }

    fn consumer(&self) -> &ConsumerGroup {
        self.group.consumer.as_ref().expect("a consumer group")
    }
}

#[test]
fn an_upgraded_group_keeps_its_members_generation_and_assignments() {
    let mut h = Harness::classic(MigrationPolicy::Bidirectional);
    assert_eq!(h.consumer_joins("c"), Ok(4));
    // The classic group's record goes; the consumer group's records come.
    assert!(h.group.classic_record_dropped);
    assert_eq!(h.log.members.len(), 3);
    let cg = h.consumer();
    assert_eq!(cg.classic_members(), 2);
    let a = &cg.members["a"];
    assert_eq!(
        (a.epoch(), a.progress.assigned.clone()),
        (3, parts(&[0, 1]))
    );
    assert_eq!(cg.members["b"].progress.assigned, parts(&[2, 3]));
    // The classic side is empty; the group is a consumer group now.
    assert!(h.group.members.is_empty());
    assert_eq!(h.group.type_and_state().0, "consumer");
    // c joined at epoch 4 with nothing yet: a and b still hold every partition.
    assert!(h.consumer().members["c"].progress.assigned.is_empty());

    // a learns of the rebalance at its next heartbeat, and rejoins owning nothing (eager).
    assert_eq!(h.classic_heartbeat("a", 3), errors::REBALANCE_IN_PROGRESS);
    assert_eq!(h.classic_heartbeat("a", 2), errors::ILLEGAL_GENERATION);
    let joined = h.classic_join("a", &[]);
    assert_eq!(joined.error, errors::NONE);
    assert_eq!(joined.generation_id, 4);
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    assert_eq!(joined.leader, "");
    let target_a = h.consumer().target["a"].clone();
    let synced = h.classic_sync("a", 4);
    assert_eq!(synced.error, errors::NONE);
    let expect: Vec<i32> = target_a.get(&T).into_iter().flatten().copied().collect();
    assert_eq!(assigned(&synced.assignment), expect);
    assert_eq!(h.classic_heartbeat("a", 4), errors::NONE);
    // A stale generation is ILLEGAL_GENERATION to a classic member's commit too.
    assert_eq!(
        h.consumer().validate_commit("a", 3, 8),
        Err(errors::ILLEGAL_GENERATION)
    );
    assert_eq!(h.consumer().validate_commit("a", 4, 8), Ok(()));
    // A transactional commit is checked the same way, at any version.
    assert_eq!(
        h.consumer().validate_txn_commit("a", None, 3),
        Err(errors::ILLEGAL_GENERATION)
    );
    assert_eq!(h.consumer().validate_txn_commit("a", None, 4), Ok(()));
    assert_eq!(
        h.consumer().validate_txn_commit("nobody", None, 4),
        Err(errors::UNKNOWN_MEMBER_ID)
    );
}

#[test]
fn a_consumer_members_stale_epoch_is_stale_to_a_transactional_commit() {
    let mut h = Harness::classic(MigrationPolicy::Bidirectional);
    let epoch = h.consumer_joins("c").unwrap();
    assert_eq!(h.consumer().validate_txn_commit("c", None, epoch), Ok(()));
    assert_eq!(
        h.consumer().validate_txn_commit("c", None, epoch - 1),
        Err(errors::STALE_MEMBER_EPOCH)
    );
    assert_eq!(
        h.consumer().validate_txn_commit("c", None, epoch + 1),
        Err(errors::STALE_MEMBER_EPOCH)
    );
    // A producer outside the group commits while members are in it (Kafka 4.4), but
    // not one naming an instance or a member it is not.
    assert_eq!(h.consumer().validate_txn_commit("", None, -1), Ok(()));
    assert_eq!(
        h.consumer().validate_txn_commit("", Some("i"), -1),
        Err(errors::UNKNOWN_MEMBER_ID)
    );
}

#[test]
fn the_last_consumer_member_leaving_turns_the_group_classic_again() {
    let mut h = Harness::classic(MigrationPolicy::Bidirectional);
    h.consumer_joins("c").unwrap();
    let epoch = h.consumer().group_epoch;
    let targets = h.consumer().target.clone();
    h.run(|g, _, cx| g.fence_consumer_members(&["c".to_string()], cx));
    // Every consumer-group record is deleted; the classic group's is written.
    assert_eq!(h.log, Written::default());
    let g = &h.group;
    assert!(g.consumer.is_none());
    assert_eq!(g.generation, epoch);
    assert_eq!(g.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(g.protocol_name.as_deref(), Some("range"));
    // It rebalances; meanwhile each member holds its target assignment.
    assert_eq!(g.state, GroupState::PreparingRebalance);
    for id in ["a", "b"] {
        let expect: Vec<i32> = targets[id].get(&T).into_iter().flatten().copied().collect();
        assert_eq!(assigned(&g.members[id].assignment), expect, "{id}");
    }
    assert!(h.effects.iter().any(|e| matches!(e, Effect::StoreGroup)));
    assert_eq!(
        h.run(|g, _, cx| g.classic_heartbeat("a", None, epoch, cx)),
        errors::REBALANCE_IN_PROGRESS
    );
}

#[test]
fn the_policy_decides_which_way_a_group_may_go() {
    let mut h = Harness::classic(MigrationPolicy::Downgrade);
    let refused = h
        .run(|g, image, cx| g.become_consumer_group("g", image, cx))
        .unwrap_err();
    assert_eq!(refused.code, errors::GROUP_ID_NOT_FOUND);
    assert_eq!(
        refused.message,
        "Cannot upgrade classic group g to consumer group because online upgrade is disabled."
    );
    assert!(h.group.consumer.is_none() && h.group.members.len() == 2);

    // Upgrade only: the group stays a consumer group when c leaves.
    let mut h = Harness::classic(MigrationPolicy::Upgrade);
    h.consumer_joins("c").unwrap();
    let epoch = h.consumer().group_epoch;
    h.run(|g, _, cx| g.fence_consumer_members(&["c".to_string()], cx));
    assert_eq!(h.consumer().group_epoch, epoch + 1);
    assert_eq!(h.consumer().members.len(), 2);
}

#[test]
fn groups_that_cannot_be_upgraded_are_refused_as_kafka_refuses_them() {
    let mut h = Harness::classic(MigrationPolicy::Bidirectional);
    h.group.protocol_type = Some("connect".into());
    let refused = h
        .run(|g, image, cx| g.become_consumer_group("g", image, cx))
        .unwrap_err();
    assert!(refused
        .message
        .ends_with("does not use the consumer embedded protocol."));

    // A custom assignor's user data would be lost.
    let mut h = Harness::classic(MigrationPolicy::Bidirectional);
    let mut with_data = BytesMut::from(&encode_assignment(&[("t".into(), vec![0])], 1)[..]);
    with_data.truncate(with_data.len() - 4);
    with_data.put_i32(2);
    with_data.put_slice(b"ud");
    h.group.members.get_mut("a").unwrap().assignment = with_data.freeze();
    let refused = h
        .run(|g, image, cx| g.become_consumer_group("g", image, cx))
        .unwrap_err();
    assert_eq!(refused.code, errors::GROUP_ID_NOT_FOUND);
    assert!(refused.message.contains("unsupported custom assignor"));
    h.group.members.get_mut("a").unwrap().assignment = Bytes::from_static(&[0, 1, 0]);
    let refused = h
        .run(|g, image, cx| g.become_consumer_group("g", image, cx))
        .unwrap_err();
    assert!(refused
        .message
        .ends_with("the embedded consumer protocol is malformed."));
    // Nothing changed.
    assert!(h.group.consumer.is_none() && h.group.state == GroupState::Stable);
}

#[test]
fn a_classic_member_that_does_not_sync_in_time_is_fenced() {
    let mut h = Harness::classic(MigrationPolicy::Upgrade);
    h.consumer_joins("c").unwrap();
    let joined = h.classic_join("", &[]);
    assert_eq!(joined.error, errors::MEMBER_ID_REQUIRED);
    assert_eq!(joined.member_id.len(), 22);
    let id = joined.member_id;
    let joined = h.classic_join(&id, &[]);
    assert_eq!(joined.error, errors::NONE);
    let incarnation = h.consumer().members[&id].incarnation;
    // Its sync deadline is the rebalance timeout (10 s) away.
    h.now += std::time::Duration::from_secs(11);
    let next = h.run(|g, _, cx| g.consumer_classic_deadline_check(&id, incarnation, cx));
    assert_eq!(next, None);
    assert!(!h.consumer().members.contains_key(&id));
}
