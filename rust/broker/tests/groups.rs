//! The group coordinator over real sockets: JoinGroup/SyncGroup/Heartbeat/LeaveGroup,
//! static membership, session expiry, committed offsets and their persistence in
//! `__consumer_offsets`, with requests encoded and responses decoded by `kafka-protocol`.

use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::delete_groups_request::DeleteGroupsRequest;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, GroupId, HeartbeatRequest, HeartbeatResponse,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest,
    ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest,
    OffsetDeleteResponse, OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest,
    SyncGroupResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafkalite_core::records::decode_records;

mod common;
use common::{Client, TestBroker};

const MEMBER_ID_REQUIRED: i16 = 79;
const ILLEGAL_GENERATION: i16 = 22;
const UNKNOWN_MEMBER_ID: i16 = 25;
const INVALID_SESSION_TIMEOUT: i16 = 26;
const REBALANCE_IN_PROGRESS: i16 = 27;
const NON_EMPTY_GROUP: i16 = 68;
const GROUP_ID_NOT_FOUND: i16 = 69;
const FENCED_INSTANCE_ID: i16 = 82;
const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;

// ---------------------------------------------------------------------------------------
// Harness

/// Group timings short enough for tests.
const GROUP_SETTINGS: [(&str, &str); 3] = [
    ("group.initial.rebalance.delay.ms", "0"),
    ("group.min.session.timeout.ms", "100"),
    ("offsets.topic.num.partitions", "5"),
];

fn start() -> TestBroker {
    start_with(&[])
}

/// With extra broker settings (kept across restarts).
fn start_with(extra: &[(&str, &str)]) -> TestBroker {
    let settings: Vec<(&str, &str)> = GROUP_SETTINGS.iter().chain(extra).copied().collect();
    TestBroker::start(&settings)
}

impl Client {
    fn join(
        &mut self,
        version: i16,
        group: &str,
        member: &str,
        opts: &JoinOpts,
    ) -> JoinGroupResponse {
        let request = JoinGroupRequest::default()
            .with_group_id(gid(group))
            .with_session_timeout_ms(opts.session_ms)
            .with_rebalance_timeout_ms(opts.rebalance_ms)
            .with_member_id(s(member))
            .with_group_instance_id(opts.instance.map(s))
            .with_protocol_type(s("consumer"))
            .with_protocols(
                opts.protocols
                    .iter()
                    .map(|p| {
                        JoinGroupRequestProtocol::default()
                            .with_name(s(p))
                            .with_metadata(Bytes::from(format!("{member}:{p}")))
                    })
                    .collect(),
            );
        self.call(ApiKey::JoinGroup, version, &request)
    }

    /// A dynamic member's whole join at v5: MEMBER_ID_REQUIRED, then the real join.
    fn join_new(&mut self, group: &str, opts: &JoinOpts) -> JoinGroupResponse {
        let first = self.join(5, group, "", opts);
        assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
        assert!(!first.member_id.is_empty());
        let joined = self.join(5, group, &first.member_id, opts);
        assert_eq!(joined.error_code, 0, "{joined:?}");
        joined
    }

    fn sync(
        &mut self,
        group: &str,
        member: &str,
        instance: Option<&str>,
        generation: i32,
        assignments: &[(&str, &str)],
    ) -> SyncGroupResponse {
        let request = SyncGroupRequest::default()
            .with_group_id(gid(group))
            .with_generation_id(generation)
            .with_member_id(s(member))
            .with_group_instance_id(instance.map(s))
            .with_protocol_type(Some(s("consumer")))
            .with_assignments(
                assignments
                    .iter()
                    .map(|(m, a)| {
                        SyncGroupRequestAssignment::default()
                            .with_member_id(s(m))
                            .with_assignment(Bytes::from(a.to_string()))
                    })
                    .collect(),
            );
        self.call(ApiKey::SyncGroup, 5, &request)
    }

    fn heartbeat(
        &mut self,
        group: &str,
        member: &str,
        instance: Option<&str>,
        generation: i32,
    ) -> i16 {
        let request = HeartbeatRequest::default()
            .with_group_id(gid(group))
            .with_generation_id(generation)
            .with_member_id(s(member))
            .with_group_instance_id(instance.map(s));
        let r: HeartbeatResponse = self.call(ApiKey::Heartbeat, 4, &request);
        r.error_code
    }

    fn describe(
        &mut self,
        group: &str,
    ) -> kafka_protocol::messages::describe_groups_response::DescribedGroup {
        let request = DescribeGroupsRequest::default().with_groups(vec![gid(group)]);
        let mut r: DescribeGroupsResponse = self.call(ApiKey::DescribeGroups, 5, &request);
        r.groups.remove(0)
    }

