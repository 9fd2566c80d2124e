//! Transactions and the offset bookkeeping beside them: AddPartitionsToTxn,
//! AddOffsetsToTxn, TxnOffsetCommit, EndTxn, WriteTxnMarkers, DescribeTransactions,
//! ListTransactions, DescribeProducers, DeleteRecords. Producer ids differ between the
//! brokers, so each side's request carries the id that side handed out (`Side::vars`).

use std::time::{Duration, Instant};

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, ApiKey, DeleteRecordsRequest,
    DescribeProducersRequest, DescribeTransactionsRequest, EndTxnRequest, FindCoordinatorRequest,
    InitProducerIdRequest, ListTransactionsRequest, ProducerId, TransactionalId,
    TxnOffsetCommitRequest, WriteTxnMarkersRequest,
};

use super::groups::{generation, join_stable, leave, member};
use super::script::{create_topic, group, produce, text, topic, with_txn_commit_ids, Script};
use crate::session::{Session, Side};

pub fn scripts() -> Vec<Script> {
    let script = |name, api, run| Script {
        name,
        api,
        quick: true,
        run,
    };
    vec![
        script(
            "add_partitions_to_txn",
            ApiKey::AddPartitionsToTxn,
            add_partitions,
        ),
        script("add_offsets_to_txn", ApiKey::AddOffsetsToTxn, add_offsets),
        script(
            "txn_offset_commit",
            ApiKey::TxnOffsetCommit,
            txn_offset_commit,
        ),
        script("end_txn", ApiKey::EndTxn, end_txn),
        script(
            "write_txn_markers",
            ApiKey::WriteTxnMarkers,
            write_txn_markers,
        ),
        script(
            "describe_transactions",
            ApiKey::DescribeTransactions,
            describe_transactions,
        ),
        script(
            "list_transactions",
            ApiKey::ListTransactions,
            list_transactions,
        ),
        script(
            "describe_producers",
            ApiKey::DescribeProducers,
            describe_producers,
        ),
        script("delete_records", ApiKey::DeleteRecords, delete_records),
    ]
}

pub(super) fn tid(id: &str) -> TransactionalId {
    TransactionalId(text(id))
}

