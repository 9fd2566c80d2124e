//! The transaction protocol over real sockets: FindCoordinator(key type 1), InitProducerId,
//! AddPartitionsToTxn (client and broker forms), EndTxn, transactional Produce, Fetch
//! read_committed (LSO, aborted transactions), DescribeTransactions, and a restart that
//! rebuilds the coordinator from `__transaction_state` and the partitions' `.txnindex`.

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, DescribeTransactionsRequest,
    DescribeTransactionsResponse, EndTxnRequest, EndTxnResponse, FetchRequest, FetchResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, InitProducerIdRequest, InitProducerIdResponse,
    ProduceRequest, ProduceResponse, ProducerId, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafkalite_core::records::batch::{crc32c, ATTR_TRANSACTIONAL};
use kafkalite_core::records::{encode_producer_batch, BatchProducer, Compression, RecordInput};

mod common;
use common::{Client, TestBroker};

const SETTINGS: &[(&str, &str)] = &[("transaction.state.log.num.partitions", "3")];

fn tid(s: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(s.into()))
}

fn topic(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.into()))
}

fn txn_batch(pid: i64, epoch: i16, seq: i32, n: usize) -> Vec<u8> {
    let records: Vec<RecordInput> = (0..n)
        .map(|i| RecordInput {
            timestamp: 1_000,
            key: Some(b"k".to_vec()),
            value: Some(vec![i as u8; 4]),
            headers: Vec::new(),
        })
        .collect();
    let producer = BatchProducer {
        id: pid,
        epoch,
        base_sequence: seq,
    };
    let mut b = encode_producer_batch(&records, Compression::None, 0, producer).unwrap();
    b[21..23].copy_from_slice(&ATTR_TRANSACTIONAL.to_be_bytes());
    let crc = crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

impl Client {
    fn init_txn(&mut self, id: &str) -> (i16, i64, i16) {
        let r: InitProducerIdResponse = self.call(
            ApiKey::InitProducerId,
            4,
            &InitProducerIdRequest::default()
                .with_transactional_id(Some(tid(id)))
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        );
        (r.error_code, r.producer_id.0, r.producer_epoch)
    }

    fn add_partition(&mut self, version: i16, id: &str, pid: i64, epoch: i16, t: &str) -> i16 {
        let r: AddPartitionsToTxnResponse = self.call(
            ApiKey::AddPartitionsToTxn,
            version,
            &AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(tid(id))
                .with_v3_and_below_producer_id(ProducerId(pid))
                .with_v3_and_below_producer_epoch(epoch)
                .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
                    .with_name(topic(t))
                    .with_partitions(vec![0])]),
        );
        r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
    }

    fn end_txn(&mut self, id: &str, pid: i64, epoch: i16, commit: bool) -> i16 {
        let r: EndTxnResponse = self.call(
            ApiKey::EndTxn,
            3,
            &EndTxnRequest::default()
                .with_transactional_id(tid(id))
                .with_producer_id(ProducerId(pid))
                .with_producer_epoch(epoch)
                .with_committed(commit),
        );
        r.error_code
    }

    fn produce_batch(&mut self, t: &str, batch: Vec<u8>) -> (i16, i64) {
        self.produce_at(9, t, batch)
    }

    fn produce_at(&mut self, version: i16, t: &str, batch: Vec<u8>) -> (i16, i64) {
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(topic(t))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(batch.into()))])]);
        let r: ProduceResponse = self.call(ApiKey::Produce, version, &request);
        let p = &r.responses[0].partition_responses[0];
        (p.error_code, p.base_offset)
    }

    /// (high watermark, last stable offset, aborted transactions) read_committed.
    fn fetch_committed(&mut self, t: &str) -> (i64, i64, Vec<(i64, i64)>) {
        let request = FetchRequest::default()
            .with_replica_id((-1).into())
            .with_max_wait_ms(0)
            .with_max_bytes(1 << 20)
            .with_isolation_level(1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic(t))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(1 << 20)])]);
        let r: FetchResponse = self.call(ApiKey::Fetch, 11, &request);
        let p = &r.responses[0].partitions[0];
        let aborted = p
            .aborted_transactions
            .iter()
            .flatten()
            .map(|a| (a.producer_id.0, a.first_offset))
            .collect();
        (p.high_watermark, p.last_stable_offset, aborted)
    }

    fn describe_txn(&mut self, id: &str) -> (i16, String, i64) {
        let r: DescribeTransactionsResponse = self.call(
            ApiKey::DescribeTransactions,
            0,
            &DescribeTransactionsRequest::default().with_transactional_ids(vec![tid(id)]),
        );
        let s = &r.transaction_states[0];
        (
            s.error_code,
            s.transaction_state.to_string(),
            s.producer_id.0,
        )
    }
}