    fn commit(
        &mut self,
        group: &str,
        generation: i32,
        member: &str,
        offsets: &[(&str, i32, i64, Option<&str>)],
    ) -> Vec<i16> {
        let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
        for (topic, partition, offset, metadata) in offsets {
            let p = OffsetCommitRequestPartition::default()
                .with_partition_index(*partition)
                .with_committed_offset(*offset)
                .with_committed_metadata(metadata.map(s));
            match topics.iter_mut().find(|t| t.name.0.as_str() == *topic) {
                Some(t) => t.partitions.push(p),
                None => topics.push(
                    OffsetCommitRequestTopic::default()
                        .with_name(tn(topic))
                        .with_partitions(vec![p]),
                ),
            }
        }
        let request = OffsetCommitRequest::default()
            .with_group_id(gid(group))
            .with_generation_id_or_member_epoch(generation)
            .with_member_id(s(member))
            .with_topics(topics);
        let r: OffsetCommitResponse = self.call(ApiKey::OffsetCommit, 8, &request);
        r.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect()
    }

    /// OffsetFetch v7 of the given partitions (None: all): (topic, partition, offset, metadata).
    fn fetch(
        &mut self,
        group: &str,
        topics: Option<&[(&str, &[i32])]>,
    ) -> Vec<(String, i32, i64, String)> {
        let request = OffsetFetchRequest::default()
            .with_group_id(gid(group))
            .with_topics(topics.map(|ts| {
                ts.iter()
                    .map(|(t, ps)| {
                        OffsetFetchRequestTopic::default()
                            .with_name(tn(t))
                            .with_partition_indexes(ps.to_vec())
                    })
                    .collect()
            }));
        let r: OffsetFetchResponse = self.call(ApiKey::OffsetFetch, 7, &request);
        assert_eq!(r.error_code, 0);
        r.topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    assert_eq!(p.error_code, 0);
                    (
                        t.name.0.to_string(),
                        p.partition_index,
                        p.committed_offset,
                        p.metadata
                            .as_ref()
                            .map(ToString::to_string)
                            .unwrap_or_default(),
                    )
                })
            })
            .collect()
    }
}

struct JoinOpts {
    session_ms: i32,
    rebalance_ms: i32,
    instance: Option<&'static str>,
    protocols: Vec<&'static str>,
}

