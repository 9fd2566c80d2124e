//! Cluster mode over real sockets, without ZooKeeper: the test plays the Python side,
//! pushing the controller's snapshots in (`apply_snapshot`) and answering the admin
//! requests the broker queues. Metadata and DescribeCluster answer for the whole cluster;
//! Produce, Fetch and ListOffsets refuse partitions this broker does not lead and stale
//! or future leader epochs; CreateTopics waits for the controller side's answer.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, CreateTopicsResponse, DescribeClusterRequest,
    DescribeClusterResponse, FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse,
    MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafkalite_broker::cluster::{
    AdminOp, BrokerNode, ClusterSnapshot, ReplicaState, TopicSnapshot,
};
use kafkalite_broker::net::Listener;
use kafkalite_broker::{Broker, BrokerConfig};
use kafkalite_core::error_codes as codes;
use kafkalite_core::records::{encode_batch, Compression, RecordInput};

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

fn name(t: &str) -> TopicName {
    TopicName(StrBytes::from_string(t.to_string()))
}

fn replica(leader: i32, epoch: i32) -> ReplicaState {
    ReplicaState {
        leader,
        leader_epoch: epoch,
        replicas: vec![1, 2, 3],
        isr: vec![1, 2, 3],
    }
}

/// Led by this broker with the ISR down to it: what it appends is committed at once.
fn led_alone(epoch: i32) -> ReplicaState {
    ReplicaState {
        isr: vec![ME],
        ..replica(ME, epoch)
    }
}

fn snapshot(port: i32, parts: Vec<(i32, ReplicaState)>, id: uuid::Uuid) -> ClusterSnapshot {
    ClusterSnapshot {
        cluster_id: "zk-cluster-id".into(),
        controller_id: 3,
        brokers: (1..=3)
            .map(|n| BrokerNode {
                node_id: n,
                host: "127.0.0.1".into(),
                port: if n == ME { port } else { 1000 + n },
                rack: Some(format!("rack-{n}")),
                endpoints: vec![(
                    "PLAINTEXT".into(),
                    "127.0.0.1".into(),
                    if n == ME { port } else { 1000 + n },
                )],
            })
            .collect(),
        topics: vec![TopicSnapshot {
            name: "t".into(),
            id,
            configs: BTreeMap::new(),
            partitions: parts,
        }],
    }
}

fn batch() -> Vec<u8> {
    let record = RecordInput {
        timestamp: 1,
        key: None,
        value: Some(b"v".to_vec()),
        headers: Vec::new(),
    };
    encode_batch(&[record], Compression::None, 0).unwrap()
}

fn produce(c: &mut Client, partition: i32) -> i16 {
    let request = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name("t"))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(Bytes::from(batch())))])]);
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &request);
    r.responses[0].partition_responses[0].error_code
}

fn fetch(c: &mut Client, partition: i32, epoch: i32) -> (i16, i64) {
    fetch_at(c, 11, partition, epoch)
}

fn fetch_at(c: &mut Client, version: i16, partition: i32, epoch: i32) -> (i16, i64) {
    let request = FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name("t"))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(partition)
                .with_current_leader_epoch(epoch)
                .with_partition_max_bytes(1 << 20)])]);
    let r: FetchResponse = c.call(ApiKey::Fetch, version, &request);
    let p = &r.responses[0].partitions[0];
    (p.error_code, p.high_watermark)
}

fn list_offsets(c: &mut Client, partition: i32, epoch: i32) -> i16 {
    let request = ListOffsetsRequest::default()
        .with_replica_id((-1).into())
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name("t"))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(partition)
                .with_current_leader_epoch(epoch)
                .with_timestamp(-1)])]);
    let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, &request);
    r.topics[0].partitions[0].error_code
}

