//! The data path over real sockets: Produce, Fetch, ListOffsets, InitProducerId, with
//! requests encoded and responses decoded by the `kafka-protocol` crate.

use std::io::Read;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, FetchResponse, InitProducerIdRequest, InitProducerIdResponse,
    ListOffsetsRequest, ListOffsetsResponse, ProduceRequest, ProduceResponse, ProducerId,
    TopicName, TransactionalId,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafkalite_core::records::{decode_records, encode_batch, Compression, RecordInput};

mod common;
use common::{Client, TestBroker};

// ---------------------------------------------------------------------------------------
// Harness

fn start() -> TestBroker {
    TestBroker::start(&[])
}

impl TestBroker {
    fn log_end(&self, topic: &str, partition: i32) -> i64 {
        self.broker
            .state()
            .partition(topic, partition)
            .unwrap()
            .log
            .lock()
            .unwrap()
            .log_end_offset()
    }
}

impl Client {
    fn produce(
        &mut self,
        version: i16,
        acks: i16,
        topic: &str,
        partition: i32,
        records: Option<Vec<u8>>,
    ) -> ProduceResponse {
        self.call(
            ApiKey::Produce,
            version,
            &produce_request(acks, topic, partition, records),
        )
    }

    fn produce_one(
        &mut self,
        version: i16,
        topic: &str,
        partition: i32,
        batch: &[u8],
    ) -> (i16, i64) {
        let r = self.produce(version, -1, topic, partition, Some(batch.to_vec()));
        let p = &r.responses[0].partition_responses[0];
        (p.error_code, p.base_offset)
    }

    fn fetch(&mut self, version: i16, request: &FetchRequest) -> FetchResponse {
        self.call(ApiKey::Fetch, version, request)
    }

    fn list_offset(
        &mut self,
        version: i16,
        topic: &str,
        partition: i32,
        timestamp: i64,
    ) -> (i16, i64, i64) {
        let request = ListOffsetsRequest::default()
            .with_replica_id((-1).into())
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(partition)
                    .with_timestamp(timestamp)])]);
        let r: ListOffsetsResponse = self.call(ApiKey::ListOffsets, version, &request);
        let p = &r.topics[0].partitions[0];
        (p.error_code, p.offset, p.timestamp)
    }

    fn init_producer_id(
        &mut self,
        version: i16,
        transactional_id: Option<&str>,
        current: Option<(i64, i16)>,
    ) -> InitProducerIdResponse {
        let (id, epoch) = current.unwrap_or((-1, -1));
        let request = InitProducerIdRequest::default()
            .with_transactional_id(
                transactional_id.map(|t| TransactionalId(StrBytes::from_string(t.into()))),
            )
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(epoch);
        self.call(ApiKey::InitProducerId, version, &request)
    }
}

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

fn produce_request(
    acks: i16,
    topic: &str,
    partition: i32,
    records: Option<Vec<u8>>,
) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(records.map(Bytes::from))])])
}

fn fetch_request(
    parts: &[(&str, i32, i64, i32)],
    max_wait_ms: i32,
    min_bytes: i32,
    max_bytes: i32,
) -> FetchRequest {
    let mut topics: Vec<FetchTopic> = Vec::new();
    for &(topic, partition, offset, partition_max) in parts {
        let fp = FetchPartition::default()
            .with_partition(partition)
            .with_fetch_offset(offset)
            .with_partition_max_bytes(partition_max);
        match topics.iter_mut().find(|t| t.topic.as_str() == topic) {
            Some(t) => t.partitions.push(fp),
            None => topics.push(
                FetchTopic::default()
                    .with_topic(name(topic))
                    .with_partitions(vec![fp]),
            ),
        }
    }
    FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(min_bytes)
        .with_max_bytes(max_bytes)
        .with_topics(topics)
}

fn records(n: usize, tag: &str, ts: i64) -> Vec<RecordInput> {
    (0..n)
        .map(|i| RecordInput {
            timestamp: ts + i as i64,
            key: Some(format!("{tag}-k{i}").into_bytes()),
            value: Some(format!("{tag}-value-{i}").into_bytes()),
            headers: Vec::new(),
        })
        .collect()
}