impl Default for JoinOpts {
    fn default() -> Self {
        JoinOpts {
            session_ms: 10_000,
            rebalance_ms: 10_000,
            instance: None,
            protocols: vec!["range"],
        }
    }
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn gid(v: &str) -> GroupId {
    GroupId(s(v))
}

fn tn(v: &str) -> TopicName {
    TopicName(s(v))
}

/// Join `n` new members concurrently (each on its own connection) and return their
/// connections and JoinGroup answers in arrival order of the threads.
fn join_concurrently(
    b: &TestBroker,
    group: &'static str,
    n: usize,
) -> Vec<(Client, JoinGroupResponse)> {
    let addr = b.addr();
    let handles: Vec<_> = (0..n)
        .map(|_| {
            thread::spawn(move || {
                let mut c = Client::connect(addr);
                let r = c.join_new(group, &JoinOpts::default());
                (c, r)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

// ---------------------------------------------------------------------------------------
// Tests

#[test]
fn find_coordinator_is_this_node_for_groups() {
    let b = start();
    let mut c = b.client();
    for version in [0, 3] {
        let r: FindCoordinatorResponse = c.call(
            ApiKey::FindCoordinator,
            version,
            &FindCoordinatorRequest::default().with_key(s("g")),
        );
        assert_eq!((r.error_code, r.port), (0, i32::from(b.addr().port())));
    }
    let r: FindCoordinatorResponse = c.call(
        ApiKey::FindCoordinator,
        4,
        &FindCoordinatorRequest::default().with_coordinator_keys(vec![s("a"), s("b")]),
    );
    assert_eq!(r.coordinators.len(), 2);
    assert!(r
        .coordinators
        .iter()
        .all(|k| k.error_code == 0 && k.port > 0));
}

#[test]
fn two_members_join_and_sync_through_the_leader() {
    // Members joining a new group within `group.initial.rebalance.delay.ms` share its
    // first generation.
    let b = start_with(&[("group.initial.rebalance.delay.ms", "500")]);
    let started = Instant::now();
    let mut joined = join_concurrently(&b, "g2", 2);
    assert!(
        started.elapsed() >= Duration::from_millis(450),
        "the first rebalance is delayed"
    );
    let generation = joined[0].1.generation_id;
    assert!(joined
        .iter()
        .all(|(_, r)| r.generation_id == generation && generation >= 1));
    let leader_id = joined[0].1.leader.to_string();
    assert!(joined.iter().all(|(_, r)| r.leader.as_str() == leader_id));
    assert!(joined
        .iter()
        .all(|(_, r)| r.protocol_name.as_deref() == Some("range")));
    let leader_at = joined
        .iter()
        .position(|(_, r)| r.member_id.as_str() == leader_id)
        .unwrap();
    let (mut leader, leader_join) = joined.remove(leader_at);
    let (mut follower, follower_join) = joined.remove(0);
    assert_eq!(leader_join.members.len(), 2, "the leader sees every member");
    assert!(follower_join.members.is_empty());
    let follower_id = follower_join.member_id.to_string();
    let metadata: Vec<String> = leader_join
        .members
        .iter()
        .map(|m| String::from_utf8(m.metadata.to_vec()).unwrap())
        .collect();
    assert!(metadata.contains(&format!("{follower_id}:range")));

    // The follower's SyncGroup waits until the leader's arrives.
    let waiting = thread::spawn(move || {
        let r = follower.sync("g2", &follower_id, None, generation, &[]);
        (follower, follower_id, r)
    });
    thread::sleep(Duration::from_millis(200));
    assert!(
        !waiting.is_finished(),
        "the follower waits for the leader's assignment"
    );
    let r = leader.sync(
        "g2",
        &leader_id,
        None,
        generation,
        &[(&leader_id, "partitions-of-leader")],
    );
    assert_eq!(
        (r.error_code, &r.assignment[..]),
        (0, &b"partitions-of-leader"[..])
    );
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    let (mut follower, follower_id, r) = waiting.join().unwrap();
    // The leader left this member out: it gets an empty assignment.
    assert_eq!((r.error_code, r.assignment.len()), (0, 0));

    assert_eq!(follower.heartbeat("g2", &follower_id, None, generation), 0);
    assert_eq!(
        follower.heartbeat("g2", &follower_id, None, generation - 1),
        ILLEGAL_GENERATION
    );
    assert_eq!(
        follower.heartbeat("g2", "stranger", None, generation),
        UNKNOWN_MEMBER_ID
    );

    let d = leader.describe("g2");
    assert_eq!(
        (d.group_state.as_str(), d.protocol_data.as_str()),
        ("Stable", "range")
    );
    assert_eq!(d.members.len(), 2);
    assert!(d
        .members
        .iter()
        .all(|m| m.client_id.as_str() == "kafkalite-broker-test"
            && m.client_host.as_str() == "/127.0.0.1"));
    let leader_desc = d
        .members
        .iter()
        .find(|m| m.member_id.as_str() == leader_id)
        .unwrap();
    assert_eq!(&leader_desc.member_assignment[..], b"partitions-of-leader");
}

/// JoinGroup records who asked, from the connection and the request header: each member's
/// host is its own connection's peer, whichever listener it came through.
#[test]
fn members_carry_their_own_connections_host_and_client_id() {
    let settings: Vec<(&str, &str)> = GROUP_SETTINGS.to_vec();
    let b = TestBroker::start_listening(&settings, &["PLAINTEXT", "INTERNAL"]);
    let mut internal = Client::connect_from(b.listener_addr("INTERNAL"), "127.0.0.3");
    internal.client_id = "internal-app";
    let mut plain = Client::connect_from(b.listener_addr("PLAINTEXT"), "127.0.0.2");
    plain.client_id = "plain-app";
    for (client, group) in [(&mut internal, "g-internal"), (&mut plain, "g-plain")] {
        client.join_new(group, &JoinOpts::default());
    }
    let hosts = |c: &mut Client, group: &str| -> Vec<(String, String)> {
        c.describe(group)
            .members
            .iter()
            .map(|m| (m.client_id.to_string(), m.client_host.to_string()))
            .collect()
    };
    let want = |id: &str, host: &str| vec![(id.to_string(), host.to_string())];
    // Asked from either connection: what is stored is the joiner's.
    assert_eq!(
        hosts(&mut plain, "g-internal"),
        want("internal-app", "/127.0.0.3")
    );
    assert_eq!(
        hosts(&mut internal, "g-plain"),
        want("plain-app", "/127.0.0.2")
    );
}

#[test]
fn member_id_required_only_from_v4() {
    let b = start();
    let mut c = b.client();
    let opts = JoinOpts::default();
    // v3: a new member joins directly.
    let r = c.join(3, "old", "", &opts);
    assert_eq!(r.error_code, 0);
    assert!(!r.member_id.is_empty());
    assert_eq!(r.leader, r.member_id);
    // v4+: first MEMBER_ID_REQUIRED with an id to use.
    let r = c.join(4, "new", "", &opts);
    assert_eq!((r.error_code, r.generation_id), (MEMBER_ID_REQUIRED, -1));
    let again = c.join(4, "new", &r.member_id, &opts);
    assert_eq!(
        (again.error_code, again.member_id.clone()),
        (0, r.member_id)
    );
    // Session timeouts outside the broker's bounds are refused.
    let bad = JoinOpts {
        session_ms: 10,
        ..JoinOpts::default()
    };
    assert_eq!(
        c.join(5, "new", "", &bad).error_code,
        INVALID_SESSION_TIMEOUT
    );
    // A member id the group never issued is unknown.
    assert_eq!(
        c.join(5, "new", "made-up", &opts).error_code,
        UNKNOWN_MEMBER_ID
    );
    // A join refused outright leaves no group behind.
    let none = JoinOpts {
        protocols: vec![],
        ..JoinOpts::default()
    };
    assert_eq!(c.join(5, "refused", "", &none).error_code, 23);
    let r: ListGroupsResponse = c.call(ApiKey::ListGroups, 4, &ListGroupsRequest::default());
    let names: Vec<&str> = r.groups.iter().map(|g| g.group_id.0.as_str()).collect();
    assert_eq!(names, vec!["new", "old"]);
}

#[test]
fn heartbeat_says_rebalance_in_progress_when_a_member_joins() {
    let b = start();
    let mut a = b.client();
    let ja = a.join_new("hb", &JoinOpts::default());
    let a_id = ja.member_id.to_string();
    assert_eq!(
        a.sync("hb", &a_id, None, ja.generation_id, &[(&a_id, "x")])
            .error_code,
        0
    );

    let addr = b.addr();
    let newcomer = thread::spawn(move || {
        let mut c = Client::connect(addr);
        c.join_new("hb", &JoinOpts::default())
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let e = a.heartbeat("hb", &a_id, None, ja.generation_id);
        if e == REBALANCE_IN_PROGRESS {
            break;
        }
        assert_eq!(e, 0);
        assert!(Instant::now() < deadline, "no rebalance signalled");
        thread::sleep(Duration::from_millis(20));
    }
    // A sync of the old generation is refused while the group rebalances.
    assert_eq!(
        a.sync("hb", &a_id, None, ja.generation_id, &[]).error_code,
        REBALANCE_IN_PROGRESS
    );
    // The old member rejoins with its id: both get the next generation, no storm of
    // UNKNOWN_MEMBER_ID.
    let again = a.join(5, "hb", &a_id, &JoinOpts::default());
    let other = newcomer.join().unwrap();
    assert_eq!(again.error_code, 0);
    assert_eq!(again.generation_id, ja.generation_id + 1);
    assert_eq!(other.generation_id, again.generation_id);
    assert_eq!(
        again.leader.as_str(),
        a_id,
        "the first member keeps leading"
    );
}

#[test]
fn an_expired_session_removes_the_member_and_rebalances() {
    let b = start();
    let short = JoinOpts {
        session_ms: 600,
        rebalance_ms: 5_000,
        ..JoinOpts::default()
    };
    let mut a = b.client();
    let mut c = b.client();
    let ja = a.join_new("exp", &short);
    let a_id = ja.member_id.to_string();
    assert_eq!(
        a.sync("exp", &a_id, None, ja.generation_id, &[]).error_code,
        0
    );
    // Second member joins; a rejoins when told; both sync.
    let addr = b.addr();
    let joiner = thread::spawn(move || {
        let mut c = Client::connect(addr);
        let r = c.join_new("exp", &short_opts());
        (c, r)
    });
    while a.heartbeat("exp", &a_id, None, ja.generation_id) != REBALANCE_IN_PROGRESS {
        thread::sleep(Duration::from_millis(20));
    }
    let ja2 = a.join(5, "exp", &a_id, &short);
    let (mut cc, jc) = joiner.join().unwrap();
    let c_id = jc.member_id.to_string();
    let generation = ja2.generation_id;
    let waiting = thread::spawn(move || {
        let r = cc.sync("exp", &c_id, None, generation, &[]);
        (cc, c_id, r)
    });
    assert_eq!(a.sync("exp", &a_id, None, generation, &[]).error_code, 0);
    let (_cc, c_id, r) = waiting.join().unwrap();
    assert_eq!(r.error_code, 0);
    drop(_cc);

    // Only `a` heartbeats; `c` expires after its 600 ms session.
    let started = Instant::now();
    loop {
        let e = a.heartbeat("exp", &a_id, None, generation);
        if e == REBALANCE_IN_PROGRESS {
            break;
        }
        assert_eq!(e, 0);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the session never expired"
        );
        thread::sleep(Duration::from_millis(50));
    }
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(400),
        "expired too early: {waited:?}"
    );
    let again = a.join(5, "exp", &a_id, &short);
    assert_eq!((again.error_code, again.generation_id), (0, generation + 1));
    assert_eq!(again.members.len(), 1, "only the live member is left");
    let mut other = b.client();
    assert_eq!(
        other.heartbeat("exp", &c_id, None, generation),
        UNKNOWN_MEMBER_ID
    );
    let _ = c.describe("exp");
}

fn short_opts() -> JoinOpts {
    JoinOpts {
        session_ms: 600,
        rebalance_ms: 5_000,
        ..JoinOpts::default()
    }
}

#[test]
fn a_static_member_rejoins_without_a_rebalance_and_fences_its_old_self() {
    let b = start();
    let opts = JoinOpts {
        instance: Some("instance-1"),
        ..JoinOpts::default()
    };
    let mut old = b.client();
    let first = old.join(5, "static", "", &opts);
    assert_eq!(
        first.error_code, 0,
        "static members skip MEMBER_ID_REQUIRED"
    );
    let first_id = first.member_id.to_string();
    assert!(first_id.starts_with("instance-1-"));
    let generation = first.generation_id;
    let r = old.sync(
        "static",
        &first_id,
        Some("instance-1"),
        generation,
        &[(&first_id, "p0,p1")],
    );
    assert_eq!(r.error_code, 0);

    // The process restarts: a new connection, no member id, the same instance id.
    let mut new = b.client();
    let second = new.join(5, "static", "", &opts);
    assert_eq!(second.error_code, 0);
    assert_ne!(second.member_id.as_str(), first_id);
    assert_eq!(second.generation_id, generation, "no rebalance");
    let second_id = second.member_id.to_string();
    let r = new.sync("static", &second_id, Some("instance-1"), generation, &[]);
    assert_eq!((r.error_code, &r.assignment[..]), (0, &b"p0,p1"[..]));
    assert_eq!(
        new.heartbeat("static", &second_id, Some("instance-1"), generation),
        0
    );

    // The old incarnation is fenced everywhere.
    assert_eq!(
        old.heartbeat("static", &first_id, Some("instance-1"), generation),
        FENCED_INSTANCE_ID
    );
    assert_eq!(
        old.join(5, "static", &first_id, &opts).error_code,
        FENCED_INSTANCE_ID
    );
    let d = new.describe("static");
    assert_eq!(d.group_state.as_str(), "Stable");
    assert_eq!(d.members.len(), 1);
    assert_eq!(
        d.members[0].group_instance_id.as_deref(),
        Some("instance-1")
    );

    // LeaveGroup v3+ by instance id alone (an administrator removing it).
    let r: LeaveGroupResponse = new.call(
        ApiKey::LeaveGroup,
        4,
        &LeaveGroupRequest::default()
            .with_group_id(gid("static"))
            .with_members(vec![MemberIdentity::default()
                .with_member_id(s(""))
                .with_group_instance_id(Some(s("instance-1")))]),
    );
    assert_eq!(r.members.len(), 1);
    assert_eq!(r.members[0].error_code, 0);
    assert_eq!(new.describe("static").group_state.as_str(), "Empty");
}

#[test]
fn offsets_commit_and_fetch_with_metadata() {
    let b = start();
    b.create_topic("orders", 3);
    let mut c = b.client();
    // A simple (assign()-mode) consumer commits without a generation.
    assert_eq!(
        c.commit(
            "simple",
            -1,
            "",
            &[("orders", 0, 10, Some("half")), ("orders", 1, 20, None)]
        ),
        vec![0, 0]
    );
    assert_eq!(
        c.commit(
            "simple",
            -1,
            "",
            &[("nope", 0, 1, None), ("orders", 9, 1, None)]
        ),
        vec![3, 3]
    );
    let got = c.fetch("simple", Some(&[("orders", &[0, 1, 2]), ("unknown", &[0])]));
    assert_eq!(
        got,
        vec![
            ("orders".into(), 0, 10, "half".into()),
            ("orders".into(), 1, 20, String::new()),
            ("orders".into(), 2, -1, String::new()),
            ("unknown".into(), 0, -1, String::new()),
        ]
    );
    // Null topics: everything committed.
    assert_eq!(c.fetch("simple", None).len(), 2);
    assert!(c.fetch("never-committed", None).is_empty());

    // v8: several groups at once.
    let r: OffsetFetchResponse = c.call(
        ApiKey::OffsetFetch,
        8,
        &OffsetFetchRequest::default().with_groups(vec![
            OffsetFetchRequestGroup::default()
                .with_group_id(gid("simple"))
                .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                    .with_name(tn("orders"))
                    .with_partition_indexes(vec![0])])),
            OffsetFetchRequestGroup::default().with_group_id(gid("other")),
        ]),
    );
    assert_eq!(r.groups.len(), 2);
    let p = &r.groups[0].topics[0].partitions[0];
    assert_eq!(
        (p.committed_offset, p.metadata.as_deref()),
        (10, Some("half"))
    );
    assert!(r.groups[1].topics.is_empty());

    // A group with members: only its current members commit.
    let j = c.join_new("managed", &JoinOpts::default());
    let id = j.member_id.to_string();
    assert_eq!(
        c.sync("managed", &id, None, j.generation_id, &[])
            .error_code,
        0
    );
    assert_eq!(
        c.commit(
            "managed",
            j.generation_id,
            &id,
            &[("orders", 2, 7, Some("m"))]
        ),
        vec![0]
    );
    assert_eq!(
        c.commit(
            "managed",
            j.generation_id + 1,
            &id,
            &[("orders", 2, 8, None)]
        ),
        vec![ILLEGAL_GENERATION]
    );
    assert_eq!(
        c.commit("managed", -1, "", &[("orders", 2, 9, None)]),
        vec![UNKNOWN_MEMBER_ID]
    );
    assert_eq!(
        c.commit("managed", j.generation_id, "who", &[("orders", 2, 9, None)]),
        vec![UNKNOWN_MEMBER_ID]
    );
    assert_eq!(
        c.fetch("managed", Some(&[("orders", &[2])])),
        vec![("orders".into(), 2, 7, "m".into())]
    );
}

#[test]
fn list_describe_delete_groups_and_offsets() {
    let b = start();
    b.create_topic("t", 2);
    let mut c = b.client();
    assert_eq!(
        c.commit("idle", -1, "", &[("t", 0, 5, None), ("t", 1, 6, None)]),
        vec![0, 0]
    );
    let j = c.join_new("busy", &JoinOpts::default());
    let id = j.member_id.to_string();
    // Subscription metadata in the consumer protocol's format: version 0, topics ["t"].
    let _ = c.sync("busy", &id, None, j.generation_id, &[]);
    assert_eq!(
        c.commit("busy", j.generation_id, &id, &[("t", 0, 1, None)]),
        vec![0]
    );

    let r: ListGroupsResponse = c.call(ApiKey::ListGroups, 4, &ListGroupsRequest::default());
    let listed: Vec<(String, String)> = r
        .groups
        .iter()
        .map(|g| (g.group_id.0.to_string(), g.group_state.to_string()))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("busy".into(), "Stable".into()),
            ("idle".into(), "Empty".into())
        ]
    );
    let r: ListGroupsResponse = c.call(
        ApiKey::ListGroups,
        4,
        &ListGroupsRequest::default().with_states_filter(vec![s("empty")]),
    );
    assert_eq!(r.groups.len(), 1);
    assert_eq!(r.groups[0].group_id.0.as_str(), "idle");
    assert_eq!(c.describe("nothing-here").group_state.as_str(), "Dead");

