//! The heartbeat flow of a consumer-protocol group, driven without a broker.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;

use uuid::Uuid;

use super::heartbeat::{validate, HeartbeatAnswer, HeartbeatRequest};
use super::{Assignment, ConsumerGroup, ConsumerGroupState, TopicImage};
use crate::groups::config::GroupConfig;
use crate::groups::errors;
use crate::groups::group::Ctx;

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
}

impl Harness {
    fn new(partitions: i32) -> Harness {
        Harness {
            config: GroupConfig::default(),
            incarnations: AtomicU64::new(1),
            group: ConsumerGroup::new(0),
            image: image(partitions),
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
        self.group
            .heartbeat(
                "g",
                req,
                regex,
                &self.image,
                self.config.consumer_timeouts(),
                &mut cx,
            )
            .map_err(|r| r.code)
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
