//! Fetch from follower (KIP-392) between two in-process cluster-mode brokers over real
//! sockets, the test playing the controller (`apply_snapshot`): broker 1 in rack a leads
//! with Kafka's RackAwareReplicaSelector, broker 2 in rack b follows. A consumer's Fetch
//! v11+ from rack b is sent to 2 (no records, the leader's offsets); 2 serves it up to the
//! high watermark it knows, fences stale and future leader epochs, refuses older versions
//! and offsets past its log; a leader without the selector names no replica; bytes sent to
//! the consumer count as the follower's bytes out, not the leader's.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, FetchResponse, ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafkalite_broker::cluster::{
    BrokerNode, ClusterSnapshot, Partition, ReplicaState, TopicSnapshot,
};
use kafkalite_broker::net::Listener;
use kafkalite_broker::{Broker, BrokerConfig};
use kafkalite_core::error_codes as codes;
use kafkalite_core::records::{encode_batch, Compression, RecordInput};

use common::Client;

const SELECTOR: &str = "org.apache.kafka.common.replica.RackAwareReplicaSelector";
/// Topic `t`'s id (Fetch v13+ names topics by id).
const TOPIC_ID: uuid::Uuid = uuid::Uuid::from_u128(0x392);

fn start(dir: &std::path::Path, node: i32, settings: &[(&str, &str)]) -> Broker {
    let mut raw: BTreeMap<String, String> = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    raw.insert("replica.fetch.backoff.ms".into(), "50".into());
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

/// Broker 1 in rack a, broker 2 in rack b; topic `t` with one partition in `replica`.
fn snapshot(ports: [i32; 2], id: uuid::Uuid, replica: ReplicaState) -> ClusterSnapshot {
    ClusterSnapshot {
        cluster_id: "zk".into(),
        controller_id: 1,
        brokers: [(1, "a"), (2, "b")]
            .into_iter()
            .zip(ports)
            .map(|((n, rack), port)| BrokerNode {
                node_id: n,
                host: "127.0.0.1".into(),
                port,
                rack: Some(rack.into()),
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

fn replica(leader: i32, epoch: i32, replicas: &[i32]) -> ReplicaState {
    ReplicaState {
        leader,
        leader_epoch: epoch,
        replicas: replicas.to_vec(),
        isr: replicas.to_vec(),
    }
}

fn name() -> TopicName {
    TopicName(StrBytes::from_static_str("t"))
}

fn produce(c: &mut Client, acks: i16) -> (i16, i64) {
    let record = RecordInput {
        timestamp: 1,
        key: None,
        value: Some(b"value".to_vec()),
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

/// What a consumer's Fetch of partition 0 is answered.
#[derive(Debug)]
struct Answer {
    error: i16,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    preferred_read_replica: i32,
    records: Option<Bytes>,
    aborted_is_null: bool,
}

/// A consumer's Fetch (`replica_id` -1) at `version` from `rack`, in `current_epoch`.
fn consume(c: &mut Client, version: i16, rack: &str, offset: i64, current_epoch: i32) -> Answer {
    let request = FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_bytes(1 << 20)
        .with_rack_id(StrBytes::from_string(rack.to_string()))
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name())
            .with_topic_id(TOPIC_ID)
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(current_epoch)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(1 << 20)])]);
    let r: FetchResponse = c.call(ApiKey::Fetch, version, &request);
    let p = &r.responses[0].partitions[0];
    Answer {
        error: p.error_code,
        high_watermark: p.high_watermark,
        last_stable_offset: p.last_stable_offset,
        log_start_offset: p.log_start_offset,
        preferred_read_replica: p.preferred_read_replica.0,
        records: p.records.clone(),
        aborted_is_null: p.aborted_transactions.is_none(),
    }
}

fn records_len(a: &Answer) -> usize {
    a.records.as_ref().map_or(0, Bytes::len)
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

fn bytes_out(b: &Broker) -> u64 {
    b.state()
        .metrics
        .topics
        .all()
        .bytes_out
        .load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn a_consumer_reads_from_its_racks_follower_up_to_the_high_watermark_it_knows() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let b1 = start(
        d1.path(),
        1,
        &[("broker.rack", "a"), ("replica.selector.class", SELECTOR)],
    );
    // A long replica fetch wait: the follower learns a new high watermark only with its
    // next Fetch's answer, so it holds records it may not serve yet for that long.
    let b2 = start(
        d2.path(),
        2,
        &[("broker.rack", "b"), ("replica.fetch.wait.max.ms", "3000")],
    );
    let ports = [port(&b1), port(&b2)];
    let id = TOPIC_ID;
    let (mut c1, mut c2) = (
        Client::connect(b1.addresses()[0].1),
        Client::connect(b2.addresses()[0].1),
    );
    for b in [&b1, &b2] {
        b.state()
            .apply_snapshot(snapshot(ports, id, replica(1, 1, &[1, 2])))
            .unwrap();
    }
    for offset in 0..3 {
        assert_eq!(produce(&mut c1, -1), (codes::NONE, offset));
    }
    wait_until("the follower's high watermark", || {
        partition(&b2).high_watermark() == 3
    });

    // The leader sends rack b's consumer to 2: no records, its own offsets, null aborted
    // transactions, at every version with client metadata.
    for version in [11, 12, 16] {
        let a = consume(&mut c1, version, "b", 0, 1);
        assert_eq!(
            (a.error, a.preferred_read_replica, records_len(&a)),
            (codes::NONE, 2, 0),
            "v{version}: {a:?}"
        );
        assert_eq!(
            (a.high_watermark, a.last_stable_offset, a.log_start_offset),
            (3, 3, 0)
        );
        assert!(a.aborted_is_null);
    }
    assert_eq!(bytes_out(&b1), 0, "a redirect sends no records");
    // Its own rack, no rack, an unknown rack, or no client metadata (v10): read here.
    for (version, rack) in [(11, "a"), (11, ""), (11, "c"), (10, "b")] {
        let a = consume(&mut c1, version, rack, 0, 1);
        assert_eq!(
            (a.error, a.preferred_read_replica),
            (codes::NONE, -1),
            "v{version} {rack:?}"
        );
        assert!(records_len(&a) > 0);
    }
    let leader_out = bytes_out(&b1);

    // The follower serves rack b's consumer what is committed.
    let a = consume(&mut c2, 12, "b", 0, 1);
    assert_eq!((a.error, a.preferred_read_replica), (codes::NONE, -1));
    assert_eq!(a.high_watermark, 3);
    let served = records_len(&a);
    assert!(served > 0);
    assert_eq!(bytes_out(&b2), served as u64, "the follower's bytes out");
    assert_eq!(
        bytes_out(&b1),
        leader_out,
        "the leader's bytes out do not move"
    );
    // At its high watermark: nothing yet, no error; past its log end: out of range.
    let a = consume(&mut c2, 12, "b", 3, 1);
    assert_eq!((a.error, records_len(&a)), (codes::NONE, 0));
    let a = consume(&mut c2, 12, "b", 4, 1);
    assert_eq!(a.error, codes::OFFSET_OUT_OF_RANGE);
    // A leader epoch older than the one it knows is fenced, a newer one unknown.
    assert_eq!(
        consume(&mut c2, 12, "b", 0, 0).error,
        codes::FENCED_LEADER_EPOCH
    );
    assert_eq!(
        consume(&mut c2, 12, "b", 0, 2).error,
        codes::UNKNOWN_LEADER_EPOCH
    );
    // Without client metadata (v10) only the leader serves.
    assert_eq!(
        consume(&mut c2, 10, "", 0, 1).error,
        codes::NOT_LEADER_OR_FOLLOWER
    );

    // A record the follower has but does not know committed yet: not served.
    assert_eq!(produce(&mut c1, 1), (codes::NONE, 3));
    wait_until("the follower's copy", || {
        partition(&b2).log_end_offset() == 4
    });
    if partition(&b2).high_watermark() == 3 {
        let a = consume(&mut c2, 12, "b", 3, 1);
        assert_eq!(
            (a.error, records_len(&a), a.high_watermark),
            (codes::NONE, 0, 3)
        );
    }
    wait_until("the follower's next high watermark", || {
        partition(&b2).high_watermark() == 4
    });
    assert!(records_len(&consume(&mut c2, 12, "b", 3, 1)) > 0);

    // 2 leads in epoch 2 without a selector: rack a's consumer reads from it, and 1, now
    // the follower, serves whoever asks it.
    for b in [&b1, &b2] {
        b.state()
            .apply_snapshot(snapshot(ports, id, replica(2, 2, &[1, 2])))
            .unwrap();
    }
    let a = consume(&mut c2, 12, "a", 0, 2);
    assert_eq!((a.error, a.preferred_read_replica), (codes::NONE, -1));
    assert!(records_len(&a) > 0);
    wait_until("1 following 2", || partition(&b1).high_watermark() == 4);
    let a = consume(&mut c1, 12, "a", 0, 2);
    assert_eq!((a.error, a.preferred_read_replica), (codes::NONE, -1));
    assert!(records_len(&a) > 0);
    assert_eq!(
        consume(&mut c1, 12, "a", 0, 1).error,
        codes::FENCED_LEADER_EPOCH
    );

    // 1 is no replica any more: it serves no one.
    for b in [&b1, &b2] {
        b.state()
            .apply_snapshot(snapshot(ports, id, replica(2, 3, &[2])))
            .unwrap();
    }
    assert_eq!(
        consume(&mut c1, 12, "a", 0, -1).error,
        codes::NOT_LEADER_OR_FOLLOWER
    );
}