fn batch(n: usize, tag: &str, ts: i64) -> Vec<u8> {
    encode_batch(&records(n, tag, ts), Compression::None, 0).unwrap()
}

/// A batch with producer id/epoch/base sequence set (and attributes OR-ed), CRC recomputed.
fn idempotent_batch(
    n: usize,
    tag: &str,
    pid: i64,
    epoch: i16,
    seq: i32,
    extra_attributes: i16,
) -> Vec<u8> {
    let mut b = batch(n, tag, now_ms());
    b[43..51].copy_from_slice(&pid.to_be_bytes());
    b[51..53].copy_from_slice(&epoch.to_be_bytes());
    b[53..57].copy_from_slice(&seq.to_be_bytes());
    let attributes = i16::from_be_bytes([b[21], b[22]]) | extra_attributes;
    b[21..23].copy_from_slice(&attributes.to_be_bytes());
    let crc = kafkalite_core::records::batch::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Every batch in `bytes`: (base offset, decoded records).
fn batches_in(mut bytes: &[u8]) -> Vec<(i64, Vec<kafkalite_core::records::Record>)> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let header = kafkalite_core::records::BatchHeader::parse(bytes).unwrap();
        let size = header.total_size();
        out.push((header.base_offset, decode_records(&bytes[..size]).unwrap()));
        bytes = &bytes[size..];
    }
    out
}

// ---------------------------------------------------------------------------------------
// Tests

#[test]
fn produce_with_every_ack_mode_then_fetch_and_list_offsets() {
    let b = start();
    b.create_topic("events", 2);
    let mut c = b.client();
    let t0 = 1_700_000_000_000;

    // acks=1 at v9 (flexible), acks=-1 at v3, acks=0 at v7 (no response at all).
    let r = c.produce(9, 1, "events", 0, Some(batch(3, "a", t0)));
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(
        (
            p.error_code,
            p.base_offset,
            p.log_append_time_ms,
            p.log_start_offset
        ),
        (0, 0, -1, 0)
    );
    let r = c.produce(3, -1, "events", 0, Some(batch(2, "b", t0 + 1000)));
    assert_eq!(r.responses[0].partition_responses[0].base_offset, 3);
    c.send_raw(
        ApiKey::Produce,
        7,
        &produce_request(0, "events", 0, Some(batch(4, "c", t0 + 2000))),
    );
    // The next answer on the connection is for the next request: acks=0 sent nothing.
    assert_eq!(c.list_offset(7, "events", 0, -1), (0, 9, -1));
    for v in 3..=9 {
        let (code, base) = c.produce_one(v, "events", 1, &batch(1, &format!("v{v}"), t0));
        assert_eq!((code, base), (0, i64::from(v - 3)), "produce v{v}");
    }

    // Fetch everything at every version: the records are the segment's bytes, unchanged.
    let segment = std::fs::read(
        b.dir
            .path()
            .join("events-0")
            .join("00000000000000000000.log"),
    )
    .unwrap();
    for v in 4..=12 {
        let r = c.fetch(
            v,
            &fetch_request(
                &[("events", 0, 0, 1 << 20), ("events", 1, 5, 1 << 20)],
                0,
                0,
                10 << 20,
            ),
        );
        let p0 = &r.responses[0].partitions[0];
        assert_eq!(
            (p0.error_code, p0.high_watermark, p0.last_stable_offset),
            (0, 9, 9),
            "v{v}"
        );
        if v >= 5 {
            assert_eq!(p0.log_start_offset, 0);
        }
        assert_eq!(p0.records.as_deref(), Some(&segment[..]), "fetch v{v}");
        let batches = batches_in(p0.records.as_ref().unwrap());
        assert_eq!(
            batches.iter().map(|(base, _)| *base).collect::<Vec<_>>(),
            vec![0, 3, 5]
        );
        assert_eq!(batches[2].1[3].value.as_deref(), Some(&b"c-value-3"[..]));
        assert_eq!(batches[2].1[3].offset, 8);
        let p1 = &r.responses[0].partitions[1];
        assert_eq!((p1.partition_index, p1.high_watermark), (1, 7));
        let b1 = batches_in(p1.records.as_ref().unwrap());
        assert_eq!(
            b1.iter().map(|(base, _)| *base).collect::<Vec<_>>(),
            vec![5, 6]
        );
        if v >= 7 {
            assert_eq!((r.error_code, r.session_id), (0, 0));
        }
    }

    // ListOffsets at v1..=7.
    for v in 1..=7 {
        assert_eq!(
            c.list_offset(v, "events", 0, -2),
            (0, 0, -1),
            "earliest v{v}"
        );
        assert_eq!(c.list_offset(v, "events", 0, -1), (0, 9, -1), "latest v{v}");
        assert_eq!(
            c.list_offset(v, "events", 0, t0 + 1000),
            (0, 3, t0 + 1000),
            "by time v{v}"
        );
        assert_eq!(
            c.list_offset(v, "events", 0, t0 + 1001),
            (0, 4, t0 + 1001),
            "inside a batch v{v}"
        );
        assert_eq!(
            c.list_offset(v, "events", 0, t0 + 5000),
            (0, -1, -1),
            "after the end v{v}"
        );
        assert_eq!(c.list_offset(v, "nope", 0, -1).0, 3);
        assert_eq!(c.list_offset(v, "events", 9, -1).0, 3);
    }
    assert_eq!(
        c.list_offset(7, "events", 0, -3),
        (0, 8, t0 + 2003),
        "max timestamp"
    );
    assert_eq!(c.list_offset(7, "events", 1, -3).0, 0);

    // Unknown topic on Produce: 3 (no auto-creation); unknown partition likewise.
    let (code, _) = c.produce_one(9, "missing", 0, &batch(1, "x", t0));
    assert_eq!(code, 3);
    assert!(b.broker.state().topic("missing").is_none());
    assert_eq!(c.produce_one(9, "events", 7, &batch(1, "x", t0)).0, 3);
}