#[test]
fn transaction_lifecycle_errors_and_recovery() {
    let b = TestBroker::start(SETTINGS);
    b.create_topic("t", 1);
    let mut c = b.client();

    let found: FindCoordinatorResponse = c.call(
        ApiKey::FindCoordinator,
        3,
        &FindCoordinatorRequest::default()
            .with_key(StrBytes::from_static_str("tx"))
            .with_key_type(1),
    );
    assert_eq!(
        (found.error_code, found.port),
        (0, i32::from(b.addr().port()))
    );

    // Unknown id: INVALID_PRODUCER_ID_MAPPING; nothing open: INVALID_TXN_STATE.
    assert_eq!(c.end_txn("nobody", 5, 0, true), 49);
    let (code, pid, epoch) = c.init_txn("tx");
    assert_eq!((code, epoch), (0, 0));
    assert_eq!(c.end_txn("tx", pid, epoch, true), 48);
    // A transactional batch before AddPartitionsToTxn: INVALID_TXN_STATE, nothing written.
    assert_eq!(c.produce_batch("t", txn_batch(pid, epoch, 0, 2)).0, 48);

    // Unknown partition: UNKNOWN_TOPIC_OR_PARTITION; stale epoch: PRODUCER_FENCED (v2+),
    // INVALID_PRODUCER_EPOCH before.
    assert_eq!(c.add_partition(3, "tx", pid, epoch, "missing"), 3);
    assert_eq!(c.add_partition(3, "tx", pid, epoch + 1, "t"), 90);
    assert_eq!(c.add_partition(1, "tx", pid, epoch + 1, "t"), 47);
    assert_eq!(c.add_partition(3, "tx", pid, epoch, "t"), 0);

    // The broker form (v4+) verifies without adding.
    let verify_request = AddPartitionsToTxnRequest::default().with_transactions(vec![
        AddPartitionsToTxnTransaction::default()
            .with_transactional_id(tid("tx"))
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
            .with_verify_only(true)
            .with_topics(vec![AddPartitionsToTxnTopic::default()
                .with_name(topic("t"))
                .with_partitions(vec![0])]),
    ]);
    let verify: AddPartitionsToTxnResponse = c.call(ApiKey::AddPartitionsToTxn, 4, &verify_request);
    let result = &verify.results_by_transaction[0].topic_results[0].results_by_partition[0];
    assert_eq!(result.partition_error_code, 0);

    assert_eq!(c.produce_batch("t", txn_batch(pid, epoch, 0, 3)), (0, 0));
    assert_eq!(c.fetch_committed("t"), (3, 0, vec![]));
    assert_eq!(c.end_txn("tx", pid, epoch, false), 0);
    // Data 0..=2, ABORT marker at 3: stable, and the abort is listed for the fetcher.
    assert_eq!(c.fetch_committed("t"), (4, 4, vec![(pid, 0)]));
    // The partition left with the transaction: verifying it is TRANSACTION_ABORTABLE.
    let verify: AddPartitionsToTxnResponse = c.call(ApiKey::AddPartitionsToTxn, 4, &verify_request);
    let result = &verify.results_by_transaction[0].topic_results[0].results_by_partition[0];
    assert_eq!(result.partition_error_code, 120);
    // A retried EndTxn is answered again; the opposite outcome is refused.
    assert_eq!(c.end_txn("tx", pid, epoch, false), 0);
    assert_eq!(c.end_txn("tx", pid, epoch, true), 48);

    // A committed transaction after it.
    assert_eq!(c.add_partition(3, "tx", pid, epoch, "t"), 0);
    assert_eq!(c.produce_batch("t", txn_batch(pid, epoch, 3, 1)), (0, 4));
    assert_eq!(c.end_txn("tx", pid, epoch, true), 0);
    assert_eq!(c.fetch_committed("t"), (6, 6, vec![(pid, 0)]));
    assert_eq!(c.describe_txn("tx"), (0, "CompleteCommit".into(), pid));
    assert_eq!(c.describe_txn("unknown").0, 105);

    // An open transaction survives the restart (LSO held), the abort stays indexed, the
    // coordinator state comes back from __transaction_state.
    assert_eq!(c.add_partition(3, "tx", pid, epoch, "t"), 0);
    assert_eq!(c.produce_batch("t", txn_batch(pid, epoch, 4, 1)), (0, 6));
    drop(c);
    let b = b.restart();
    let mut c = b.client();
    assert_eq!(c.fetch_committed("t"), (7, 6, vec![(pid, 0)]));
    assert_eq!(c.describe_txn("tx"), (0, "Ongoing".into(), pid));
    assert!(b
        .dir
        .path()
        .join("t-0/00000000000000000000.txnindex")
        .exists());
    // Re-initialising fences the open transaction: aborted with the bumped epoch.
    let (code, pid2, epoch2) = c.init_txn("tx");
    assert_eq!((code, pid2, epoch2), (0, pid, epoch + 1));
    assert_eq!(c.fetch_committed("t"), (8, 8, vec![(pid, 0), (pid, 6)]));
    // The zombie's batches are refused by the partition.
    assert_eq!(c.produce_batch("t", txn_batch(pid, epoch, 5, 1)).0, 47);
}