#[test]
fn a_cluster_broker_serves_only_what_it_leads_in_the_current_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path());
    let addr = broker.addresses()[0].1;
    let state = Arc::clone(broker.state());
    let mut c = Client::connect(addr);

    // No topics of its own, no controller known until the first snapshot.
    let m: MetadataResponse = c.call(
        ApiKey::Metadata,
        12,
        &MetadataRequest::default().with_topics(None),
    );
    assert!(m.topics.is_empty());
    assert_eq!(m.controller_id, BrokerId(-1));

    let id = uuid::Uuid::new_v4();
    let port = i32::from(addr.port());
    state
        .apply_snapshot(snapshot(
            port,
            vec![(0, led_alone(4)), (1, replica(1, 2))],
            id,
        ))
        .unwrap();
    let m: MetadataResponse = c.call(
        ApiKey::Metadata,
        12,
        &MetadataRequest::default().with_topics(None),
    );
    assert_eq!(m.controller_id, BrokerId(3));
    assert_eq!(m.cluster_id.as_deref(), Some("zk-cluster-id"));
    assert_eq!(m.brokers.len(), 3);
    assert_eq!(m.brokers[0].rack.as_deref(), Some("rack-1"));
    let t = &m.topics[0];
    assert_eq!(t.topic_id, id);
    let p: Vec<(i32, i32, i32)> = t
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.leader_id.0, p.leader_epoch))
        .collect();
    assert_eq!(p, [(0, ME, 4), (1, 1, 2)]);
    assert_eq!(t.partitions[1].isr_nodes.len(), 3);
    assert_eq!(t.partitions[0].isr_nodes.len(), 1);
    let d: DescribeClusterResponse = c.call(
        ApiKey::DescribeCluster,
        0,
        &DescribeClusterRequest::default(),
    );
    assert_eq!((d.brokers.len(), d.controller_id), (3, BrokerId(3)));

    // The leader takes writes and, alone in the ISR, commits them; others refuse.
    assert_eq!(produce(&mut c, 0), codes::NONE);
    assert_eq!(produce(&mut c, 1), codes::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(fetch(&mut c, 0, 4), (codes::NONE, 1));
    assert_eq!(fetch(&mut c, 0, -1).0, codes::NONE);
    assert_eq!(fetch(&mut c, 0, 3).0, codes::FENCED_LEADER_EPOCH);
    assert_eq!(fetch(&mut c, 0, 5).0, codes::UNKNOWN_LEADER_EPOCH);
    // A follower serves a consumer's Fetch v11+ (KIP-392: its leader has not sent it
    // anything yet), older versions only the leader.
    assert_eq!(fetch(&mut c, 1, 2), (codes::NONE, 0));
    assert_eq!(fetch_at(&mut c, 10, 1, 2).0, codes::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(list_offsets(&mut c, 0, 4), codes::NONE);
    assert_eq!(list_offsets(&mut c, 0, 3), codes::FENCED_LEADER_EPOCH);
    assert_eq!(list_offsets(&mut c, 1, -1), codes::NOT_LEADER_OR_FOLLOWER);

    // Leadership moves: the old epoch is fenced, the new leader's is served.
    state
        .apply_snapshot(snapshot(
            port,
            vec![(0, replica(1, 5)), (1, led_alone(3))],
            id,
        ))
        .unwrap();
    assert_eq!(produce(&mut c, 0), codes::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(fetch(&mut c, 0, 4).0, codes::FENCED_LEADER_EPOCH);
    assert_eq!(produce(&mut c, 1), codes::NONE);
    assert_eq!(fetch(&mut c, 1, 3), (codes::NONE, 1));
}

#[test]
fn create_topics_waits_for_the_controller_side() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path());
    let state = Arc::clone(broker.state());
    let port = i32::from(broker.addresses()[0].1.port());
    let id = uuid::Uuid::new_v4();
    // The controller side: refuse "taken", create "t" by pushing it in a snapshot.
    let controller = std::thread::spawn(move || {
        let link = state.cluster.as_ref().unwrap();
        for _ in 0..2 {
            let (req, op) = link.admin.next(Duration::from_secs(10)).unwrap();
            match op {
                AdminOp::CreateTopic {
                    name,
                    partitions,
                    replication_factor,
                    ..
                } if name == "t" => {
                    assert_eq!((partitions, replication_factor), (2, 3));
                    let parts = vec![(0, replica(ME, 0)), (1, replica(1, 0))];
                    state.apply_snapshot(snapshot(port, parts, id)).unwrap();
                    link.admin.complete(req, codes::NONE, String::new());
                }
                other => {
                    assert!(
                        matches!(other, AdminOp::CreateTopic { ref name, .. } if name == "taken")
                    );
                    link.admin
                        .complete(req, codes::TOPIC_ALREADY_EXISTS, "taken".into());
                }
            }
        }
    });
    let mut c = Client::connect(broker.addresses()[0].1);
    let create = |c: &mut Client, topic: &str| {
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(name(topic))
                .with_num_partitions(2)
                .with_replication_factor(3)]);
        let r: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 7, &request);
        r.topics[0].clone()
    };
    let created = create(&mut c, "t");
    assert_eq!(created.error_code, codes::NONE);
    assert_eq!(created.topic_id, id);
    assert_eq!((created.num_partitions, created.replication_factor), (2, 3));
    let refused = create(&mut c, "taken");
    assert_eq!(refused.error_code, codes::TOPIC_ALREADY_EXISTS);
    assert_eq!(refused.error_message.as_deref(), Some("taken"));
    controller.join().unwrap();
}