    // OffsetDelete: fine on an empty group; an active group has no subscription we can
    // read here (the metadata is not the consumer format), so its offsets may go too.
    let r: OffsetDeleteResponse = c.call(
        ApiKey::OffsetDelete,
        0,
        &OffsetDeleteRequest::default()
            .with_group_id(gid("idle"))
            .with_topics(vec![OffsetDeleteRequestTopic::default()
                .with_name(tn("t"))
                .with_partitions(vec![
                    OffsetDeleteRequestPartition::default().with_partition_index(0),
                    OffsetDeleteRequestPartition::default().with_partition_index(7),
                ])]),
    );
    assert_eq!(r.error_code, 0);
    let errors: Vec<i16> = r.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(errors, vec![0, 3]);
    assert_eq!(
        c.fetch("idle", None),
        vec![("t".into(), 1, 6, String::new())]
    );
    let r: OffsetDeleteResponse = c.call(
        ApiKey::OffsetDelete,
        0,
        &OffsetDeleteRequest::default().with_group_id(gid("ghost")),
    );
    assert_eq!(r.error_code, GROUP_ID_NOT_FOUND);

    let r: DeleteGroupsResponse = c.call(
        ApiKey::DeleteGroups,
        2,
        &DeleteGroupsRequest::default().with_groups_names(vec![
            gid("idle"),
            gid("busy"),
            gid("ghost"),
        ]),
    );
    let results: Vec<(String, i16)> = r
        .results
        .iter()
        .map(|g| (g.group_id.0.to_string(), g.error_code))
        .collect();
    assert_eq!(
        results,
        vec![
            ("idle".into(), 0),
            ("busy".into(), NON_EMPTY_GROUP),
            ("ghost".into(), GROUP_ID_NOT_FOUND)
        ]
    );
    assert!(c.fetch("idle", None).is_empty());
    let _ = GROUP_SUBSCRIBED_TO_TOPIC;
}

