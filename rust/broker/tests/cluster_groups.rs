//! Group coordination in cluster mode over real sockets, without ZooKeeper: the test plays
//! the Python side, pushing snapshots in. `__consumer_offsets` is a cluster topic: the first
//! FindCoordinator asks the controller side to create it; then every group's coordinator is
//! the leader of its partition (Kafka's `abs(hashCode) % partitions`), and this broker
//! answers NOT_COORDINATOR for the groups of partitions it does not lead.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{
    ApiKey, DescribeGroupsRequest, DescribeGroupsResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, GroupId, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
    JoinGroupResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafkalite_broker::cluster::{
    AdminOp, BrokerNode, ClusterSnapshot, ReplicaState, TopicSnapshot, INTERNAL_OFFSETS_TOPIC,
};
use kafkalite_broker::coordinator::runtime::partition_for;
use kafkalite_broker::net::Listener;
use kafkalite_broker::{Broker, BrokerConfig};
use kafkalite_core::error_codes as codes;

use common::Client;

const ME: i32 = 2;

fn start(dir: &std::path::Path) -> Broker {
    let config = BrokerConfig {
        node_id: ME,
        listeners: vec![Listener::plaintext(
            "PLAINTEXT",
            "127.0.0.1:0".parse().unwrap(),
        )],
        log_dirs: vec![dir.to_path_buf()],
        zookeeper_connect: Some("127.0.0.1:2181".into()),
        ..BrokerConfig::default()
    };
    Broker::start(config, 2).unwrap()
}

/// The leader alone in the ISR: no follower fetches here, and a commit is answered once
/// the ISR has it.
fn replica(leader: i32, epoch: i32) -> ReplicaState {
    ReplicaState {
        leader,
        leader_epoch: epoch,
        replicas: vec![1, 2, 3],
        isr: vec![leader],
    }
}

/// The cluster with `__consumer_offsets` led as `leaders` says (partition i by leaders[i]);
/// none when empty.
fn snapshot(port: i32, leaders: &[(i32, i32)], id: uuid::Uuid) -> ClusterSnapshot {
    let topics = if leaders.is_empty() {
        Vec::new()
    } else {
        vec![TopicSnapshot {
            name: INTERNAL_OFFSETS_TOPIC.into(),
            id,
            configs: BTreeMap::new(),
            partitions: leaders
                .iter()
                .enumerate()
                .map(|(i, (leader, epoch))| (i as i32, replica(*leader, *epoch)))
                .collect(),
        }]
    };
    ClusterSnapshot {
        cluster_id: "zk-cluster-id".into(),
        controller_id: 3,
        brokers: (1..=3)
            .map(|n| BrokerNode {
                node_id: n,
                host: "127.0.0.1".into(),
                port: if n == ME { port } else { 1000 + n },
                rack: None,
                endpoints: vec![(
                    "PLAINTEXT".into(),
                    "127.0.0.1".into(),
                    if n == ME { port } else { 1000 + n },
                )],
            })
            .collect(),
        topics,
    }
}

/// A group id that lives in `partition` of `count`.
fn group_in(partition: i32, count: i32) -> String {
    (0..)
        .map(|i| format!("group-{i}"))
        .find(|g| partition_for(g, count) == partition)
        .unwrap()
}

fn find(c: &mut Client, group: &str, version: i16) -> (i16, i32, i32) {
    let request = FindCoordinatorRequest::default()
        .with_key(StrBytes::from_string(group.to_string()))
        .with_key_type(0);
    let r: FindCoordinatorResponse = c.call(ApiKey::FindCoordinator, version, &request);
    (r.error_code, r.node_id.0, r.port)
}

fn heartbeat(c: &mut Client, group: &str) -> i16 {
    let request = HeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_member_id(StrBytes::from_static_str("m"))
        .with_generation_id(1);
    let r: HeartbeatResponse = c.call(ApiKey::Heartbeat, 4, &request);
    r.error_code
}

fn join(c: &mut Client, group: &str) -> i16 {
    let request = JoinGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(Default::default())]);
    let r: JoinGroupResponse = c.call(ApiKey::JoinGroup, 5, &request);
    r.error_code
}

fn offset_fetch(c: &mut Client, group: &str, version: i16) -> i16 {
    let id = GroupId(StrBytes::from_string(group.to_string()));
    if version >= 8 {
        let request = OffsetFetchRequest::default()
            .with_groups(vec![OffsetFetchRequestGroup::default().with_group_id(id)]);
        let r: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, version, &request);
        return r.groups[0].error_code;
    }
    let request = OffsetFetchRequest::default().with_group_id(id);
    let r: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, version, &request);
    r.error_code
}

fn commit(c: &mut Client, group: &str) -> i16 {
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(INTERNAL_OFFSETS_TOPIC)))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(5)])]);
    let r: OffsetCommitResponse = c.call(ApiKey::OffsetCommit, 8, &request);
    r.topics[0].partitions[0].error_code
}