#[test]
fn a_broker_opens_logs_only_for_its_own_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = start(dir.path());
    let addr = broker.addresses()[0].1;
    let state = Arc::clone(broker.state());
    let mut c = Client::connect(addr);
    let port = i32::from(addr.port());
    let id = uuid::Uuid::new_v4();
    let elsewhere = |epoch: i32| ReplicaState {
        leader: 1,
        leader_epoch: epoch,
        replicas: vec![1, 3],
        isr: vec![1, 3],
    };
    state
        .apply_snapshot(snapshot(
            port,
            vec![(0, led_alone(1)), (1, elsewhere(2))],
            id,
        ))
        .unwrap();
    assert!(dir.path().join("t-0").is_dir());
    assert!(
        !dir.path().join("t-1").exists(),
        "no log for a partition replicated on other brokers only"
    );
    // Metadata still describes it; reads and writes are sent to its leader.
    let m: MetadataResponse = c.call(
        ApiKey::Metadata,
        12,
        &MetadataRequest::default().with_topics(None),
    );
    let p1 = &m.topics[0].partitions[1];
    assert_eq!((p1.leader_id.0, p1.leader_epoch), (1, 2));
    assert_eq!(p1.replica_nodes, [BrokerId(1), BrokerId(3)]);
    assert_eq!(produce(&mut c, 1), codes::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(fetch(&mut c, 1, -1).0, codes::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(fetch(&mut c, 1, 1).0, codes::FENCED_LEADER_EPOCH);
    assert_eq!(list_offsets(&mut c, 1, -1), codes::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(fetch(&mut c, 7, -1).0, codes::UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(produce(&mut c, 0), codes::NONE);

    // A reassignment moves partition 0 away and partition 1 here: 0's log is closed and
    // its dir retired at once, 1's log opened.
    state
        .apply_snapshot(snapshot(
            port,
            vec![(0, elsewhere(2)), (1, led_alone(3))],
            id,
        ))
        .unwrap();
    assert!(!dir.path().join("t-0").exists());
    assert!(dir.path().join("t-1").is_dir());
    assert_eq!(produce(&mut c, 0), codes::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(produce(&mut c, 1), codes::NONE);
    assert_eq!(fetch(&mut c, 1, 3), (codes::NONE, 1));

    // Restarted after a crash that left a moved-away replica's dir behind: the first
    // snapshot retires it.
    drop(c);
    drop(state);
    broker.shutdown().unwrap();
    drop(broker);
    std::fs::create_dir_all(dir.path().join("t-0")).unwrap();
    let broker = start(dir.path());
    broker
        .state()
        .apply_snapshot(snapshot(
            port,
            vec![(0, elsewhere(2)), (1, led_alone(3))],
            id,
        ))
        .unwrap();
    assert!(!dir.path().join("t-0").exists());
    let p1 = broker.state().partition("t", 1).unwrap();
    assert_eq!(
        p1.log_end_offset(),
        1,
        "the hosted replica's data is recovered"
    );
    assert!(broker.state().partition("t", 0).is_none());
}
