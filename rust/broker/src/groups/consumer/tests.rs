//! The heartbeat flow of a consumer-protocol group, driven without a broker. After every
//! request the group's records are written (through Kafka's byte format) to a replica of
//! the log, which must then describe the group exactly: no change goes unwritten.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;

use uuid::Uuid;

use super::heartbeat::{validate, HeartbeatAnswer, HeartbeatRequest};
use super::written::Written;
use super::{Assignment, ConsumerGroup, ConsumerGroupState, TopicImage};
use crate::groups::config::GroupConfig;
use crate::groups::consumer_records::{decode_key, decode_value, encode_key, encode_value};
use crate::groups::operation::Ctx;
use kafkalite_core::error_codes as errors;

const T: Uuid = Uuid::from_u128(42);

fn image(partitions: i32) -> TopicImage {
    let mut img = TopicImage::default();
    img.insert("t", T, partitions);
    img
}

fn parts(ps: &[i32]) -> Assignment {
    if ps.is_empty() {
        return Assignment::new();
    }
    Assignment::from([(T, ps.iter().copied().collect::<BTreeSet<i32>>())])
}

fn join(id: &str) -> HeartbeatRequest {
    HeartbeatRequest {
        member_id: id.to_string(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["t".to_string()]),
        owned: Some(Assignment::new()),
        ..HeartbeatRequest::default()
    }
}

fn beat(id: &str, epoch: i32, owned: &[i32]) -> HeartbeatRequest {
    HeartbeatRequest {
        member_id: id.to_string(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned: Some(parts(owned)),
        ..HeartbeatRequest::default()
    }
}

struct Harness {
    config: GroupConfig,
    incarnations: AtomicU64,
    group: ConsumerGroup,
    image: TopicImage,
    /// The group's records as a replay of the log would see them.
    log: Written,
}

impl Harness {
    fn new(partitions: i32) -> Harness {
        Harness {
            config: GroupConfig::default(),
            incarnations: AtomicU64::new(1),
            group: ConsumerGroup::new(0),
            image: image(partitions),
            log: Written::default(),
        }
    }

    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            now: tokio::time::Instant::now(),
            now_ms: 0,
            config: &self.config,
            incarnations: &self.incarnations,
            effects: Vec::new(),
        }
    }

    /// Write the group's changes to the replica log, through their bytes.
    fn persist(&mut self) {
        for (key, value) in self.group.take_writes("g") {
            let key = decode_key(&encode_key(&key)).expect("a consumer key");
            let value = value.map(|v| decode_value(key.kind, &encode_value(&v)).expect("a value"));
            self.log.apply(&key, value);
        }
        if self.group.group_epoch > 0 {
            assert_eq!(
                self.log,
                self.group.as_written(),
                "the log describes the group"
            );
        }
    }

    fn send(&mut self, req: HeartbeatRequest) -> Result<HeartbeatAnswer, i16> {
        let regex = validate(&req, "g", 1, &self.config.consumer_assignors).map_err(|r| r.code)?;
        let mut cx = Ctx {
            now: tokio::time::Instant::now(),
            now_ms: 0,
            config: &self.config,
            incarnations: &self.incarnations,
            effects: Vec::new(),
        };
        let answer = self
            .group
            .heartbeat(
                "g",
                req,
                regex,
                &self.image,
                self.config.consumer_timeouts(),
                &mut cx,
            )
            .map_err(|r| r.code);
        self.persist();
        answer
    }
}

#[test]
fn a_partition_moves_only_after_its_owner_revoked_it() {
    let mut h = Harness::new(4);
    let a = h.send(join("m1")).unwrap();
    assert_eq!(
        (a.member_epoch, a.assignment),
        (1, Some(parts(&[0, 1, 2, 3])))
    );
    assert_eq!(h.group.state(), ConsumerGroupState::Stable);

    let b = h.send(join("m2")).unwrap();
    // m1 still holds everything: m2 is at the new epoch with nothing yet.
    assert_eq!((b.member_epoch, b.assignment), (2, Some(parts(&[]))));
    assert_eq!(h.group.state(), ConsumerGroupState::Reconciling);

    let a = h.send(beat("m1", 1, &[0, 1, 2, 3])).unwrap();
    assert_eq!((a.member_epoch, a.assignment), (1, Some(parts(&[0, 1]))));
    // m2 asks again while m1 has not revoked: still nothing.
    let b = h.send(beat("m2", 2, &[])).unwrap();
    assert_eq!(b.assignment, None);

    let a = h.send(beat("m1", 1, &[0, 1])).unwrap();
    assert_eq!((a.member_epoch, a.assignment), (2, None));
    let b = h.send(beat("m2", 2, &[])).unwrap();
    assert_eq!((b.member_epoch, b.assignment), (2, Some(parts(&[2, 3]))));
    assert_eq!(h.group.state(), ConsumerGroupState::Stable);
}

