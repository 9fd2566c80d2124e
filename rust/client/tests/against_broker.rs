//! The client against a real broker on a loopback port: negotiation, Metadata, ListOffsets,
//! Produce, Fetch and InitProducerId, bounded frames and unreachable brokers.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::VersionRange;
use kafkalite_broker::{Broker, BrokerConfig};
use kafkalite_client::{
    Address, BlockingClient, Client, ClientConfig, Connection, Error, EARLIEST, LATEST,
    READ_UNCOMMITTED,
};
use kafkalite_core::error_codes;
use kafkalite_core::records::{
    decode_records, encode_batch, encode_producer_batch, BatchProducer, Compression, RecordInput,
};

struct TestBroker {
    broker: Broker,
    _dir: tempfile::TempDir,
}

impl TestBroker {
    fn start(topics: &[(&str, i32)]) -> TestBroker {
        let dir = tempfile::tempdir().unwrap();
        let pairs: BTreeMap<String, String> = [
            ("listeners", "PLAINTEXT://127.0.0.1:0".to_string()),
            ("log.dirs", dir.path().display().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let broker = Broker::start(BrokerConfig::from_pairs(&pairs).unwrap(), 2).unwrap();
        for (name, partitions) in topics {
            broker
                .state()
                .create_topic(name, *partitions, BTreeMap::new(), false)
                .unwrap();
        }
        TestBroker { broker, _dir: dir }
    }

    fn bootstrap(&self) -> String {
        self.broker.addresses()[0].1.to_string()
    }
}

/// `count` records valued `prefix-i`, stamped `timestamp`.
fn records(prefix: &str, count: usize, timestamp: i64) -> Vec<RecordInput> {
    (0..count)
        .map(|i| RecordInput {
            timestamp,
            key: None,
            value: Some(format!("{prefix}-{i}").into_bytes()),
            headers: Vec::new(),
        })
        .collect()
}

/// One batch of `count` records valued `prefix-i`, stamped `timestamp`.
fn batch(prefix: &str, count: usize, timestamp: i64) -> Bytes {
    let records = records(prefix, count, timestamp);
    Bytes::from(encode_batch(&records, Compression::None, 0).unwrap())
}

fn values(records: &[u8]) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    let mut rest = records;
    while rest.len() >= 12 {
        let len = i32::from_be_bytes(rest[8..12].try_into().unwrap()) as usize + 12;
        if rest.len() < len {
            break;
        }
        for r in decode_records(&rest[..len]).unwrap() {
            out.push((r.offset, String::from_utf8(r.value.unwrap()).unwrap()));
        }
        rest = &rest[len..];
    }
    out
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn negotiation_picks_the_highest_version_both_sides_support() {
    let broker = TestBroker::start(&[]);
    let address = Address {
        host: "127.0.0.1".into(),
        port: broker.broker.addresses()[0].1.port(),
    };
    runtime().block_on(async {
        let conn = Connection::open(&address, &ClientConfig::default())
            .await
            .unwrap();
        let wide = VersionRange { min: 0, max: 99 };
        // The broker's own ranges cap a client that speaks everything.
        let advertised = kafkalite_broker::handlers::supported_range(ApiKey::Fetch).unwrap();
        assert_eq!(conn.version(ApiKey::Fetch, wide).unwrap(), advertised.1);
        let narrow = VersionRange { min: 3, max: 5 };
        assert_eq!(conn.version(ApiKey::Produce, narrow).unwrap(), 5);
        let beyond = VersionRange { min: 90, max: 99 };
        let err = conn.version(ApiKey::Metadata, beyond).unwrap_err();
        assert!(matches!(err, Error::UnsupportedVersion { .. }), "{err}");
        assert!(err.to_string().contains(&address.to_string()), "{err}");
    });
}

#[test]
fn metadata_names_brokers_topics_leaders_and_unknown_topics() {
    let broker = TestBroker::start(&[("two", 2)]);
    let mut client = BlockingClient::new(&broker.bootstrap(), ClientConfig::default()).unwrap();
    let meta = client
        .metadata(Some(&["two".to_string(), "missing".to_string()]))
        .unwrap();
    assert_eq!(meta.brokers.len(), 1);
    let (&node, address) = meta.brokers.iter().next().unwrap();
    assert_eq!(address.to_string(), broker.bootstrap());
    let two = &meta.topics["two"];
    assert_eq!(two.error_code, error_codes::NONE);
    assert_eq!(
        two.partitions
            .iter()
            .map(|p| p.partition)
            .collect::<Vec<_>>(),
        [0, 1]
    );
    assert!(two
        .partitions
        .iter()
        .all(|p| p.leader == node && p.isr == [node]));
    assert_eq!(
        meta.topics["missing"].error_code,
        error_codes::UNKNOWN_TOPIC_OR_PARTITION
    );
    // Asking did not create it.
    let all = client.metadata(None).unwrap();
    assert!(all.topics.contains_key("two") && !all.topics.contains_key("missing"));
}

#[test]
fn produce_then_list_offsets_and_fetch_the_raw_batches() {
    let broker = TestBroker::start(&[("t", 1)]);
    let mut client = BlockingClient::new(&broker.bootstrap(), ClientConfig::default()).unwrap();
    let first = client
        .produce("t", 0, batch("a", 3, 1_000), 1, 5_000)
        .unwrap();
    assert_eq!(first.base_offset, 0);
    let second = client
        .produce("t", 0, batch("b", 2, 2_000), -1, 5_000)
        .unwrap();
    assert_eq!(second.base_offset, 3);
    let none = client
        .produce("t", 0, batch("c", 1, 3_000), 0, 5_000)
        .unwrap();
    assert_eq!(none.base_offset, -1, "acks=0 gets no answer");

    let tp = ("t".to_string(), 0);
    let ask = |ts| BTreeMap::from([(tp.clone(), ts)]);
    // The acks=0 batch may land a moment later; LATEST settles at 6.
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.list_offsets(&ask(LATEST)).unwrap()[&tp] != 6 {
        assert!(Instant::now() < deadline, "acks=0 batch never arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(client.list_offsets(&ask(EARLIEST)).unwrap()[&tp], 0);
    assert_eq!(client.list_offsets(&ask(1_500)).unwrap()[&tp], 3);
    assert_eq!(client.list_offsets(&ask(9_999)).unwrap()[&tp], -1);

    let fetched = client
        .fetch("t", 0, 0, 1 << 20, 0, READ_UNCOMMITTED)
        .unwrap();
    assert_eq!(
        (fetched.error_code, fetched.high_watermark),
        (error_codes::NONE, 6)
    );
    assert_eq!(fetched.log_start_offset, 0);
    let got = values(&fetched.records);
    assert_eq!(got.len(), 6);
    assert_eq!(got[0], (0, "a-0".into()));
    assert_eq!(got[4], (4, "b-1".into()));
    assert_eq!(got[5], (5, "c-0".into()));

    let out_of_range = client
        .fetch("t", 0, 99, 1 << 20, 0, READ_UNCOMMITTED)
        .unwrap();
    assert_eq!(out_of_range.error_code, error_codes::OFFSET_OUT_OF_RANGE);
    assert!(out_of_range.records.is_empty());
}

#[test]
fn an_idempotent_producer_gets_its_id_and_replays_are_answered_with_the_first_offsets() {
    let broker = TestBroker::start(&[("t", 1)]);
    let mut client = BlockingClient::new(&broker.bootstrap(), ClientConfig::default()).unwrap();
    let (id, epoch) = client.init_producer_id(None, 60_000).unwrap();
    assert!(id >= 0 && epoch == 0, "{id} {epoch}");
    let (other, _) = client.init_producer_id(None, 60_000).unwrap();
    assert_ne!(other, id, "every InitProducerId is a new producer");

    let stamped = |prefix, count, base_sequence| {
        let producer = BatchProducer {
            id,
            epoch,
            base_sequence,
        };
        let records = records(prefix, count, 1_000);
        Bytes::from(encode_producer_batch(&records, Compression::None, 0, producer).unwrap())
    };
    let first = stamped("a", 2, 0);
    assert_eq!(
        client
            .produce("t", 0, first.clone(), -1, 5_000)
            .unwrap()
            .base_offset,
        0
    );
    // The same batch again, as after a lost response: its first offsets, nothing appended.
    assert_eq!(
        client
            .produce("t", 0, first, -1, 5_000)
            .unwrap()
            .base_offset,
        0
    );
    let end = BTreeMap::from([(("t".to_string(), 0), LATEST)]);
    assert_eq!(client.list_offsets(&end).unwrap()[&("t".to_string(), 0)], 2);
    let next = client
        .produce("t", 0, stamped("b", 1, 2), -1, 5_000)
        .unwrap();
    assert_eq!(next.base_offset, 2);
    let gap = client
        .produce("t", 0, stamped("c", 1, 7), -1, 5_000)
        .unwrap_err();
    assert_eq!(
        gap.error_code(),
        Some(error_codes::OUT_OF_ORDER_SEQUENCE_NUMBER),
        "{gap}"
    );

    // A transactional id gets its own producer; a timeout over
    // transaction.max.timeout.ms is refused, naming the request.
    let (txn_pid, txn_epoch) = client.init_producer_id(Some("txn"), 60_000).unwrap();
    assert!(txn_pid >= 0 && txn_epoch == 0);
    let refused = client.init_producer_id(Some("txn"), 1_000_000).unwrap_err();
    assert_eq!(
        refused.error_code(),
        Some(error_codes::INVALID_TRANSACTION_TIMEOUT),
        "{refused}"
    );
    assert!(refused.to_string().contains("InitProducerId"), "{refused}");
}

#[test]
fn produce_batches_sends_one_request_and_answers_each_partition() {
    let broker = TestBroker::start(&[("t", 3)]);
    let mut client = BlockingClient::new(&broker.bootstrap(), ClientConfig::default()).unwrap();
    let answers = client
        .produce_batches(
            "t",
            vec![
                (2, batch("two", 2, 1_000)),
                (0, batch("zero", 3, 1_000)),
                (9, batch("nine", 1, 1_000)),
            ],
            -1,
            5_000,
        )
        .unwrap();
    let got: Vec<(i32, Option<i16>, i64)> = answers
        .iter()
        .map(|(p, r)| match r {
            Ok(produced) => (*p, None, produced.base_offset),
            Err(e) => (*p, e.error_code(), -1),
        })
        .collect();
    // One leader, so one request, answered in the order the partitions were sent.
    assert_eq!(
        got,
        [
            (2, None, 0),
            (0, None, 0),
            (9, Some(error_codes::UNKNOWN_TOPIC_OR_PARTITION), -1)
        ]
    );
    let again = client
        .produce_batches("t", vec![(0, batch("more", 1, 2_000))], 1, 5_000)
        .unwrap();
    assert_eq!(again[0].1.as_ref().unwrap().base_offset, 3);
    let fetched = client
        .fetch("t", 0, 0, 1 << 20, 0, READ_UNCOMMITTED)
        .unwrap();
    let values: Vec<String> = values(&fetched.records).into_iter().map(|v| v.1).collect();
    assert_eq!(values, ["zero-0", "zero-1", "zero-2", "more-0"]);
}

#[test]
fn a_fetch_at_the_end_waits_for_data_up_to_max_wait() {
    let broker = TestBroker::start(&[("t", 1)]);
    runtime().block_on(async {
        let mut client = Client::new(&broker.bootstrap(), ClientConfig::default()).unwrap();
        let started = Instant::now();
        let empty = client
            .fetch("t", 0, 0, 1 << 20, 300, READ_UNCOMMITTED)
            .await
            .unwrap();
        assert!(empty.records.is_empty() && empty.error_code == error_codes::NONE);
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "{:?}",
            started.elapsed()
        );
    });
}

#[test]
fn partition_errors_name_the_broker_and_code() {
    let broker = TestBroker::start(&[("t", 1)]);
    let mut client = BlockingClient::new(&broker.bootstrap(), ClientConfig::default()).unwrap();
    let err = client
        .produce("t", 7, batch("x", 1, 0), 1, 5_000)
        .unwrap_err();
    assert_eq!(
        err.error_code(),
        Some(error_codes::UNKNOWN_TOPIC_OR_PARTITION),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&broker.bootstrap()) && text.contains("UnknownTopicOrPartition"),
        "{text}"
    );
    let wanted = BTreeMap::from([(("t".to_string(), 5), LATEST)]);
    assert_eq!(
        client.list_offsets(&wanted).unwrap_err().error_code(),
        Some(error_codes::UNKNOWN_TOPIC_OR_PARTITION)
    );
}

#[test]
fn an_oversized_response_is_refused_before_allocation_and_the_connection_replaced() {
    let broker = TestBroker::start(&[("t", 1)]);
    let tight = ClientConfig {
        response_bytes_max: 4096,
        ..ClientConfig::default()
    };
    let mut client = BlockingClient::new(&broker.bootstrap(), tight).unwrap();
    client
        .produce("t", 0, batch(&"v".repeat(200), 40, 0), 1, 5_000)
        .unwrap();
    let err = client
        .fetch("t", 0, 0, 1 << 20, 0, READ_UNCOMMITTED)
        .unwrap_err();
    assert!(matches!(err, Error::Protocol { .. }), "{err}");
    assert!(err.to_string().contains("limit 4096"), "{err}");
    // A fresh connection serves the next (small) request.
    let wanted = BTreeMap::from([(("t".to_string(), 0), LATEST)]);
    assert_eq!(
        client.list_offsets(&wanted).unwrap()[&("t".to_string(), 0)],
        40
    );
}

#[test]
fn no_reachable_bootstrap_server_is_one_error_naming_them() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let servers = format!("127.0.0.1:{port}");
    let mut client = BlockingClient::new(&servers, ClientConfig::default()).unwrap();
    let err = client.metadata(None).unwrap_err();
    assert!(matches!(err, Error::NoBrokerReachable { .. }), "{err}");
    assert!(err.to_string().contains(&servers), "{err}");
    assert!(matches!(
        BlockingClient::new("nonsense", ClientConfig::default()),
        Err(Error::InvalidBootstrap(_))
    ));
}
