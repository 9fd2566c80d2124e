//! Replication between two in-process cluster-mode brokers over real sockets; the test
//! plays the controller, pushing snapshots (`apply_snapshot`) into both. A follower copies
//! the leader's batches unchanged and the leader's high watermark follows it; a former
//! leader with an unreplicated tail truncates it by leader epoch (OffsetForLeaderEpoch)
//! before fetching from the new leader; Fetch from a replica id that is not a replica is
//! refused and OffsetForLeaderEpoch answers stale, future and unknown epochs as Kafka.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, FetchResponse, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse,
    ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafkalite_broker::cluster::{
    BrokerNode, ClusterSnapshot, Partition, ReplicaState, TopicSnapshot,
};
use kafkalite_broker::net::Listener;
use kafkalite_broker::{Broker, BrokerConfig};
use kafkalite_core::error_codes as codes;
use kafkalite_core::records::{encode_batch, BatchHeader, Compression, RecordInput};

use common::Client;

fn start(dir: &std::path::Path, node: i32) -> Broker {
    let mut raw = BTreeMap::new();
    raw.insert("replica.fetch.backoff.ms".to_string(), "50".to_string());
    raw.insert("replica.lag.time.max.ms".to_string(), "1000".to_string());
    let mut config = BrokerConfig::from_pairs(&raw).unwrap();
    config.node_id = node;
    config.listeners = vec![Listener::plaintext(
        "PLAINTEXT",
        "127.0.0.1:0".parse().unwrap(),
    )];
    config.log_dirs = vec![dir.to_path_buf()];
    config.zookeeper_connect = Some("127.0.0.1:2181".into());
    Broker::start(config, 2).unwrap()
}

fn port(b: &Broker) -> i32 {
    i32::from(b.addresses()[0].1.port())
}

fn snapshot(ports: &[(i32, i32)], id: uuid::Uuid, replica: ReplicaState) -> ClusterSnapshot {
    ClusterSnapshot {
        cluster_id: "zk".into(),
        controller_id: 1,
        brokers: ports
            .iter()
            .map(|&(n, port)| BrokerNode {
                node_id: n,
                host: "127.0.0.1".into(),
                port,
                rack: None,
                endpoints: vec![("PLAINTEXT".into(), "127.0.0.1".into(), port)],
            })
            .collect(),
        topics: vec![TopicSnapshot {
            name: "t".into(),
            id,
            configs: BTreeMap::new(),
            partitions: vec![(0, replica)],
        }],
    }
}

fn state(leader: i32, epoch: i32, isr: &[i32]) -> ReplicaState {
    ReplicaState {
        leader,
        leader_epoch: epoch,
        replicas: vec![1, 2],
        isr: isr.to_vec(),
    }
}

fn name() -> TopicName {
    TopicName(StrBytes::from_static_str("t"))
}

fn produce(c: &mut Client, value: &[u8], acks: i16) -> (i16, i64) {
    let record = RecordInput {
        timestamp: 1,
        key: None,
        value: Some(value.to_vec()),
        headers: Vec::new(),
    };
    let batch = encode_batch(&[record], Compression::None, 0).unwrap();
    let request = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name())
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(Bytes::from(batch)))])]);
    let r: ProduceResponse = c.call(ApiKey::Produce, 9, &request);
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

fn fetch_as(c: &mut Client, replica_id: i32, offset: i64) -> (i16, i64, Bytes) {
    let request = FetchRequest::default()
        .with_replica_id(replica_id.into())
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name())
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(1 << 20)])]);
    let r: FetchResponse = c.call(ApiKey::Fetch, 12, &request);
    let p = &r.responses[0].partitions[0];
    (
        p.error_code,
        p.high_watermark,
        p.records.clone().unwrap_or_default(),
    )
}

fn epoch_end(c: &mut Client, current: i32, epoch: i32) -> (i16, i32, i64) {
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id((-1).into())
        .with_topics(vec![OffsetForLeaderTopic::default()
            .with_topic(name())
            .with_partitions(vec![OffsetForLeaderPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(current)
                .with_leader_epoch(epoch)])]);
    let r: OffsetForLeaderEpochResponse = c.call(ApiKey::OffsetForLeaderEpoch, 4, &request);
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.leader_epoch, p.end_offset)
}

