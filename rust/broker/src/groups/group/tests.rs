//! Unit tests of the state machine, driven without a runtime: timers are fired by hand from
//! the effects the group asks for.

use std::sync::atomic::AtomicU64;

use tokio::sync::oneshot;

use super::protocol::subscription_topics;
use super::*;
use tokio::time::Instant;

use crate::groups::config::GroupConfig;
use crate::groups::member::{JoinResult, Reply, SyncResult};
use crate::groups::operation::Effect;
use crate::groups::records::GroupRecord;

struct Harness {
    config: GroupConfig,
    incarnations: AtomicU64,
    group: Group,
    now: Instant,
    /// Timers asked for and not yet fired.
    timers: Vec<Effect>,
    stores: usize,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            config: GroupConfig {
                initial_rebalance_delay_ms: 0,
                ..GroupConfig::default()
            },
            incarnations: AtomicU64::new(1),
            group: Group::new("g", 0),
            now: Instant::now(),
            timers: Vec::new(),
            stores: 0,
        }
    }

    fn run<R>(&mut self, f: impl FnOnce(&mut Group, &mut Ctx) -> R) -> R {
        let mut cx = Ctx {
            now: self.now,
            now_ms: 1_000,
            config: &self.config,
            incarnations: &self.incarnations,
            effects: Vec::new(),
        };
        let r = f(&mut self.group, &mut cx);
        for e in cx.effects {
            match e {
                Effect::StoreGroup => self.stores += 1,
                other => self.timers.push(other),
            }
        }
        r
    }

    fn join(&mut self, member_id: &str, protocols: &[&str]) -> Reply<JoinResult> {
        self.join_as(member_id, None, protocols)
    }

    fn join_as(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        protocols: &[&str],
    ) -> Reply<JoinResult> {
        let req = JoinRequest {
            member_id: member_id.into(),
            group_instance_id: instance.map(str::to_string),
            require_known_member_id: true,
            supports_skip_assignment: false,
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 10_000,
            session_timeout_ms: 6_000,
            protocol_type: "consumer".into(),
            protocols: protocols
                .iter()
                .map(|p| (p.to_string(), Bytes::from(format!("meta-{member_id}-{p}"))))
                .collect(),
        };
        self.run(|g, cx| g.join(req, cx))
    }

    /// A new dynamic member: MEMBER_ID_REQUIRED, then a join with the id it got.
    fn join_new(&mut self, protocols: &[&str]) -> (String, oneshot::Receiver<JoinResult>) {
        let Reply::Now(r) = self.join("", protocols) else {
            panic!("a new member is answered at once");
        };
        assert_eq!(r.error, errors::MEMBER_ID_REQUIRED);
        assert!(r.member_id.starts_with("client-"));
        let Reply::Later(rx) = self.join(&r.member_id, protocols) else {
            panic!("the join waits for the rebalance");
        };
        (r.member_id, rx)
    }

    /// Two dynamic members, joined and synced: the group is Stable in generation 1.
    fn stable_pair(&mut self) -> (String, String) {
        let (a, mut rx_a) = self.join_new(&["range"]);
        let (b, mut rx_b) = self.join_new(&["range"]);
        self.fire_join_timers();
        ready(&mut rx_a);
        ready(&mut rx_b);
        now_value(self.sync(&a, &[]));
        now_value(self.sync(&b, &[]));
        (a, b)
    }

    /// Fire the pending join timers (as if their delay passed), and the ones they start.
    fn fire_join_timers(&mut self) {
        while self
            .timers
            .iter()
            .any(|t| matches!(t, Effect::JoinTimer { .. }))
        {
            let timers = std::mem::take(&mut self.timers);
            for t in timers {
                match t {
                    Effect::JoinTimer { epoch, initial, .. } => {
                        self.run(|g, cx| g.on_join_timer(epoch, initial, cx));
                    }
                    other => self.timers.push(other),
                }
            }
        }
    }

    fn sync(&mut self, member_id: &str, assignments: &[(&str, &str)]) -> Reply<SyncResult> {
        let req = SyncRequest {
            member_id: member_id.into(),
            group_instance_id: None,
            generation_id: self.group.generation,
            protocol_type: None,
            protocol_name: None,
            assignments: assignments
                .iter()
                .map(|(m, a)| (m.to_string(), Bytes::from(a.to_string())))
                .collect(),
        };
        self.run(|g, cx| g.sync(req, cx))
    }
}