#[test]
fn produce_rejects_bad_record_sets_like_kafka() {
    let b = start();
    b.create_topic("t", 1);
    let mut c = b.client();
    let r = c.produce(9, 1, "t", 0, None);
    assert_eq!(r.responses[0].partition_responses[0].error_code, 87);
    assert!(r.responses[0].partition_responses[0]
        .error_message
        .is_some());
    let r = c.produce(9, 1, "t", 0, Some(Vec::new()));
    assert_eq!(r.responses[0].partition_responses[0].error_code, 87);
    // Two batches in one partition's records.
    let mut two = batch(1, "a", 1);
    two.extend_from_slice(&batch(1, "b", 2));
    assert_eq!(c.produce_one(9, "t", 0, &two).0, 87);
    // Flipped payload byte: CRC mismatch.
    let mut bad = batch(2, "a", 1);
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    assert_eq!(c.produce_one(9, "t", 0, &bad).0, 2);
    // Truncated batch.
    let whole = batch(2, "a", 1);
    assert_eq!(c.produce_one(9, "t", 0, &whole[..whole.len() - 3]).0, 2);
    // Transactional and control batches.
    assert_eq!(
        c.produce_one(9, "t", 0, &idempotent_batch(1, "tx", 5, 0, 0, 0x10))
            .0,
        48
    );
    assert_eq!(
        c.produce_one(9, "t", 0, &idempotent_batch(1, "ctl", 5, 0, 0, 0x20))
            .0,
        87
    );
    // Over max.message.bytes.
    b.broker
        .state()
        .set_topic_configs(
            "t",
            [("max.message.bytes".to_string(), "100".to_string())].into(),
            false,
        )
        .unwrap();
    let big = encode_batch(
        &[RecordInput {
            timestamp: 1,
            key: None,
            value: Some(vec![7u8; 500]),
            headers: Vec::new(),
        }],
        Compression::None,
        0,
    )
    .unwrap();
    assert_eq!(c.produce_one(9, "t", 0, &big).0, 10);
    // Invalid acks.
    let r = c.produce(9, 2, "t", 0, Some(batch(1, "a", 1)));
    assert_eq!(r.responses[0].partition_responses[0].error_code, 21);
    assert_eq!(b.log_end("t", 0), 0, "nothing was appended");

    // A compacted topic refuses keyless records, naming them.
    b.broker
        .state()
        .create_topic(
            "compacted",
            1,
            [("cleanup.policy".to_string(), "compact".to_string())].into(),
            false,
        )
        .unwrap();
    let keyless = encode_batch(
        &[
            RecordInput {
                timestamp: 1,
                key: Some(b"k".to_vec()),
                value: Some(b"v".to_vec()),
                headers: Vec::new(),
            },
            RecordInput {
                timestamp: 1,
                key: None,
                value: Some(b"v".to_vec()),
                headers: Vec::new(),
            },
        ],
        Compression::None,
        0,
    )
    .unwrap();
    let r = c.produce(8, 1, "compacted", 0, Some(keyless));
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 87);
    assert_eq!(p.record_errors.len(), 1);
    assert_eq!(p.record_errors[0].batch_index, 1);
    assert_eq!(
        c.produce_one(8, "compacted", 0, &batch(2, "keyed", 1)),
        (0, 0)
    );

    // acks=0 with an error closes the connection, as Kafka does.
    c.send_raw(
        ApiKey::Produce,
        9,
        &produce_request(0, "missing", 0, Some(batch(1, "a", 1))),
    );
    let mut buf = [0u8; 4];
    let closed = matches!(c.stream.read(&mut buf), Ok(0) | Err(_));
    assert!(
        closed,
        "connection should be closed after a failed acks=0 produce"
    );
}