#[test]
fn transaction_version_2_bumps_the_epoch_per_transaction() {
    let b = TestBroker::start(SETTINGS);
    b.create_topic("t", 1);
    let mut c = b.client();
    let (_, pid, epoch) = c.init_txn("tv2");
    // Produce v11 before the partition joined: TRANSACTION_ABORTABLE.
    assert_eq!(c.produce_at(11, "t", txn_batch(pid, epoch, 0, 1)).0, 120);
    // Produce v12 adds the partition implicitly.
    assert_eq!(c.produce_at(12, "t", txn_batch(pid, epoch, 0, 2)), (0, 0));
    assert_eq!(c.describe_txn("tv2").1, "Ongoing");
    let end = |c: &mut Client, epoch: i16, commit: bool| -> EndTxnResponse {
        c.call(
            ApiKey::EndTxn,
            5,
            &EndTxnRequest::default()
                .with_transactional_id(tid("tv2"))
                .with_producer_id(ProducerId(pid))
                .with_producer_epoch(epoch)
                .with_committed(commit),
        )
    };
    let r = end(&mut c, epoch, true);
    assert_eq!(
        (r.error_code, r.producer_id.0, r.producer_epoch),
        (0, pid, epoch + 1)
    );
    // The marker carries the new epoch: the old one is fenced at the partition.
    assert_eq!(c.produce_at(12, "t", txn_batch(pid, epoch, 2, 1)).0, 47);
    // A retried EndTxn (old epoch) gets the same answer.
    let again = end(&mut c, epoch, true);
    assert_eq!((again.error_code, again.producer_epoch), (0, epoch + 1));
    // The next transaction runs on the new epoch, from sequence 0.
    assert_eq!(
        c.produce_at(12, "t", txn_batch(pid, epoch + 1, 0, 1)),
        (0, 3)
    );
    let r = end(&mut c, epoch + 1, false);
    assert_eq!((r.error_code, r.producer_epoch), (0, epoch + 2));
    assert_eq!(c.fetch_committed("t"), (5, 5, vec![(pid, 3)]));
    // Aborting with nothing sent still bumps.
    let r = end(&mut c, epoch + 2, false);
    assert_eq!((r.error_code, r.producer_epoch), (0, epoch + 3));
}