fn ready<T>(rx: &mut oneshot::Receiver<T>) -> T {
    rx.try_recv().expect("answered")
}

fn now_value<T>(reply: Reply<T>) -> T {
    match reply {
        Reply::Now(v) => v,
        Reply::Later(mut rx) => rx.try_recv().expect("answered already"),
    }
}

#[test]
fn two_members_join_sync_and_get_the_leaders_assignment() {
    let mut h = Harness::new();
    let (a, mut rx_a) = h.join_new(&["range"]);
    // The delayed first rebalance ends by its timer only.
    assert!(rx_a.try_recv().is_err());
    assert_eq!(h.group.state, GroupState::PreparingRebalance);
    let (b, mut rx_b) = h.join_new(&["range"]);
    h.fire_join_timers();
    let ja = ready(&mut rx_a);
    let jb = ready(&mut rx_b);
    assert_eq!((ja.error, jb.error), (0, 0));
    assert_eq!((ja.generation_id, jb.generation_id), (1, 1));
    assert_eq!(
        (ja.leader.as_str(), jb.leader.as_str()),
        (a.as_str(), a.as_str())
    );
    assert_eq!(ja.protocol_name.as_deref(), Some("range"));
    assert_eq!(
        ja.members.len(),
        2,
        "the leader gets every member's metadata"
    );
    assert!(jb.members.is_empty());
    assert_eq!(h.group.state, GroupState::CompletingRebalance);

    // The follower's SyncGroup waits for the leader's.
    let Reply::Later(mut sync_b) = h.sync(&b, &[]) else {
        panic!("follower waits")
    };
    assert!(sync_b.try_recv().is_err());
    let sync_a = h.sync(&a, &[(&a, "for-a"), (&b, "for-b")]);
    assert_eq!(now_value(sync_a).assignment, Bytes::from("for-a"));
    assert_eq!(ready(&mut sync_b).assignment, Bytes::from("for-b"));
    assert_eq!(h.group.state, GroupState::Stable);
    assert_eq!(h.stores, 1);

    // Heartbeats: fine now; ILLEGAL_GENERATION for an old generation; unknown members.
    assert_eq!(h.run(|g, cx| g.heartbeat(&b, None, 1, cx)), errors::NONE);
    assert_eq!(
        h.run(|g, cx| g.heartbeat(&b, None, 0, cx)),
        errors::ILLEGAL_GENERATION
    );
    assert_eq!(
        h.run(|g, cx| g.heartbeat("nobody", None, 1, cx)),
        errors::UNKNOWN_MEMBER_ID
    );
}

#[test]
fn a_new_member_triggers_a_rebalance_the_others_learn_by_heartbeat() {
    let mut h = Harness::new();
    let (a, mut rx_a) = h.join_new(&["range"]);
    h.fire_join_timers();
    assert_eq!(ready(&mut rx_a).generation_id, 1);
    now_value(h.sync(&a, &[(&a, "all")]));
    let (b, mut rx_b) = h.join_new(&["range"]);
    assert_eq!(h.group.state, GroupState::PreparingRebalance);
    assert_eq!(
        h.run(|g, cx| g.heartbeat(&a, None, 1, cx)),
        errors::REBALANCE_IN_PROGRESS
    );
    // Once the old member rejoins too, the join phase completes at once.
    let Reply::Later(mut rx_a) = h.join(&a, &["range"]) else {
        panic!()
    };
    let (ja, jb) = (ready(&mut rx_a), ready(&mut rx_b));
    assert_eq!((ja.generation_id, jb.generation_id), (2, 2));
    assert_eq!(ja.leader, a);
    assert_eq!(jb.member_id, b);
}