#[test]
fn idempotent_producer_dedups_fences_and_survives_restart() {
    let b = start();
    b.create_topic("idem", 1);
    let mut c = b.client();

    for v in 0..=4 {
        let r = c.init_producer_id(v, None, None);
        assert_eq!(r.error_code, 0, "v{v}");
        assert!(r.producer_id.0 >= 0);
        assert_eq!(r.producer_epoch, 0);
    }
    let r = c.init_producer_id(4, None, None);
    let (pid, epoch) = (r.producer_id.0, r.producer_epoch);
    // Ids are unique and persisted.
    let again = c.init_producer_id(4, None, None);
    assert_ne!(again.producer_id.0, pid);
    // A transactional id gets its own producer; initialising again bumps the epoch, and
    // the old instance (its producer id and old epoch) is fenced.
    let t0 = c.init_producer_id(4, Some("txn-1"), None);
    assert_eq!((t0.error_code, t0.producer_epoch), (0, 0));
    let t1 = c.init_producer_id(4, Some("txn-1"), None);
    assert_eq!((t1.producer_id, t1.producer_epoch), (t0.producer_id, 1));
    // A retry whose answer was lost (the epoch before the bump) gets the current one back.
    let retry = c.init_producer_id(4, Some("txn-1"), Some((t0.producer_id.0, 0)));
    assert_eq!((retry.error_code, retry.producer_epoch), (0, 1));
    let t2 = c.init_producer_id(4, Some("txn-1"), Some((t0.producer_id.0, 1)));
    assert_eq!((t2.error_code, t2.producer_epoch), (0, 2));
    let stale = c.init_producer_id(4, Some("txn-1"), Some((t0.producer_id.0, 0)));
    assert_eq!(stale.error_code, 90, "PRODUCER_FENCED");
    let stale = c.init_producer_id(3, Some("txn-1"), Some((t0.producer_id.0, 0)));
    assert_eq!(stale.error_code, 47, "INVALID_PRODUCER_EPOCH before v4");

    let first = idempotent_batch(3, "a", pid, epoch, 0, 0);
    assert_eq!(c.produce_one(9, "idem", 0, &first), (0, 0));
    let second = idempotent_batch(2, "b", pid, epoch, 3, 0);
    assert_eq!(c.produce_one(9, "idem", 0, &second), (0, 3));
    // Retries of either are acknowledged with the original offsets and not appended.
    assert_eq!(c.produce_one(9, "idem", 0, &first), (0, 0));
    assert_eq!(c.produce_one(7, "idem", 0, &second), (0, 3));
    assert_eq!(b.log_end("idem", 0), 5);
    // A gap in the sequence.
    let r = c.produce(
        9,
        -1,
        "idem",
        0,
        Some(idempotent_batch(1, "gap", pid, epoch, 9, 0)),
    );
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 45);
    // Kafka sends a message only with a rejected record (KIP-467), not with a sequence gap.
    assert_eq!(p.error_message, None);
    assert_eq!(b.log_end("idem", 0), 5);

    // A KIP-360 epoch bump keeps the id; the new epoch starts at sequence 0 and fences the old.
    let bumped = c.init_producer_id(4, None, Some((pid, epoch)));
    assert_eq!(
        (
            bumped.error_code,
            bumped.producer_id.0,
            bumped.producer_epoch
        ),
        (0, pid, epoch + 1)
    );
    assert_eq!(
        c.produce_one(
            9,
            "idem",
            0,
            &idempotent_batch(1, "e1", pid, epoch + 1, 5, 0)
        )
        .0,
        45
    );
    assert_eq!(
        c.produce_one(
            9,
            "idem",
            0,
            &idempotent_batch(1, "e1", pid, epoch + 1, 0, 0)
        ),
        (0, 5)
    );
    assert_eq!(
        c.produce_one(9, "idem", 0, &idempotent_batch(1, "old", pid, epoch, 5, 0))
            .0,
        47
    );
    // An unknown producer may start at any sequence.
    assert_eq!(
        c.produce_one(9, "idem", 0, &idempotent_batch(1, "u", 999_999, 0, 41, 0)),
        (0, 6)
    );

    // After a restart the state is rebuilt from the log: the last batch is still a duplicate.
    let last = idempotent_batch(2, "last", pid, epoch + 1, 1, 0);
    assert_eq!(c.produce_one(9, "idem", 0, &last), (0, 7));
    drop(c);
    let b = b.restart();
    let mut c = b.client();
    assert_eq!(c.produce_one(9, "idem", 0, &last), (0, 7));
    assert_eq!(b.log_end("idem", 0), 9);
    assert_eq!(
        c.produce_one(
            9,
            "idem",
            0,
            &idempotent_batch(1, "next", pid, epoch + 1, 3, 0)
        ),
        (0, 9)
    );
    assert_eq!(
        c.produce_one(9, "idem", 0, &idempotent_batch(1, "old", pid, epoch, 9, 0))
            .0,
        47
    );
    // The producer id counter survived too.
    let fresh = c.init_producer_id(4, None, None);
    assert!(fresh.producer_id.0 > again.producer_id.0);
}