#[test]
fn markers_from_an_older_coordinator_are_fenced_and_idle_ids_expire() {
    use kafka_protocol::messages::write_txn_markers_request::{
        WritableTxnMarker, WritableTxnMarkerTopic,
    };
    use kafka_protocol::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};
    let b = TestBroker::start(&[
        ("transaction.state.log.num.partitions", "2"),
        ("transactional.id.expiration.ms", "300"),
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "100",
        ),
        (
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            "100",
        ),
    ]);
    b.create_topic("t", 1);
    let mut c = b.client();
    let marker = |c: &mut Client, t: &str, coordinator_epoch: i32| -> i16 {
        let r: WriteTxnMarkersResponse = c.call(
            ApiKey::WriteTxnMarkers,
            1,
            &WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
                .with_producer_id(ProducerId(77))
                .with_producer_epoch(0)
                .with_transaction_result(false)
                .with_coordinator_epoch(coordinator_epoch)
                .with_topics(vec![WritableTxnMarkerTopic::default()
                    .with_name(topic(t))
                    .with_partition_indexes(vec![0])])]),
        );
        r.markers[0].topics[0].partitions[0].error_code
    };
    assert_eq!(marker(&mut c, "t", 5), 0);
    assert_eq!(marker(&mut c, "t", 4), 52, "TRANSACTION_COORDINATOR_FENCED");
    assert_eq!(marker(&mut c, "missing", 5), 3);

    let (code, _, _) = c.init_txn("short-lived");
    assert_eq!(code, 0);
    // The first request started the coordinator's timer task; idle for 300 ms, the id goes.
    std::thread::sleep(std::time::Duration::from_millis(2000));
    assert_eq!(c.describe_txn("short-lived").0, 105, "expired");
}

/// Produce from a transactional producer needs WRITE on its transactional id (Kafka's
/// first check in handleProduceRequest): without it every partition is refused with
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing is written.
#[test]
fn transactional_produce_needs_write_on_the_transactional_id() {
    use kafka_protocol::messages::create_acls_request::AclCreation;
    use kafka_protocol::messages::{CreateAclsRequest, CreateAclsResponse};
    use std::collections::BTreeMap;

    // The whole config through the schema (TestBroker sets only the raw pairs, which the
    // authorizer does not read).
    let dir = tempfile::tempdir().unwrap();
    let pairs: BTreeMap<String, String> = [
        ("listeners", "PLAINTEXT://127.0.0.1:0"),
        ("log.dirs", dir.path().to_str().unwrap()),
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("allow.everyone.if.no.acl.found", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let config = kafkalite_broker::BrokerConfig::from_pairs(&pairs).unwrap();
    let broker = kafkalite_broker::Broker::start(config, 2).unwrap();
    broker
        .state()
        .create_topic("guarded-t", 1, BTreeMap::new(), false)
        .unwrap();
    let mut c = Client::connect(broker.addresses()[0].1);
    // An ACL on "guarded" for someone else: the anonymous client may no longer write it;
    // the topic and the id "free" have no ACL, so anyone may.
    let r: CreateAclsResponse = c.call(
        ApiKey::CreateAcls,
        3,
        &CreateAclsRequest::default().with_creations(vec![AclCreation::default()
            .with_resource_type(5)
            .with_resource_name(StrBytes::from_static_str("guarded"))
            .with_resource_pattern_type(3)
            .with_principal(StrBytes::from_static_str("User:someone"))
            .with_host(StrBytes::from_static_str("*"))
            .with_operation(4)
            .with_permission_type(3)]),
    );
    assert_eq!(r.results[0].error_code, 0);
    let produce = |c: &mut Client, id: &str| {
        let request = ProduceRequest::default()
            .with_transactional_id(Some(tid(id)))
            .with_acks(-1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(topic("guarded-t"))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(txn_batch(7, 0, 0, 2).into()))])]);
        let r: ProduceResponse = c.call(ApiKey::Produce, 9, &request);
        r.responses[0].partition_responses[0].error_code
    };
    assert_eq!(produce(&mut c, "guarded"), 53);
    let (hw, _, _) = c.fetch_committed("guarded-t");
    assert_eq!(hw, 0, "nothing was written");
    // An id without an ACL passes this check (whatever comes of the batch after it).
    assert_ne!(produce(&mut c, "free"), 53);
}