#[test]
fn offset_delete_refuses_topics_the_group_consumes() {
    let b = start();
    b.create_topic("sub", 1);
    let mut c = b.client();
    // ConsumerProtocolSubscription v0: topics ["sub"], user data null.
    let mut metadata = vec![0, 0, 0, 0, 0, 1, 0, 3];
    metadata.extend_from_slice(b"sub");
    metadata.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    let request = |member: &str| {
        JoinGroupRequest::default()
            .with_group_id(gid("consuming"))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_member_id(s(member))
            .with_protocol_type(s("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(Bytes::from(metadata.clone()))])
    };
    let first: JoinGroupResponse = c.call(ApiKey::JoinGroup, 5, &request(""));
    let j: JoinGroupResponse = c.call(ApiKey::JoinGroup, 5, &request(&first.member_id));
    let id = j.member_id.to_string();
    assert_eq!(
        c.sync("consuming", &id, None, j.generation_id, &[])
            .error_code,
        0
    );
    assert_eq!(
        c.commit("consuming", j.generation_id, &id, &[("sub", 0, 3, None)]),
        vec![0]
    );
    let r: OffsetDeleteResponse = c.call(
        ApiKey::OffsetDelete,
        0,
        &OffsetDeleteRequest::default()
            .with_group_id(gid("consuming"))
            .with_topics(vec![OffsetDeleteRequestTopic::default()
                .with_name(tn("sub"))
                .with_partitions(vec![
                    OffsetDeleteRequestPartition::default().with_partition_index(0)
                ])]),
    );
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        GROUP_SUBSCRIBED_TO_TOPIC
    );
    // After the member leaves (v0-2 form), the group is empty and the offsets can go.
    let r: LeaveGroupResponse = c.call(
        ApiKey::LeaveGroup,
        1,
        &LeaveGroupRequest::default()
            .with_group_id(gid("consuming"))
            .with_member_id(s(&id)),
    );
    assert_eq!(r.error_code, 0);
    let r: LeaveGroupResponse = c.call(
        ApiKey::LeaveGroup,
        1,
        &LeaveGroupRequest::default()
            .with_group_id(gid("consuming"))
            .with_member_id(s(&id)),
    );
    assert_eq!(r.error_code, UNKNOWN_MEMBER_ID);
}

#[test]
fn offsets_and_groups_survive_a_restart_in_consumer_offsets() {
    let b = start();
    b.create_topic("orders", 2);
    let mut c = b.client();
    assert_eq!(
        c.commit(
            "simple",
            -1,
            "",
            &[("orders", 0, 41, Some("meta-0")), ("orders", 1, 7, None)]
        ),
        vec![0, 0]
    );
    // Overwritten: the latest commit wins after replay.
    assert_eq!(
        c.commit("simple", -1, "", &[("orders", 1, 8, Some("later"))]),
        vec![0]
    );
    let j = c.join_new("managed", &JoinOpts::default());
    let id = j.member_id.to_string();
    assert_eq!(
        c.sync("managed", &id, None, j.generation_id, &[(&id, "assigned")])
            .error_code,
        0
    );
    assert_eq!(
        c.commit("managed", j.generation_id, &id, &[("orders", 0, 3, None)]),
        vec![0]
    );
    // A deleted group stays deleted.
    assert_eq!(c.commit("gone", -1, "", &[("orders", 0, 1, None)]), vec![0]);
    let r: DeleteGroupsResponse = c.call(
        ApiKey::DeleteGroups,
        2,
        &DeleteGroupsRequest::default().with_groups_names(vec![gid("gone")]),
    );
    assert_eq!(r.results[0].error_code, 0);

    // The records are in the compacted internal topic, keyed, in Kafka's formats.
    let state = b.broker.state();
    let topic = state
        .topic("__consumer_offsets")
        .expect("created on first commit");
    assert_eq!(topic.partition_count(), 5);
    assert_eq!(
        topic
            .configs
            .read()
            .unwrap()
            .get("cleanup.policy")
            .map(String::as_str),
        Some("compact")
    );
    let mut keys = 0;
    for p in &topic.hosted() {
        let log = p.log.lock().unwrap();
        if let Some(slice) = log.read(0, 1 << 20, None).unwrap() {
            let mut buf = vec![0u8; slice.len as usize];
            std::os::unix::fs::FileExt::read_exact_at(&*slice.file, &mut buf, slice.position)
                .unwrap();
            let mut rest = &buf[..];
            while rest.len() > 12 {
                let size = 12 + i32::from_be_bytes(rest[8..12].try_into().unwrap()) as usize;
                for r in decode_records(&rest[..size]).unwrap() {
                    let key = r.key.expect("every record is keyed");
                    assert!(matches!(&key[..2], [0, 1] | [0, 2]), "Kafka key versions");
                    keys += 1;
                }
                rest = &rest[size..];
            }
        }
    }
    assert!(keys >= 6);
    drop(c);

    let b = b.restart();
    let mut c = b.client();
    assert_eq!(
        c.fetch("simple", None),
        vec![
            ("orders".into(), 0, 41, "meta-0".into()),
            ("orders".into(), 1, 8, "later".into())
        ]
    );
    assert_eq!(
        c.fetch("managed", None),
        vec![("orders".into(), 0, 3, String::new())]
    );
    assert!(c.fetch("gone", None).is_empty());
    // The group came back as it was stored: Stable, with its member and assignment, which
    // can carry on within its session timeout.
    let d = c.describe("managed");
    assert_eq!(d.group_state.as_str(), "Stable");
    assert_eq!(d.members.len(), 1);
    assert_eq!(&d.members[0].member_assignment[..], b"assigned");
    assert_eq!(c.heartbeat("managed", &id, None, j.generation_id), 0);
    let r = c.sync("managed", &id, None, j.generation_id, &[]);
    assert_eq!(&r.assignment[..], b"assigned");
    let r: ListGroupsResponse = c.call(ApiKey::ListGroups, 3, &ListGroupsRequest::default());
    let mut names: Vec<String> = r.groups.iter().map(|g| g.group_id.0.to_string()).collect();
    names.sort();
    assert_eq!(names, vec!["managed".to_string(), "simple".to_string()]);
}

/// OffsetCommit v2-4 with a retention time: the commit expires then, removed by the
/// periodic check (`offsets.retention.check.interval.ms`) or when the broker starts.
fn commit_with_retention(c: &mut Client, group: &str, retention_ms: i64) {
    let request = OffsetCommitRequest::default()
        .with_group_id(gid(group))
        .with_generation_id_or_member_epoch(-1)
        .with_retention_time_ms(retention_ms)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(tn("kept"))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(5)])]);
    let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 2, &request);
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
}