#[test]
fn long_poll_waits_for_max_wait_or_data() {
    let b = start();
    b.create_topic("poll", 1);
    let mut c = b.client();

    // Nothing arrives: the answer comes after max_wait, empty.
    let started = Instant::now();
    let r = c.fetch(
        12,
        &fetch_request(&[("poll", 0, 0, 1 << 20)], 400, 1, 1 << 20),
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(350),
        "answered after {waited:?}"
    );
    assert!(waited < Duration::from_secs(5), "answered after {waited:?}");
    assert_eq!(
        r.responses[0].partitions[0].records.as_deref(),
        Some(&[][..])
    );

    // Data arrives while waiting: the answer comes early, with it.
    let addr = b.addr();
    let producer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let mut p = Client::connect(addr);
        p.produce_one(9, "poll", 0, &batch(2, "late", 1))
    });
    let started = Instant::now();
    let r = c.fetch(
        11,
        &fetch_request(&[("poll", 0, 0, 1 << 20)], 10_000, 1, 1 << 20),
    );
    let waited = started.elapsed();
    assert_eq!(producer.join().unwrap(), (0, 0));
    assert!(waited < Duration::from_secs(5), "answered after {waited:?}");
    let batches = batches_in(r.responses[0].partitions[0].records.as_ref().unwrap());
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].1.len(), 2);

    // min_bytes already satisfied: no wait.
    let started = Instant::now();
    c.fetch(
        12,
        &fetch_request(&[("poll", 0, 0, 1 << 20)], 10_000, 1, 1 << 20),
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    // An error answers at once too.
    let started = Instant::now();
    let r = c.fetch(
        12,
        &fetch_request(
            &[("poll", 0, 0, 1 << 20), ("nope", 0, 0, 1 << 20)],
            10_000,
            1 << 30,
            1 << 20,
        ),
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(r.responses[1].partitions[0].error_code, 3);
}

#[test]
fn fetch_returns_whole_batches_and_honours_limits() {
    let b = start();
    b.create_topic("f", 2);
    let mut c = b.client();
    let first = batch(5, "first", 1);
    assert_eq!(c.produce_one(9, "f", 0, &first), (0, 0));
    assert_eq!(c.produce_one(9, "f", 0, &batch(3, "second", 2)), (0, 5));
    assert_eq!(c.produce_one(9, "f", 1, &batch(3, "other", 3)), (0, 0));

    // An offset inside a batch returns the whole batch from its start.
    let r = c.fetch(12, &fetch_request(&[("f", 0, 2, 1)], 0, 0, 1 << 20));
    let got = r.responses[0].partitions[0].records.clone().unwrap();
    let batches = batches_in(&got);
    assert_eq!(
        batches.len(),
        1,
        "partition_max_bytes 1: just the first batch, whole"
    );
    assert_eq!(batches[0].0, 0);
    assert_eq!(batches[0].1.len(), 5);
    assert_eq!(
        &got[12..],
        &first[12..],
        "same bytes apart from the assigned base offset"
    );

    // At the log end: empty, no error. Past it or before the start: OFFSET_OUT_OF_RANGE.
    let r = c.fetch(12, &fetch_request(&[("f", 0, 8, 1 << 20)], 0, 0, 1 << 20));
    assert_eq!(r.responses[0].partitions[0].error_code, 0);
    assert_eq!(
        r.responses[0].partitions[0].records.as_deref(),
        Some(&[][..])
    );
    for offset in [9, -1] {
        let r = c.fetch(
            4,
            &fetch_request(&[("f", 0, offset, 1 << 20)], 0, 0, 1 << 20),
        );
        let p = &r.responses[0].partitions[0];
        // Kafka's out-of-range answer carries no offsets.
        assert_eq!((p.error_code, p.high_watermark), (1, -1), "offset {offset}");
    }

    // Response max_bytes (KIP-74): the first partition's batch always comes, whole; a later
    // partition whose first batch no longer fits is listed with empty records.
    let r = c.fetch(
        12,
        &fetch_request(&[("f", 0, 0, 1 << 20), ("f", 1, 0, 1 << 20)], 0, 0, 10),
    );
    let p0 = &r.responses[0].partitions[0];
    let p1 = &r.responses[0].partitions[1];
    assert_eq!(batches_in(p0.records.as_ref().unwrap()).len(), 1);
    assert_eq!(p1.records.as_deref(), Some(&[][..]));
    assert_eq!(p1.high_watermark, 3);
    // With room for everything, both partitions fill.
    let r = c.fetch(
        10,
        &fetch_request(&[("f", 0, 0, 1 << 20), ("f", 1, 0, 1 << 20)], 0, 0, 1 << 20),
    );
    assert_eq!(
        batches_in(r.responses[0].partitions[0].records.as_ref().unwrap()).len(),
        2
    );
    assert_eq!(
        batches_in(r.responses[0].partitions[1].records.as_ref().unwrap()).len(),
        1
    );

    // An incremental fetch cannot name a session of ours.
    let r = c.fetch(
        12,
        &fetch_request(&[("f", 0, 0, 1 << 20)], 0, 0, 1 << 20)
            .with_session_id(5)
            .with_session_epoch(3),
    );
    assert_eq!(r.error_code, 70);
    // READ_COMMITTED: same data, empty aborted list.
    let r = c.fetch(
        12,
        &fetch_request(&[("f", 0, 0, 1 << 20)], 0, 0, 1 << 20).with_isolation_level(1),
    );
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.aborted_transactions.as_ref().map(Vec::len), Some(0));
    assert_eq!(p.last_stable_offset, 8);
}