#[test]
fn epochs_are_checked_and_members_leave() {
    let mut h = Harness::new(2);
    h.send(join("m1")).unwrap();
    assert_eq!(
        h.send(beat("m1", 5, &[0, 1])),
        Err(errors::FENCED_MEMBER_EPOCH)
    );
    assert_eq!(
        h.send(beat("nobody", 1, &[])),
        Err(errors::UNKNOWN_MEMBER_ID)
    );
    h.send(join("m2")).unwrap();
    // m1 at epoch 1 keeps partition 0 at epoch 2 once it revoked partition 1.
    h.send(beat("m1", 1, &[0, 1])).unwrap();
    let a = h.send(beat("m1", 1, &[0])).unwrap();
    assert_eq!(a.member_epoch, 2);
    // Its previous epoch is still accepted with owned partitions it is assigned.
    assert_eq!(h.send(beat("m1", 1, &[0])).unwrap().member_epoch, 2);
    assert_eq!(
        h.send(beat("m1", 1, &[0, 1])),
        Err(errors::FENCED_MEMBER_EPOCH)
    );

    let left = h.send(beat("m1", -1, &[])).unwrap();
    assert_eq!(left.member_epoch, -1);
    assert_eq!(h.send(beat("m1", -1, &[])), Err(errors::UNKNOWN_MEMBER_ID));
    // m2 now gets both partitions at once: nobody holds them.
    let b = h.send(beat("m2", 2, &[])).unwrap();
    assert_eq!((b.member_epoch, b.assignment), (3, Some(parts(&[0, 1]))));
}

#[test]
fn a_static_member_keeps_its_partitions_across_a_restart() {
    let mut h = Harness::new(2);
    let with_instance = |mut r: HeartbeatRequest| {
        r.instance_id = Some("i1".to_string());
        r
    };
    h.send(with_instance(join("m1"))).unwrap();
    assert_eq!(
        h.send(with_instance(join("m9"))),
        Err(errors::UNRELEASED_INSTANCE_ID)
    );
    assert_eq!(
        h.send(with_instance(beat("m9", 1, &[]))),
        Err(errors::FENCED_INSTANCE_ID)
    );
    let left = h.send(with_instance(beat("m1", -2, &[]))).unwrap();
    assert_eq!(left.member_epoch, -2);
    let back = h.send(with_instance(join("m2"))).unwrap();
    assert_eq!(
        (back.member_epoch, back.assignment),
        (1, Some(parts(&[0, 1])))
    );
    assert!(!h.group.members.contains_key("m1"));
}

#[test]
fn new_partitions_and_bad_requests() {
    let mut h = Harness::new(1);
    h.send(join("m1")).unwrap();
    h.image = image(3);
    let a = h.send(beat("m1", 1, &[0])).unwrap();
    assert_eq!((a.member_epoch, a.assignment), (2, Some(parts(&[0, 1, 2]))));

    let mut no_topics = join("m3");
    no_topics.subscribed_topic_names = None;
    assert_eq!(h.send(no_topics), Err(errors::INVALID_REQUEST));
    let mut bad_regex = join("m3");
    bad_regex.subscribed_topic_regex = Some("(".to_string());
    assert_eq!(h.send(bad_regex), Err(errors::INVALID_REGULAR_EXPRESSION));
    let mut bad_assignor = join("m3");
    bad_assignor.server_assignor = Some("sticky".to_string());
    assert_eq!(h.send(bad_assignor), Err(errors::UNSUPPORTED_ASSIGNOR));
    assert_eq!(h.send(beat("", 1, &[])), Err(errors::INVALID_REQUEST));
    assert_eq!(h.send(beat("m1", -3, &[])), Err(errors::INVALID_REQUEST));

    let mut by_regex = join("m4");
    by_regex.subscribed_topic_names = None;
    by_regex.subscribed_topic_regex = Some("t|u".to_string());
    let r = h.send(by_regex).unwrap();
    assert_eq!(r.member_epoch, 3);
}

#[test]
fn a_regex_reaches_only_the_topics_the_member_may_describe() {
    const U: Uuid = Uuid::from_u128(43);
    let mut h = Harness::new(2);
    h.image.insert("u", U, 1);
    let may_describe = super::member::TopicFilter(std::sync::Arc::new(|t: &str| t == "t"));
    let mut by_regex = join("m1");
    by_regex.subscribed_topic_names = None;
    by_regex.subscribed_topic_regex = Some("t|u".to_string());
    by_regex.regex_filter = Some(may_describe.clone());
    let a = h.send(by_regex).unwrap();
    assert_eq!(a.assignment, Some(parts(&[0, 1])), "u is not assigned");
    // Without an authorizer (no filter) the next heartbeat's regex matches u too.
    let mut beat = beat("m1", 1, &[0, 1]);
    beat.subscribed_topic_regex = Some("t|u".to_string());
    let a = h.send(beat).unwrap();
    let everything = Assignment::from([(T, BTreeSet::from([0, 1])), (U, BTreeSet::from([0]))]);
    assert_eq!((a.member_epoch, a.assignment), (2, Some(everything)));
}