fn describe(c: &mut Client, group: &str) -> (i16, String) {
    let request = DescribeGroupsRequest::default()
        .with_groups(vec![GroupId(StrBytes::from_string(group.to_string()))]);
    let r: DescribeGroupsResponse = c.call(ApiKey::DescribeGroups, 5, &request);
    (r.groups[0].error_code, r.groups[0].group_state.to_string())
}

fn eventually(mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("condition never met");
}

#[test]
fn the_offsets_topic_is_asked_for_then_groups_go_to_its_leaders() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path());
    let state = broker.state().clone();
    let link = state.cluster.as_ref().unwrap();
    let port = i32::from(broker.addresses()[0].1.port());
    let mut c = Client::connect(broker.addresses()[0].1);
    let id = uuid::Uuid::new_v4();
    state.apply_snapshot(snapshot(port, &[], id)).unwrap();

    // No offsets topic yet: the controller side is asked for it (once), clients retry.
    assert_eq!(find(&mut c, "g", 3).0, codes::COORDINATOR_NOT_AVAILABLE);
    assert_eq!(find(&mut c, "g", 3).0, codes::COORDINATOR_NOT_AVAILABLE);
    let (_, op) = link.admin.next(Duration::from_secs(5)).unwrap();
    match op {
        AdminOp::CreateTopic {
            name,
            partitions,
            replication_factor,
            configs,
            ..
        } => {
            assert_eq!(name, INTERNAL_OFFSETS_TOPIC);
            assert_eq!(partitions, 50, "offsets.topic.num.partitions");
            assert_eq!(replication_factor, 3, "offsets.topic.replication.factor");
            assert_eq!(configs["cleanup.policy"], "compact");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        link.admin.next(Duration::from_millis(100)).is_none(),
        "one request for a burst"
    );
    assert_eq!(heartbeat(&mut c, "g"), codes::NOT_COORDINATOR);

    // Created: partition 0 led by this broker, partition 1 by broker 1.
    state
        .apply_snapshot(snapshot(port, &[(ME, 0), (1, 0)], id))
        .unwrap();
    let mine = group_in(0, 2);
    let theirs = group_in(1, 2);
    for version in [0, 1, 2, 3] {
        assert_eq!(find(&mut c, &mine, version), (codes::NONE, ME, port));
        assert_eq!(find(&mut c, &theirs, version), (codes::NONE, 1, 1001));
    }
    // v4: batched keys, each answered on its own.
    let request = FindCoordinatorRequest::default()
        .with_key_type(0)
        .with_coordinator_keys(vec![
            StrBytes::from_string(mine.clone()),
            StrBytes::from_string(theirs.clone()),
        ]);
    let r: FindCoordinatorResponse = c.call(ApiKey::FindCoordinator, 4, &request);
    let got: Vec<(String, i32, i32, i16)> = r
        .coordinators
        .iter()
        .map(|k| (k.key.to_string(), k.node_id.0, k.port, k.error_code))
        .collect();
    assert_eq!(
        got,
        vec![
            (mine.clone(), ME, port, codes::NONE),
            (theirs.clone(), 1, 1001, codes::NONE)
        ]
    );

    // This broker coordinates `mine` (once loaded), not `theirs`.
    eventually(|| offset_fetch(&mut c, &mine, 8) == codes::NONE);
    assert_eq!(join(&mut c, &theirs), codes::NOT_COORDINATOR);
    assert_eq!(heartbeat(&mut c, &theirs), codes::NOT_COORDINATOR);
    assert_eq!(offset_fetch(&mut c, &theirs, 8), codes::NOT_COORDINATOR);
    assert_eq!(offset_fetch(&mut c, &theirs, 7), codes::NOT_COORDINATOR);
    assert_eq!(commit(&mut c, &theirs), codes::NOT_COORDINATOR);
    assert_eq!(describe(&mut c, &theirs).0, codes::NOT_COORDINATOR);
    assert_eq!(commit(&mut c, &mine), codes::NONE);
    assert_eq!(describe(&mut c, &mine), (codes::NONE, "Empty".to_string()));

    // Leadership of partition 0 moves to broker 3: `mine` is not this broker's any more.
    state
        .apply_snapshot(snapshot(port, &[(3, 1), (1, 0)], id))
        .unwrap();
    assert_eq!(find(&mut c, &mine, 3), (codes::NONE, 3, 1003));
    assert_eq!(offset_fetch(&mut c, &mine, 8), codes::NOT_COORDINATOR);
    assert_eq!(heartbeat(&mut c, &mine), codes::NOT_COORDINATOR);
    // A leader whose broker is not alive: no coordinator to name.
    let mut gone = snapshot(port, &[(4, 2), (1, 0)], id);
    gone.brokers.retain(|b| b.node_id != 4);
    state.apply_snapshot(gone).unwrap();
    assert_eq!(find(&mut c, &mine, 3).0, codes::COORDINATOR_NOT_AVAILABLE);
}