#[test]
fn large_fetch_arrives_intact_through_sendfile() {
    let b = start();
    b.create_topic("big", 1);
    let mut c = b.client();
    // ~16 MiB in 1 MiB-ish batches: more than a socket buffer, so sendfile hits EAGAIN.
    let mut expected_offsets = Vec::new();
    for i in 0..16u8 {
        let value: Vec<u8> = (0..1_000_000u32).map(|j| (j as u8) ^ i).collect();
        let batch = encode_batch(
            &[RecordInput {
                timestamp: i64::from(i),
                key: Some(vec![i]),
                value: Some(value),
                headers: Vec::new(),
            }],
            Compression::None,
            0,
        )
        .unwrap();
        assert_eq!(c.produce_one(9, "big", 0, &batch), (0, i64::from(i)));
        expected_offsets.push(i64::from(i));
    }
    let segment =
        std::fs::read(b.dir.path().join("big-0").join("00000000000000000000.log")).unwrap();
    for version in [4, 11, 12] {
        let id = c.send_raw(
            ApiKey::Fetch,
            version,
            &fetch_request(&[("big", 0, 0, 64 << 20)], 0, 0, 64 << 20),
        );
        // Read slowly at first so the broker's socket buffer fills.
        std::thread::sleep(Duration::from_millis(100));
        let mut body = c.receive(ApiKey::Fetch, version, id);
        let r = FetchResponse::decode(&mut body, version).unwrap();
        let records = r.responses[0].partitions[0].records.as_ref().unwrap();
        assert_eq!(records.len(), segment.len(), "v{version}");
        assert!(
            records[..] == segment[..],
            "v{version}: bytes differ from the segment"
        );
        let offsets: Vec<i64> = batches_in(records).iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, expected_offsets);
    }
}