#[test]
fn expired_offsets_are_removed_periodically_and_at_startup() {
    let b = start_with(&[("offsets.retention.check.interval.ms", "100")]);
    b.create_topic("kept", 1);
    let mut c = b.client();
    commit_with_retention(&mut c, "brief", 1);
    commit_with_retention(&mut c, "lasting", -1);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !c.fetch("brief", None).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the expired commit is still there"
        );
        thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(c.fetch("lasting", None).len(), 1);
    // The group had nothing else: it is gone too.
    let r: ListGroupsResponse = c.call(ApiKey::ListGroups, 4, &ListGroupsRequest::default());
    let names: Vec<&str> = r.groups.iter().map(|g| g.group_id.0.as_str()).collect();
    assert_eq!(names, vec!["lasting"]);
    drop(c);

    // Expired while the broker was down (no periodic check in between): removed when it
    // starts.
    let mut b = b.restart();
    b.settings.insert(
        "offsets.retention.check.interval.ms".into(),
        "3600000".into(),
    );
    let b = b.restart();
    let mut c = b.client();
    commit_with_retention(&mut c, "brief", 300);
    assert_eq!(c.fetch("brief", None).len(), 1);
    drop(c);
    thread::sleep(Duration::from_millis(400));
    let b = b.restart();
    let mut c = b.client();
    assert!(c.fetch("brief", None).is_empty());
    assert_eq!(c.fetch("lasting", None).len(), 1);
}