fn partition(b: &Broker) -> Arc<Partition> {
    b.state().partition("t", 0).unwrap()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The whole log as bytes, through a replica fetch (reads past the high watermark).
fn log_bytes(b: &Broker) -> Vec<u8> {
    let p = partition(b);
    let log = p.log.lock().unwrap();
    let end = log.log_end_offset();
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < end {
        let slice = log.read(offset, 1 << 20, None).unwrap().unwrap();
        let mut buf = vec![0u8; slice.len as usize];
        std::os::unix::fs::FileExt::read_exact_at(&*slice.file, &mut buf, slice.position).unwrap();
        let mut pos = 0;
        while pos < buf.len() {
            let h = BatchHeader::parse(&buf[pos..]).unwrap();
            offset = h.last_offset() + 1;
            pos += h.total_size();
        }
        out.extend_from_slice(&buf);
    }
    out
}

#[test]
fn a_follower_copies_the_leader_and_a_deposed_leader_truncates_its_divergent_tail() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut b1, b2) = (start(d1.path(), 1), start(d2.path(), 2));
    let ports = [(1, port(&b1)), (2, port(&b2))];
    let id = uuid::Uuid::new_v4();
    let (mut c1, mut c2) = (
        Client::connect(b1.addresses()[0].1),
        Client::connect(b2.addresses()[0].1),
    );

    // Epoch 1: 1 leads, 2 follows. acks=all is answered once 2 has the batch.
    for b in [&b1, &b2] {
        b.state()
            .apply_snapshot(snapshot(&ports, id, state(1, 1, &[1, 2])))
            .unwrap();
    }
    assert_eq!(produce(&mut c1, b"a", -1), (codes::NONE, 0));
    assert_eq!(produce(&mut c1, b"b", -1), (codes::NONE, 1));
    assert_eq!(partition(&b1).high_watermark(), 2);
    wait_until("the follower's copy", || log_bytes(&b2) == log_bytes(&b1));
    wait_until("the follower's high watermark", || {
        partition(&b2).high_watermark() == 2
    });
    // Batches carry the leader's epoch.
    let bytes = log_bytes(&b2);
    assert_eq!(
        BatchHeader::parse(&bytes).unwrap().partition_leader_epoch,
        1
    );
    assert_eq!(epoch_end(&mut c1, 1, 1), (codes::NONE, 1, 2));

    // 2 takes over in epoch 2 while 1 has not heard yet and appends a batch nobody else
    // has (acks=1): a divergent tail.
    b2.state()
        .apply_snapshot(snapshot(&ports, id, state(2, 2, &[2])))
        .unwrap();
    assert_eq!(produce(&mut c1, b"lost", 1), (codes::NONE, 2));
    assert_eq!(produce(&mut c2, b"c", 1), (codes::NONE, 2));
    assert_eq!(produce(&mut c2, b"d", 1), (codes::NONE, 3));
    assert_eq!(epoch_end(&mut c2, 2, 1), (codes::NONE, 1, 2));

    // 1 learns it follows: it truncates to where epoch 1 ends on 2, then copies 2's log.
    b1.state()
        .apply_snapshot(snapshot(&ports, id, state(2, 2, &[2])))
        .unwrap();
    wait_until("the deposed leader's copy", || {
        log_bytes(&b1) == log_bytes(&b2)
    });
    assert_eq!(partition(&b1).log_end_offset(), 4);
    // Its fetches put it back in sync: 2 proposes it for the ISR (to the controller
    // side, which this test plays: the proposal waits in the admin queue).
    let link = b2.state().cluster.as_ref().unwrap();
    let (proposal, op) = link
        .admin
        .next(Duration::from_secs(10))
        .expect("an ISR proposal");
    assert_eq!(
        format!("{op:?}"),
        format!(
            "{:?}",
            kafkalite_broker::cluster::AdminOp::AlterIsr {
                topic: "t".into(),
                partition: 0,
                leader: 2,
                leader_epoch: 2,
                isr: vec![1, 2],
                from_isr: vec![2],
            }
        )
    );

    // 1 counts for the high watermark until the proposal's outcome is known, however long
    // that takes and though 1 stops fetching: the controller side may have written it and
    // could then make 1 leader.
    b1.shutdown().unwrap();
    let acked = std::thread::spawn(move || produce(&mut c2, b"e", -1));
    // Past the time a proposal is resent and the lag time after which 1 would be dropped.
    std::thread::sleep(Duration::from_secs(3));
    assert!(!partition(&b2).advance_leader_high_watermark());
    assert_eq!(partition(&b2).high_watermark(), 4);
    assert!(!acked.is_finished(), "acknowledged without 1");
    // Refused (the ISR stays [2]): the controller side pushes the snapshot, then answers.
    b2.state()
        .apply_snapshot(snapshot(&ports, id, state(2, 2, &[2])))
        .unwrap();
    assert!(link.admin.complete(proposal, codes::NONE, String::new()));
    assert_eq!(acked.join().unwrap(), (codes::NONE, 4));
}

#[test]
fn fetches_from_non_replicas_and_unknown_epochs_get_kafkas_errors() {
    let dir = tempfile::tempdir().unwrap();
    let b1 = start(dir.path(), 1);
    // 2 is a replica of the partition (at an address nothing listens on); 3 is a broker
    // that is not; 99 is no broker at all.
    let ports = [(1, port(&b1)), (2, 1), (3, 2)];
    let id = uuid::Uuid::new_v4();
    b1.state()
        .apply_snapshot(snapshot(&ports, id, state(1, 5, &[1])))
        .unwrap();
    let mut c = Client::connect(b1.addresses()[0].1);
    assert_eq!(produce(&mut c, b"x", -1), (codes::NONE, 0));

    let (code, hw, records) = fetch_as(&mut c, 2, 0);
    assert_eq!((code, hw), (codes::NONE, 1));
    assert!(!records.is_empty());
    assert_eq!(fetch_as(&mut c, 3, 0).0, codes::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(fetch_as(&mut c, 99, 0).0, codes::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(fetch_as(&mut c, 1, 0).0, codes::NOT_LEADER_OR_FOLLOWER);
    // A consumer still reads.
    assert_eq!(fetch_as(&mut c, -1, 0).0, codes::NONE);

    assert_eq!(epoch_end(&mut c, 5, 5), (codes::NONE, 5, 1));
    assert_eq!(epoch_end(&mut c, -1, 5), (codes::NONE, 5, 1));
    // Epochs this leader never had: older than every epoch it knows (the requested epoch
    // ends where the first known one starts), or newer (undefined).
    assert_eq!(epoch_end(&mut c, 5, 2), (codes::NONE, 2, 0));
    assert_eq!(epoch_end(&mut c, -1, 9), (codes::NONE, -1, -1));
    // A stale or future current epoch is fenced or unknown.
    assert_eq!(epoch_end(&mut c, 4, 4).0, codes::FENCED_LEADER_EPOCH);
    assert_eq!(epoch_end(&mut c, 6, 5).0, codes::UNKNOWN_LEADER_EPOCH);
}