#[test]
fn produce_records_epoch_zero_in_the_leader_epoch_checkpoint() {
    let b = start();
    b.create_topic("epochs", 1);
    let checkpoint = b
        .dir
        .path()
        .join("epochs-0")
        .join("leader-epoch-checkpoint");
    assert!(!checkpoint.exists(), "nothing appended yet");
    let mut c = b.client();
    let t0 = now_ms();
    assert_eq!(c.produce_one(9, "epochs", 0, &batch(3, "a", t0)), (0, 0));
    assert_eq!(c.produce_one(9, "epochs", 0, &batch(2, "b", t0)), (0, 3));
    // Kafka's text: version 0, one entry, epoch 0 starting at offset 0.
    assert_eq!(std::fs::read_to_string(&checkpoint).unwrap(), "0\n1\n0 0\n");
    // A single replica: the high watermark is the log end, in Fetch and ListOffsets.
    let partition = b.broker.state().partition("epochs", 0).unwrap();
    assert_eq!(partition.high_watermark(), 5);
    assert_eq!(partition.end_offset_for(0), (0, 5));
    let r = c.fetch(
        12,
        &fetch_request(&[("epochs", 0, 0, 1 << 20)], 0, 0, 1 << 20),
    );
    assert_eq!(r.responses[0].partitions[0].high_watermark, 5);
    assert_eq!(c.list_offset(7, "epochs", 0, -1), (0, 5, -1));
    let b = b.restart();
    assert_eq!(std::fs::read_to_string(&checkpoint).unwrap(), "0\n1\n0 0\n");
    let partition = b.broker.state().partition("epochs", 0).unwrap();
    assert_eq!(partition.high_watermark(), 5);
}