/// A producer for `id` on each side, uncompared; kept in the sides' vars. Kafka creates
/// `__transaction_state` on the first FindCoordinator of key type 1 and answers
/// NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE until it is loaded.
pub(super) fn init(s: &mut Session, id: &str) {
    let find = FindCoordinatorRequest::default()
        .with_key(text(id))
        .with_key_type(1);
    let deadline = Instant::now() + Duration::from_secs(60);
    for side in 0..2 {
        while Instant::now() < deadline {
            if s.call_unrecorded(side, &find, 2)
                .is_ok_and(|r| r.error_code == 0)
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(tid(id)))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id((-1).into())
        .with_producer_epoch(-1);
    let deadline = Instant::now() + Duration::from_secs(60);
    for side in 0..2 {
        while Instant::now() < deadline {
            if let Ok(r) = s.call_unrecorded(side, &request, 3) {
                if r.error_code == 0 {
                    let vars = &mut s.sides[side].vars;
                    vars.insert(format!("pid:{id}"), r.producer_id.0.to_string());
                    vars.insert(format!("epoch:{id}"), r.producer_epoch.to_string());
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

pub(super) fn pid(side: &Side, id: &str) -> (ProducerId, i16) {
    let get = |k: String| side.vars.get(&k).and_then(|v| v.parse().ok());
    (
        ProducerId(get(format!("pid:{id}")).unwrap_or(-1)),
        get(format!("epoch:{id}")).map_or(-1, |e: i64| e as i16),
    )
}

fn add_request(
    side: &Side,
    v: i16,
    id: &str,
    t: &str,
    epoch_delta: i16,
) -> AddPartitionsToTxnRequest {
    let (p, e) = pid(side, id);
    let topics = vec![AddPartitionsToTxnTopic::default()
        .with_name(topic(t))
        .with_partitions(vec![0])];
    if v <= 3 {
        AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(tid(id))
            .with_v3_and_below_producer_id(p)
            .with_v3_and_below_producer_epoch(e + epoch_delta)
            .with_v3_and_below_topics(topics)
    } else {
        AddPartitionsToTxnRequest::default().with_transactions(vec![
            AddPartitionsToTxnTransaction::default()
                .with_transactional_id(tid(id))
                .with_producer_id(p)
                .with_producer_epoch(e + epoch_delta)
                .with_verify_only(true)
                .with_topics(topics),
        ])
    }
}

fn add_partitions(s: &mut Session, v: i16) {
    let (t, id) = (format!("apt-v{v}"), format!("apt-v{v}"));
    create_topic(s, &t, 1, &[]);
    init(s, &id);
    if v <= 3 {
        s.play("add", v, |side| add_request(side, v, &id, &t, 0));
        s.play("add again", v, |side| add_request(side, v, &id, &t, 0));
        s.play("stale epoch", v, |side| add_request(side, v, &id, &t, -1));
    }
    s.play("unknown topic", v, |side| {
        add_request(side, v, &id, "apt-unknown", 0)
    });
    s.play("unknown transactional id", v, |side| {
        add_request(side, v, "apt-nobody", &t, 0)
    });
}

fn add_offsets(s: &mut Session, v: i16) {
    let id = format!("aot-v{v}");
    init(s, &id);
    let request = |side: &Side, delta: i16| {
        let (p, e) = pid(side, &id);
        AddOffsetsToTxnRequest::default()
            .with_transactional_id(tid(&id))
            .with_producer_id(p)
            .with_producer_epoch(e + delta)
            .with_group_id(group("aot-group"))
    };
    s.play("add", v, |side| request(side, 0));
    s.play("stale epoch", v, |side| request(side, -1));
}

fn txn_offset_commit(s: &mut Session, v: i16) {
    let (t, id) = (format!("toc-v{v}"), format!("toc-v{v}"));
    create_topic(s, &t, 1, &[]);
    init(s, &id);
    let add = |side: &Side| {
        let (p, e) = pid(side, &id);
        AddOffsetsToTxnRequest::default()
            .with_transactional_id(tid(&id))
            .with_producer_id(p)
            .with_producer_epoch(e)
            .with_group_id(group("toc-group"))
    };
    s.play("setup: add offsets", 0, add);
    let request = |side: &Side, g: &str, name: &str, partition: i32| {
        let (p, e) = pid(side, &id);
        let r = TxnOffsetCommitRequest::default()
            .with_transactional_id(tid(&id))
            .with_group_id(group(g))
            .with_producer_id(p)
            .with_producer_epoch(e)
            .with_generation_id(-1)
            .with_member_id(text(""))
            .with_topics(vec![TxnOffsetCommitRequestTopic::default()
                .with_name(topic(name))
                .with_partitions(vec![TxnOffsetCommitRequestPartition::default()
                    .with_partition_index(partition)
                    .with_committed_offset(5)
                    .with_committed_leader_epoch(-1)])]);
        // v6 names the topic by id (nil for a topic no broker has).
        with_txn_commit_ids(side, r)
    };
    let commit = |side: &Side, partition: i32| request(side, "toc-group", &t, partition);
    s.play("commit", v, |side| commit(side, 0));
    s.play("unknown topic", v, |side| {
        request(side, "toc-group", "toc-unknown", 0)
    });
    s.play("unknown partition", v, |side| commit(side, 4));
    // Two topics by the same unknown id (the nil one from v6) answer as one topic.
    s.play("an unknown topic twice", v, |side| {
        let mut r = request(side, "toc-group", "toc-unknown", 0);
        let again =
            r.topics[0]
                .clone()
                .with_partitions(vec![TxnOffsetCommitRequestPartition::default()
                    .with_partition_index(1)
                    .with_committed_offset(5)
                    .with_committed_leader_epoch(-1)]);
        r.topics.push(again);
        r
    });
    if v >= 3 {
        // The committer's group metadata (v3+) is checked as Kafka's group coordinator
        // checks a transactional commit: a classic group with a member.
        let mg = format!("toc-members-v{v}");
        join_stable(s, &mg, &[&t]);
        s.play("setup: add offsets of the group", 0, |side| {
            add(side).with_group_id(group(&mg))
        });
        let as_member = |side: &Side, gen_delta: i32| {
            request(side, &mg, &t, 0)
                .with_generation_id(generation(side, &mg) + gen_delta)
                .with_member_id(text(&member(side, &mg)))
        };
        s.play("member at its generation", v, |side| as_member(side, 0));
        s.play("stale generation", v, |side| as_member(side, -1));
        s.play("unknown member of the group", v, |side| {
            as_member(side, 0).with_member_id(text("nobody"))
        });
        leave(s, &mg);
        let none = format!("toc-none-v{v}");
        s.play("setup: add offsets of another group", 0, |side| {
            add(side).with_group_id(group(&none))
        });
        s.play("member of a group that does not exist", v, |side| {
            request(side, &none, &t, 0)
                .with_generation_id(3)
                .with_member_id(text("someone"))
        });
    }
}

fn end_txn(s: &mut Session, v: i16) {
    let id = format!("et-v{v}");
    init(s, &id);
    let request = |side: &Side, id: &str| {
        let (p, e) = pid(side, id);
        EndTxnRequest::default()
            .with_transactional_id(tid(id))
            .with_producer_id(p)
            .with_producer_epoch(e)
            .with_committed(true)
    };
    s.play("commit without a transaction", v, |side| request(side, &id));
    s.play("unknown transactional id", v, |side| {
        request(side, "et-nobody")
    });
}

fn write_txn_markers(s: &mut Session, v: i16) {
    let t = format!("wtm-v{v}");
    create_topic(s, &t, 1, &[]);
    let request = |name: &str| {
        WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
            .with_producer_id(ProducerId(424_242))
            .with_producer_epoch(0)
            .with_transaction_result(false)
            .with_coordinator_epoch(0)
            .with_topics(vec![WritableTxnMarkerTopic::default()
                .with_name(topic(name))
                .with_partition_indexes(vec![0])])])
    };
    let r = request(&t);
    s.play("abort marker", v, |_| r.clone());
    let r = request("wtm-unknown");
    s.play("unknown topic", v, |_| r.clone());
    // v2 (KIP-1228): a marker of transaction version 2 must carry a newer epoch than the
    // partition's, but for a retry of one already written (no transaction open).
    let marker = |epoch: i16, version: i8| {
        WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
            .with_producer_id(ProducerId(434_343))
            .with_producer_epoch(epoch)
            .with_transaction_result(true)
            .with_coordinator_epoch(0)
            .with_transaction_version(version)
            .with_topics(vec![WritableTxnMarkerTopic::default()
                .with_name(topic(&t))
                .with_partition_indexes(vec![0])])])
    };
    let r = marker(5, 0);
    s.play("commit marker at epoch 5", v, |_| r.clone());
    if v >= 2 {
        let r = marker(4, 2);
        s.play("transaction version 2, older epoch", v, |_| r.clone());
        let r = marker(5, 2);
        s.play("transaction version 2, the same epoch again", v, |_| {
            r.clone()
        });
        let r = marker(6, 2);
        s.play("transaction version 2, newer epoch", v, |_| r.clone());
    }
    let r = marker(4, 0);
    s.play("older epoch", v, |_| r.clone());
}

fn describe_transactions(s: &mut Session, v: i16) {
    let r = DescribeTransactionsRequest::default().with_transactional_ids(vec![tid("dt-nobody")]);
    s.play("unknown transactional id", v, |_| r.clone());
}

fn list_transactions(s: &mut Session, v: i16) {
    let r = ListTransactionsRequest::default()
        .with_state_filters(vec![text("NoSuchState")])
        .with_duration_filter(-1);
    s.play("unknown state filter", v, |_| r.clone());
    if v >= 2 {
        let r = ListTransactionsRequest::default()
            .with_duration_filter(-1)
            .with_transactional_id_pattern(Some(text("no-such-txn-.*")));
        s.play("id pattern matching none", v, |_| r.clone());
        let r = ListTransactionsRequest::default()
            .with_duration_filter(-1)
            .with_transactional_id_pattern(Some(text("(unclosed")));
        s.play("invalid id pattern", v, |_| r.clone());
    }
}

fn describe_producers(s: &mut Session, v: i16) {
    let t = format!("dp-v{v}");
    create_topic(s, &t, 1, &[]);
    let r = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
        .with_name(topic(&t))
        .with_partition_indexes(vec![0])]);
    s.play("no producers", v, |_| r.clone());
}

fn delete_records(s: &mut Session, v: i16) {
    let t = format!("dr-v{v}");
    create_topic(s, &t, 1, &[]);
    produce(s, &t, 2);
    let request = |name: &str, offset: i64| {
        DeleteRecordsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![DeleteRecordsTopic::default()
                .with_name(topic(name))
                .with_partitions(vec![DeleteRecordsPartition::default()
                    .with_partition_index(0)
                    .with_offset(offset)])])
    };
    let r = request(&t, 2);
    s.play("delete up to 2", v, |_| r.clone());
    let r = request(&t, 99);
    s.play("past the high watermark", v, |_| r.clone());
    let r = request(&t, -1);
    s.play("up to the high watermark", v, |_| r.clone());
    let r = request("dr-unknown", 0);
    s.play("unknown topic", v, |_| r.clone());
}