#[test]
fn members_that_do_not_rejoin_are_dropped_when_the_rebalance_times_out() {
    let mut h = Harness::new();
    let (a, b) = h.stable_pair();
    // b rejoins (say, its subscription changed); a never does: b becomes leader.
    let Reply::Later(mut rx_b) = h.join(&b, &["range", "roundrobin"]) else {
        panic!("changed metadata rebalances")
    };
    assert!(rx_b.try_recv().is_err());
    h.timers.retain(|t| matches!(t, Effect::JoinTimer { .. }));
    h.fire_join_timers();
    let jb = ready(&mut rx_b);
    assert_eq!((jb.generation_id, jb.leader.as_str()), (2, b.as_str()));
    assert!(!h.group.members.contains_key(&a));
}

#[test]
fn protocol_is_one_all_support_by_vote() {
    let mut h = Harness::new();
    let (_, mut r1) = h.join_new(&["roundrobin", "range"]);
    let (_, mut r2) = h.join_new(&["range", "roundrobin"]);
    let (_, mut r3) = h.join_new(&["cooperative-sticky", "range"]);
    h.fire_join_timers();
    for rx in [&mut r1, &mut r2, &mut r3] {
        assert_eq!(ready(rx).protocol_name.as_deref(), Some("range"));
    }
    // A member with nothing in common is refused.
    let Reply::Now(r) = h.join("", &["sticky"]) else {
        panic!()
    };
    assert_eq!(r.error, errors::INCONSISTENT_GROUP_PROTOCOL);
}

#[test]
fn session_expiry_removes_the_member_and_rebalances() {
    let mut h = Harness::new();
    let (a, b) = h.stable_pair();
    let incarnation = h.group.members[&b].incarnation;
    // Not yet due: keep watching.
    assert!(h
        .run(|g, cx| g.on_heartbeat_deadline(&b, incarnation, cx))
        .is_some());
    h.now += Duration::from_secs(7);
    assert_eq!(h.run(|g, cx| g.heartbeat(&a, None, 1, cx)), 0);
    assert!(h
        .run(|g, cx| g.on_heartbeat_deadline(&b, incarnation, cx))
        .is_none());
    assert!(!h.group.members.contains_key(&b));
    assert_eq!(h.group.state, GroupState::PreparingRebalance);
}

#[test]
fn static_member_rejoin_keeps_its_assignment_and_fences_the_old_id() {
    let mut h = Harness::new();
    let Reply::Later(mut rx) = h.join_as("", Some("i1"), &["range"]) else {
        panic!("static members need no MEMBER_ID_REQUIRED")
    };
    h.fire_join_timers();
    let first = ready(&mut rx);
    assert!(first.member_id.starts_with("i1-"));
    now_value(h.sync(&first.member_id, &[(&first.member_id, "mine")]));
    let generation = h.group.generation;

    // Restarted with a new (empty) member id: same generation, no rebalance.
    let again = now_value(h.join_as("", Some("i1"), &["range"]));
    assert_eq!(again.error, 0);
    assert_ne!(again.member_id, first.member_id);
    assert_eq!(again.generation_id, generation);
    assert_eq!(h.group.state, GroupState::Stable);
    let synced = now_value(h.sync(&again.member_id, &[]));
    assert_eq!(synced.assignment, Bytes::from("mine"));

    // The old incarnation is fenced.
    assert_eq!(
        h.run(|g, cx| g.heartbeat(&first.member_id, Some("i1"), generation, cx)),
        errors::FENCED_INSTANCE_ID
    );
    let Reply::Now(r) = h.join_as(&first.member_id, Some("i1"), &["range"]) else {
        panic!()
    };
    assert_eq!(r.error, errors::FENCED_INSTANCE_ID);
}

#[test]
fn leaving_members_rebalance_the_rest_and_the_last_leaves_it_empty() {
    let mut h = Harness::new();
    let (a, b) = h.stable_pair();
    assert_eq!(
        h.run(|g, cx| g.leave(&[(a.clone(), None)], cx)),
        vec![errors::NONE]
    );
    assert_eq!(h.group.leader.as_deref(), Some(b.as_str()));
    assert_eq!(h.group.state, GroupState::PreparingRebalance);
    assert_eq!(
        h.run(|g, cx| g.leave(&[(b.clone(), None), ("x".into(), None)], cx)),
        vec![errors::NONE, errors::UNKNOWN_MEMBER_ID]
    );
    // Nobody left to wait for: the group is Empty at the next generation.
    assert_eq!(h.group.state, GroupState::Empty);
    assert_eq!(h.group.generation, 2);
}