#[test]
fn the_member_past_group_consumer_max_size_is_refused() {
    let mut h = Harness::new(2);
    h.config.consumer_max_size = 2;
    h.send(join("m1")).unwrap();
    h.send(join("m2")).unwrap();
    assert_eq!(h.send(join("m3")), Err(errors::GROUP_MAX_SIZE_REACHED));
    let mut static_joiner = join("m4");
    static_joiner.instance_id = Some("i4".to_string());
    assert_eq!(h.send(static_joiner), Err(errors::GROUP_MAX_SIZE_REACHED));
    // Members already in keep heartbeating; a place freed by a leave is taken again.
    assert!(h.send(beat("m1", 1, &[0, 1])).is_ok());
    let mut leave = beat("m2", -1, &[]);
    leave.owned = None;
    h.send(leave).unwrap();
    assert!(h.send(join("m3")).is_ok());
}

#[test]
fn a_member_may_name_the_assignor_by_its_short_name_only() {
    let mut h = Harness::new(2);
    let mut by_class = join("m1");
    by_class.server_assignor =
        Some("org.apache.kafka.coordinator.group.assignor.RangeAssignor".to_string());
    assert_eq!(h.send(by_class), Err(errors::UNSUPPORTED_ASSIGNOR));
    let mut range = join("m1");
    range.server_assignor = Some("range".to_string());
    h.send(range).unwrap();
    assert_eq!(h.group.assignor.map(super::Assignor::name), Some("range"));
}

#[test]
fn members_keep_their_epochs_and_assignments_through_a_restart() {
    let mut h = Harness::new(4);
    h.send(join("m1")).unwrap();
    h.send(join("m2")).unwrap();
    // m1 revokes half of its partitions, m2 receives them: both at epoch 2.
    h.send(beat("m1", 1, &[0, 1, 2, 3])).unwrap();
    h.send(beat("m1", 1, &[0, 1])).unwrap();
    h.send(beat("m2", 2, &[])).unwrap();
    let mut static_member = join("m3");
    static_member.instance_id = Some("i3".to_string());
    h.send(static_member).unwrap();
    let before = h.group.as_written();

    // A new coordinator loads the log.
    let restored = {
        let cx = h.ctx();
        ConsumerGroup::restore(h.log.clone(), &h.image, &cx)
    };
    let old = std::mem::replace(&mut h.group, restored);
    assert_eq!(h.group.as_written(), before);
    assert_eq!(h.group.state(), old.state());
    assert_eq!(h.group.static_members, old.static_members);
    for (id, m) in &old.members {
        let now = &h.group.members[id];
        assert_eq!(now.progress, m.progress, "{id}");
        assert_eq!(now.subscription, m.subscription, "{id}");
    }
    // The members go on at their epochs: no fencing, no new group epoch (the topics'
    // metadata hash is the stored one).
    let epoch = h.group.group_epoch;
    let owned_m1: Vec<i32> = old.members["m1"].progress.assigned[&T]
        .iter()
        .copied()
        .collect();
    let a = h
        .send(beat("m1", old.members["m1"].epoch(), &owned_m1))
        .unwrap();
    // (It moves on to the epoch m3's join started, as it would have without the restart.)
    assert_eq!(a.member_epoch, h.group.assignment_epoch);
    assert_eq!(h.group.group_epoch, epoch);
    // A topic that grew while the coordinator was away moves the epoch on.
    h.image = image(6);
    let restored = {
        let cx = h.ctx();
        ConsumerGroup::restore(h.log.clone(), &h.image, &cx)
    };
    h.group = restored;
    h.send(beat("m1", a.member_epoch, &owned_m1)).unwrap();
    assert_eq!(h.group.group_epoch, epoch + 1);
}

#[test]
fn members_gone_leave_tombstones() {
    let mut h = Harness::new(2);
    h.send(join("m1")).unwrap();
    h.send(join("m2")).unwrap();
    let mut leave = beat("m2", -1, &[]);
    leave.owned = None;
    h.send(leave).unwrap();
    assert!(!h.log.members.contains_key("m2") && !h.log.current.contains_key("m2"));
    assert!(!h.log.targets.contains_key("m2"));
    // The group's own tombstones delete every record left.
    let mut log = h.log.clone();
    for (key, value) in h.log.tombstones("g") {
        log.apply(&key, value);
    }
    assert_eq!(log, Written::default());
}