#[test]
fn commits_follow_kafkas_rules() {
    let mut h = Harness::new();
    // Simple consumers commit to an empty group.
    assert_eq!(h.run(|g, cx| g.validate_commit(-1, "", None, cx)), Ok(()));
    let (a, mut rx_a) = h.join_new(&["range"]);
    h.fire_join_timers();
    ready(&mut rx_a);
    // Mid-rebalance a member is told to rejoin first; simple commits are refused.
    assert_eq!(
        h.run(|g, cx| g.validate_commit(1, &a, None, cx)),
        Err(errors::REBALANCE_IN_PROGRESS)
    );
    now_value(h.sync(&a, &[]));
    assert_eq!(h.run(|g, cx| g.validate_commit(1, &a, None, cx)), Ok(()));
    assert_eq!(
        h.run(|g, cx| g.validate_commit(0, &a, None, cx)),
        Err(errors::ILLEGAL_GENERATION)
    );
    assert_eq!(
        h.run(|g, cx| g.validate_commit(-1, "", None, cx)),
        Err(errors::UNKNOWN_MEMBER_ID)
    );
}

#[test]
fn transactional_commits_follow_kafkas_rules() {
    let mut h = Harness::new();
    // A producer outside the group commits whatever the group's state.
    assert_eq!(h.group.validate_txn_commit(-1, "", None), Ok(()));
    let (a, mut rx_a) = h.join_new(&["range"]);
    h.fire_join_timers();
    ready(&mut rx_a);
    // No rebalance refuses a transactional commit (the consumer's group metadata is
    // checked, not the group's state).
    assert_eq!(h.group.validate_txn_commit(1, &a, None), Ok(()));
    assert_eq!(h.group.validate_txn_commit(-1, "", None), Ok(()));
    now_value(h.sync(&a, &[]));
    assert_eq!(h.group.validate_txn_commit(1, &a, None), Ok(()));
    assert_eq!(
        h.group.validate_txn_commit(0, &a, None),
        Err(errors::ILLEGAL_GENERATION)
    );
    assert_eq!(
        h.group.validate_txn_commit(1, "nobody", None),
        Err(errors::UNKNOWN_MEMBER_ID)
    );
    h.group.state = GroupState::Dead;
    assert_eq!(
        h.group.validate_txn_commit(-1, "", None),
        Err(errors::COORDINATOR_NOT_AVAILABLE)
    );
}

#[test]
fn subscriptions_are_read_from_consumer_metadata() {
    // version 1, topics ["a", "bc"], user data null, owned partitions [].
    let mut m = vec![0, 1, 0, 0, 0, 2, 0, 1, b'a', 0, 2, b'b', b'c'];
    m.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    assert_eq!(subscription_topics(&m), Some(vec!["a".into(), "bc".into()]));
    assert_eq!(subscription_topics(&[0, 1, 0x7f, 0xff, 0xff, 0xff]), None);
    assert_eq!(subscription_topics(&[]), None);
}

#[test]
fn restored_groups_come_back_stable_with_their_members() {
    let mut h = Harness::new();
    let (a, mut rx_a) = h.join_new(&["range"]);
    h.fire_join_timers();
    ready(&mut rx_a);
    now_value(h.sync(&a, &[(&a, "asg")]));
    let record = h.group.to_record();
    let cx = Ctx {
        now: h.now,
        now_ms: 5,
        config: &h.config,
        incarnations: &h.incarnations,
        effects: Vec::new(),
    };
    let g = Group::restore("g", Some(record), Offsets::default(), &cx);
    assert_eq!(g.state, GroupState::Stable);
    assert_eq!(g.generation, 1);
    assert_eq!(g.leader.as_deref(), Some(a.as_str()));
    assert_eq!(g.members[&a].assignment, Bytes::from("asg"));
    let empty = Group::restore(
        "g",
        Some(GroupRecord {
            protocol_type: "consumer".into(),
            generation: 3,
            ..GroupRecord::default()
        }),
        Offsets::default(),
        &cx,
    );
    assert_eq!((empty.state, empty.generation), (GroupState::Empty, 3));
}
