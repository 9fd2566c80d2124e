//! Authorization of the admin, transaction and KIP-848 APIs: each request played by alice
//! (logged in over SASL, no ACLs) gets Kafka's refusal; then the ACL Kafka checks is
//! granted (by the anonymous super user, over PLAINTEXT) and the same request is played
//! again, so the next check in Kafka's order shows. Every script ends by revoking alice's
//! ACLs, so the scripts after it see her without any. Needs the brokers as `kafkalite
//! conformance` starts them (an authorizer and a SASL listener); without a SASL listener
//! these scripts play nothing.

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::elect_leaders_request::TopicPartitions as ElectPartitions;
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics;
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AlterPartitionReassignmentsRequest, ApiKey,
    BrokerId, ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, DeleteAclsRequest,
    DeleteRecordsRequest, DescribeAclsRequest, DescribeProducersRequest,
    DescribeTransactionsRequest, ElectLeadersRequest, EndTxnRequest, FindCoordinatorRequest,
    ListPartitionReassignmentsRequest, ListTransactionsRequest, OffsetForLeaderEpochRequest,
    ProducerId, TxnOffsetCommitRequest, WriteTxnMarkersRequest,
};

use super::script::{
    create_topic, group, produce, text, topic, until_both, with_txn_commit_ids, Script,
};
use super::security::{create, creation, delete_filter, login};
use super::transactions::{init, pid, tid};
use crate::session::{Listener, Session, Side};

const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const TRANSACTIONAL_ID: i8 = 5;
const ANY: i8 = 1;
const LITERAL: i8 = 3;
const ALLOW: i8 = 3;
const READ: i8 = 3;
const WRITE: i8 = 4;
const DELETE: i8 = 6;
const ALTER: i8 = 7;
const DESCRIBE: i8 = 8;
const CLUSTER_ACTION: i8 = 9;

const ALICE: &str = "User:alice";
const CLUSTER_NAME: &str = "kafka-cluster";

pub fn scripts() -> Vec<Script> {
    let script = |name, api, run| Script {
        name,
        api,
        quick: true,
        run,
    };
    vec![
        script(
            "find_coordinator_authz",
            ApiKey::FindCoordinator,
            find_coordinator,
        ),
        script("elect_leaders_authz", ApiKey::ElectLeaders, elect_leaders),
        script(
            "alter_partition_reassignments_authz",
            ApiKey::AlterPartitionReassignments,
            alter_reassignments,
        ),
        script(
            "list_partition_reassignments_authz",
            ApiKey::ListPartitionReassignments,
            list_reassignments,
        ),
        script(
            "delete_records_authz",
            ApiKey::DeleteRecords,
            delete_records,
        ),
        script(
            "write_txn_markers_authz",
            ApiKey::WriteTxnMarkers,
            write_txn_markers,
        ),
        script(
            "offset_for_leader_epoch_authz",
            ApiKey::OffsetForLeaderEpoch,
            offset_for_leader_epoch,
        ),
        script(
            "add_partitions_to_txn_authz",
            ApiKey::AddPartitionsToTxn,
            add_partitions,
        ),
        script(
            "add_offsets_to_txn_authz",
            ApiKey::AddOffsetsToTxn,
            add_offsets,
        ),
        script("end_txn_authz", ApiKey::EndTxn, end_txn),
        script(
            "txn_offset_commit_authz",
            ApiKey::TxnOffsetCommit,
            txn_offset_commit,
        ),
        script(
            "describe_producers_authz",
            ApiKey::DescribeProducers,
            describe_producers,
        ),
        script(
            "describe_transactions_authz",
            ApiKey::DescribeTransactions,
            describe_transactions,
        ),
        script(
            "list_transactions_authz",
            ApiKey::ListTransactions,
            list_transactions,
        ),
        script(
            "consumer_group_heartbeat_authz",
            ApiKey::ConsumerGroupHeartbeat,
            consumer_group_heartbeat,
        ),
        script(
            "consumer_group_describe_authz",
            ApiKey::ConsumerGroupDescribe,
            consumer_group_describe,
        ),
    ]
}

/// Log in as alice on new SASL connections; `false` (play nothing) without SASL listeners.
fn as_alice(s: &mut Session) -> bool {
    login(s, "alice", "alice-secret")
}

/// Allow alice `operation` on one resource (as the super user), and wait until both
/// brokers' authorizers have it. Back on alice's SASL connections afterwards.
fn grant(s: &mut Session, kind: i8, name: &str, operation: i8) {
    s.switch(Listener::Plaintext);
    create(
        s,
        "setup: grant",
        1,
        vec![creation(kind, name, LITERAL, ALICE, operation, ALLOW)],
    );
    let r = DescribeAclsRequest::default()
        .with_resource_type_filter(kind)
        .with_resource_name_filter(Some(text(name)))
        .with_pattern_type_filter(LITERAL)
        .with_principal_filter(Some(text(ALICE)))
        // Any host: the default filter is the empty host, which matches no ACL.
        .with_host_filter(None)
        .with_operation(operation)
        .with_permission_type(ALLOW);
    until_both(s, |s, side| {
        s.call_unrecorded(side, &r, 1)
            .is_ok_and(|a| a.resources.iter().any(|res| !res.acls.is_empty()))
    });
    as_alice(s);
}

/// Remove every ACL of alice's and wait until both brokers have none; back on PLAINTEXT.
fn revoke_all(s: &mut Session) {
    s.switch(Listener::Plaintext);
    let r =
        DeleteAclsRequest::default().with_filters(vec![delete_filter(ANY, None, ANY, Some(ALICE))]);
    s.play("setup: revoke", 1, |_| r.clone());
    let describe = DescribeAclsRequest::default()
        .with_resource_type_filter(ANY)
        .with_pattern_type_filter(ANY)
        .with_principal_filter(Some(text(ALICE)))
        .with_host_filter(None)
        .with_operation(ANY)
        .with_permission_type(ANY);
    until_both(s, |s, side| {
        s.call_unrecorded(side, &describe, 1)
            .is_ok_and(|a| a.resources.is_empty())
    });
}

fn find_coordinator(s: &mut Session, v: i16) {
    let (g, id) = (format!("az-fc-group-v{v}"), format!("az-fc-txn-v{v}"));
    if !as_alice(s) {
        return;
    }
    let request = |key_type: i8, keys: &[&str]| {
        let r = FindCoordinatorRequest::default().with_key_type(key_type);
        if v >= 4 {
            r.with_coordinator_keys(keys.iter().map(|k| text(k)).collect())
        } else {
            r.with_key(text(keys[0]))
        }
    };
    let r = request(0, &[&g]);
    s.play("a group without DESCRIBE", v, |_| r.clone());
    if v >= 1 {
        // v0 has no key type: it only finds group coordinators.
        let r = request(1, &[&id]);
        s.play("a transactional id without DESCRIBE", v, |_| r.clone());
    }
    if v >= 4 {
        grant(s, GROUP, &g, DESCRIBE);
        let r = request(0, &[&g, "az-fc-other"]);
        s.play("two groups, DESCRIBE on one", v, |_| r.clone());
    }
    revoke_all(s);
}

fn elect_leaders(s: &mut Session, v: i16) {
    let t = format!("az-el-v{v}");
    create_topic(s, &t, 1, &[]);
    if !as_alice(s) {
        return;
    }
    let named = ElectLeadersRequest::default()
        .with_election_type(0)
        .with_timeout_ms(10_000)
        .with_topic_partitions(Some(vec![ElectPartitions::default()
            .with_topic(topic(&t))
            .with_partitions(vec![0])]));
    s.play("without ALTER on the cluster: named", v, |_| named.clone());
    let every = named.clone().with_topic_partitions(None);
    s.play("without ALTER on the cluster: every partition", v, |_| {
        every.clone()
    });
    grant(s, CLUSTER, CLUSTER_NAME, ALTER);
    s.play("with ALTER on the cluster", v, |_| named.clone());
    revoke_all(s);
}

fn alter_reassignments(s: &mut Session, v: i16) {
    let t = format!("az-apr-v{v}");
    create_topic(s, &t, 1, &[]);
    if !as_alice(s) {
        return;
    }
    let r = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![ReassignableTopic::default()
            .with_name(topic(&t))
            .with_partitions(vec![ReassignablePartition::default()
                .with_partition_index(0)
                .with_replicas(None)])]);
    s.play("without ALTER on the cluster", v, |_| r.clone());
    let empty = AlterPartitionReassignmentsRequest::default().with_timeout_ms(10_000);
    s.play("without ALTER on the cluster: no partitions", v, |_| {
        empty.clone()
    });
    grant(s, CLUSTER, CLUSTER_NAME, ALTER);
    s.play("with ALTER on the cluster", v, |_| r.clone());
    revoke_all(s);
}

fn list_reassignments(s: &mut Session, v: i16) {
    let t = format!("az-lpr-v{v}");
    create_topic(s, &t, 1, &[]);
    if !as_alice(s) {
        return;
    }
    let every = ListPartitionReassignmentsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(None);
    s.play(
        "without DESCRIBE on the cluster: every partition",
        v,
        |_| every.clone(),
    );
    let named = every
        .clone()
        .with_topics(Some(vec![ListPartitionReassignmentsTopics::default()
            .with_name(topic(&t))
            .with_partition_indexes(vec![0, 1])]));
    s.play("without DESCRIBE on the cluster: named", v, |_| {
        named.clone()
    });
    grant(s, CLUSTER, CLUSTER_NAME, DESCRIBE);
    s.play("with DESCRIBE on the cluster", v, |_| named.clone());
    revoke_all(s);
}

fn delete_records(s: &mut Session, v: i16) {
    let t = format!("az-dr-v{v}");
    create_topic(s, &t, 1, &[]);
    produce(s, &t, 1);
    if !as_alice(s) {
        return;
    }
    let request = |names: &[&str]| {
        DeleteRecordsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(
                names
                    .iter()
                    .map(|n| {
                        DeleteRecordsTopic::default()
                            .with_name(topic(n))
                            .with_partitions(vec![DeleteRecordsPartition::default()
                                .with_partition_index(0)
                                .with_offset(1)])
                    })
                    .collect(),
            )
    };
    let r = request(&[&t, "az-dr-unknown"]);
    s.play("without DELETE on the topics", v, |_| r.clone());
    grant(s, TOPIC, &t, DELETE);
    s.play("with DELETE on one topic", v, |_| r.clone());
    revoke_all(s);
}

fn write_txn_markers(s: &mut Session, v: i16) {
    let t = format!("az-wtm-v{v}");
    create_topic(s, &t, 1, &[]);
    if !as_alice(s) {
        return;
    }
    let marker = |producer: i64| {
        WritableTxnMarker::default()
            .with_producer_id(ProducerId(producer))
            .with_producer_epoch(0)
            .with_transaction_result(false)
            .with_coordinator_epoch(0)
            .with_topics(vec![WritableTxnMarkerTopic::default()
                .with_name(topic(&t))
                .with_partition_indexes(vec![0])])
    };
    let r = WriteTxnMarkersRequest::default().with_markers(vec![marker(525_252)]);
    s.play("without CLUSTER_ACTION", v, |_| r.clone());
    let empty = WriteTxnMarkersRequest::default();
    s.play("without CLUSTER_ACTION: no markers", v, |_| empty.clone());
    grant(s, CLUSTER, CLUSTER_NAME, CLUSTER_ACTION);
    s.play("with CLUSTER_ACTION", v, |_| r.clone());
    revoke_all(s);
    as_alice(s);
    grant(s, CLUSTER, CLUSTER_NAME, ALTER);
    s.play("with ALTER on the cluster", v, |_| r.clone());
    revoke_all(s);
}

fn offset_for_leader_epoch(s: &mut Session, v: i16) {
    let (seen, hidden) = (format!("az-ofle-a-v{v}"), format!("az-ofle-b-v{v}"));
    create_topic(s, &seen, 1, &[]);
    create_topic(s, &hidden, 1, &[]);
    if !as_alice(s) {
        return;
    }
    let request = |replica: i32| {
        let t = |name: &str| {
            OffsetForLeaderTopic::default()
                .with_topic(topic(name))
                .with_partitions(vec![OffsetForLeaderPartition::default()
                    .with_partition(0)
                    .with_current_leader_epoch(-1)
                    .with_leader_epoch(0)])
        };
        // The hidden topic first: Kafka answers the authorized topics before the others.
        OffsetForLeaderEpochRequest::default()
            .with_replica_id(BrokerId(replica))
            .with_topics(vec![t(&hidden), t(&seen)])
    };
    let consumer = request(-1);
    s.play("without DESCRIBE on the topics", v, |_| consumer.clone());
    grant(s, TOPIC, &seen, DESCRIBE);
    s.play("with DESCRIBE on one topic", v, |_| consumer.clone());
    if v >= 3 {
        let follower = request(1);
        s.play("as a follower without CLUSTER_ACTION", v, |_| {
            follower.clone()
        });
        grant(s, CLUSTER, CLUSTER_NAME, CLUSTER_ACTION);
        s.play("as a follower with CLUSTER_ACTION", v, |_| follower.clone());
    } else {
        grant(s, CLUSTER, CLUSTER_NAME, CLUSTER_ACTION);
    }
    s.play("as a consumer with CLUSTER_ACTION", v, |_| consumer.clone());
    revoke_all(s);
}

fn add_partitions(s: &mut Session, v: i16) {
    let (t, id) = (format!("az-apt-v{v}"), format!("az-apt-v{v}"));
    create_topic(s, &t, 1, &[]);
    init(s, &id);
    if !as_alice(s) {
        return;
    }
    let request = |side: &Side, topics: &[&str]| {
        let (p, e) = pid(side, &id);
        let topics = topics
            .iter()
            .map(|n| {
                AddPartitionsToTxnTopic::default()
                    .with_name(topic(n))
                    .with_partitions(vec![0])
            })
            .collect();
        if v <= 3 {
            AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(tid(&id))
                .with_v3_and_below_producer_id(p)
                .with_v3_and_below_producer_epoch(e)
                .with_v3_and_below_topics(topics)
        } else {
            AddPartitionsToTxnRequest::default().with_transactions(vec![
                AddPartitionsToTxnTransaction::default()
                    .with_transactional_id(tid(&id))
                    .with_producer_id(p)
                    .with_producer_epoch(e)
                    .with_verify_only(true)
                    .with_topics(topics),
            ])
        }
    };
    let two = [t.as_str(), "az-apt-unknown"];
    if v >= 4 {
        s.play("broker batch without CLUSTER_ACTION", v, |side| {
            request(side, &two)
        });
        grant(s, CLUSTER, CLUSTER_NAME, CLUSTER_ACTION);
        s.play("broker batch with CLUSTER_ACTION", v, |side| {
            request(side, &[&t])
        });
        revoke_all(s);
        return;
    }
    s.play("without WRITE on the transactional id", v, |side| {
        request(side, &two)
    });
    grant(s, TRANSACTIONAL_ID, &id, WRITE);
    s.play("without WRITE on the topics", v, |side| request(side, &two));
    s.play("an internal topic", v, |side| {
        request(side, &["__consumer_offsets"])
    });
    grant(s, TOPIC, &t, WRITE);
    s.play("with WRITE on one topic", v, |side| request(side, &two));
    s.play("with WRITE on the topic", v, |side| request(side, &[&t]));
    revoke_all(s);
}

fn add_offsets(s: &mut Session, v: i16) {
    let (id, g) = (format!("az-aot-v{v}"), format!("az-aot-group-v{v}"));
    init(s, &id);
    if !as_alice(s) {
        return;
    }
    let request = |side: &Side| {
        let (p, e) = pid(side, &id);
        AddOffsetsToTxnRequest::default()
            .with_transactional_id(tid(&id))
            .with_producer_id(p)
            .with_producer_epoch(e)
            .with_group_id(group(&g))
    };
    s.play("without WRITE on the transactional id", v, request);
    grant(s, TRANSACTIONAL_ID, &id, WRITE);
    s.play("without READ on the group", v, request);
    grant(s, GROUP, &g, READ);
    s.play("with both", v, request);
    revoke_all(s);
}

fn end_txn(s: &mut Session, v: i16) {
    let id = format!("az-et-v{v}");
    init(s, &id);
    if !as_alice(s) {
        return;
    }
    let request = |side: &Side| {
        let (p, e) = pid(side, &id);
        EndTxnRequest::default()
            .with_transactional_id(tid(&id))
            .with_producer_id(p)
            .with_producer_epoch(e)
            .with_committed(true)
    };
    s.play("without WRITE on the transactional id", v, request);
    grant(s, TRANSACTIONAL_ID, &id, WRITE);
    s.play("with WRITE on the transactional id", v, request);
    revoke_all(s);
}

fn txn_offset_commit(s: &mut Session, v: i16) {
    let (t, id, g) = (
        format!("az-toc-v{v}"),
        format!("az-toc-v{v}"),
        format!("az-toc-group-v{v}"),
    );
    create_topic(s, &t, 1, &[]);
    init(s, &id);
    let add = |side: &Side| {
        let (p, e) = pid(side, &id);
        AddOffsetsToTxnRequest::default()
            .with_transactional_id(tid(&id))
            .with_producer_id(p)
            .with_producer_epoch(e)
            .with_group_id(group(&g))
    };
    s.play("setup: add offsets", 0, add);
    if !as_alice(s) {
        return;
    }
    let commit = |side: &Side| {
        let (p, e) = pid(side, &id);
        let offsets = |name: &str| {
            TxnOffsetCommitRequestTopic::default()
                .with_name(topic(name))
                .with_partitions(vec![TxnOffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(5)
                    .with_committed_leader_epoch(-1)])
        };
        let r = TxnOffsetCommitRequest::default()
            .with_transactional_id(tid(&id))
            .with_group_id(group(&g))
            .with_producer_id(p)
            .with_producer_epoch(e)
            .with_generation_id(-1)
            .with_member_id(text(""))
            .with_topics(vec![offsets(&t), offsets("az-toc-unknown")]);
        // v6 names topics by id (nil for the unknown one).
        with_txn_commit_ids(side, r)
    };
    s.play("without WRITE on the transactional id", v, commit);
    grant(s, TRANSACTIONAL_ID, &id, WRITE);
    s.play("without READ on the group", v, commit);
    grant(s, GROUP, &g, READ);
    s.play("without READ on the topics", v, commit);
    grant(s, TOPIC, &t, READ);
    s.play("with READ on one topic", v, commit);
    revoke_all(s);
}

fn describe_producers(s: &mut Session, v: i16) {
    let t = format!("az-dp-v{v}");
    create_topic(s, &t, 1, &[]);
    if !as_alice(s) {
        return;
    }
    let r = DescribeProducersRequest::default().with_topics(
        [t.as_str(), "az-dp-unknown"]
            .iter()
            .map(|n| {
                TopicRequest::default()
                    .with_name(topic(n))
                    .with_partition_indexes(vec![0])
            })
            .collect(),
    );
    s.play("without READ on the topics", v, |_| r.clone());
    grant(s, TOPIC, &t, READ);
    s.play("with READ on one topic", v, |_| r.clone());
    revoke_all(s);
}

/// A transaction of `id` holding partition 0 of `t`, begun by the super user.
fn ongoing(s: &mut Session, id: &str, t: &str) {
    init(s, id);
    s.play("setup: add partitions", 3, |side| {
        let (p, e) = pid(side, id);
        AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(tid(id))
            .with_v3_and_below_producer_id(p)
            .with_v3_and_below_producer_epoch(e)
            .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
                .with_name(topic(t))
                .with_partitions(vec![0])])
    });
}

fn describe_transactions(s: &mut Session, v: i16) {
    let (t, id) = (format!("az-dt-v{v}"), format!("az-dt-v{v}"));
    create_topic(s, &t, 1, &[]);
    ongoing(s, &id, &t);
    if !as_alice(s) {
        return;
    }
    let r = DescribeTransactionsRequest::default().with_transactional_ids(vec![tid(&id)]);
    s.play("without DESCRIBE on the transactional id", v, |_| r.clone());
    grant(s, TRANSACTIONAL_ID, &id, DESCRIBE);
    s.play("without DESCRIBE on its topic", v, |_| r.clone());
    grant(s, TOPIC, &t, DESCRIBE);
    s.play("with DESCRIBE on its topic", v, |_| r.clone());
    revoke_all(s);
}

fn list_transactions(s: &mut Session, v: i16) {
    let (t, id) = (format!("az-lt-v{v}"), format!("az-lt-v{v}"));
    create_topic(s, &t, 1, &[]);
    ongoing(s, &id, &t);
    if !as_alice(s) {
        return;
    }
    // Only the ongoing ones: the other scripts' transactions differ between the brokers'
    // start times but are all Empty or complete, so this lists exactly this script's.
    let r = ListTransactionsRequest::default()
        .with_state_filters(vec![text("Ongoing")])
        .with_duration_filter(-1);
    s.play("without DESCRIBE on any transactional id", v, |_| r.clone());
    grant(s, TRANSACTIONAL_ID, &id, DESCRIBE);
    s.play("with DESCRIBE on one", v, |_| r.clone());
    revoke_all(s);
}

fn join_request(g: &str, member: &str, topics: &[&str]) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(group(g))
        .with_member_id(text(member))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(30_000)
        .with_subscribed_topic_names(Some(topics.iter().map(|t| topic(t)).collect()))
        .with_topic_partitions(Some(Vec::<TopicPartitions>::new()))
}

fn consumer_group_heartbeat(s: &mut Session, v: i16) {
    let (seen, hidden) = (format!("az-cgh-a-v{v}"), format!("az-cgh-b-v{v}"));
    let g = format!("az-cgh-v{v}");
    create_topic(s, &seen, 1, &[]);
    create_topic(s, &hidden, 1, &[]);
    if !as_alice(s) {
        return;
    }
    let member = if v >= 1 { "az-cgh-member" } else { "" };
    let r = join_request(&g, member, &[&seen, &hidden]);
    s.play("without READ on the group", v, |_| r.clone());
    grant(s, GROUP, &g, READ);
    s.play("without DESCRIBE on the topics", v, |_| r.clone());
    grant(s, TOPIC, &seen, DESCRIBE);
    s.play("without DESCRIBE on one topic", v, |_| r.clone());
    let unknown = join_request(&g, member, &[&seen, "az-cgh-unknown"]);
    s.play("an unknown topic without DESCRIBE", v, |_| unknown.clone());
    revoke_all(s);
}

/// A member of `g` holding `t`'s partition, joined by the super user at v1 (the client
/// names it, so both sides describe the same id); uncompared: Kafka's coordinator may
/// learn of a topic created a moment ago only after the join, assigning it at a later
/// heartbeat.
fn join_assigned(s: &mut Session, g: &str, member: &str, t: &str) {
    let join = join_request(g, member, &[t]);
    let mut epochs = [0; 2];
    let mut assigned = [false; 2];
    until_both(s, |s, side| {
        if !assigned[side] {
            let r = if epochs[side] == 0 {
                join.clone()
            } else {
                ConsumerGroupHeartbeatRequest::default()
                    .with_group_id(group(g))
                    .with_member_id(text(member))
                    .with_member_epoch(epochs[side])
                    .with_rebalance_timeout_ms(-1)
                    .with_topic_partitions(Some(Vec::new()))
            };
            if let Ok(a) = s.call_unrecorded(side, &r, 1) {
                if a.error_code == 0 {
                    epochs[side] = a.member_epoch;
                    assigned[side] = a.assignment.is_some_and(|a| !a.topic_partitions.is_empty());
                }
            }
        }
        assigned[side]
    });
}

fn consumer_group_describe(s: &mut Session, v: i16) {
    let t = format!("az-cgd-v{v}");
    let g = format!("az-cgd-v{v}");
    create_topic(s, &t, 1, &[]);
    join_assigned(s, &g, "az-cgd-member", &t);
    if !as_alice(s) {
        return;
    }
    let r = ConsumerGroupDescribeRequest::default()
        .with_group_ids(vec![group(&g), group("az-cgd-unknown")])
        .with_include_authorized_operations(true);
    s.play("without DESCRIBE on the groups", v, |_| r.clone());
    grant(s, GROUP, &g, DESCRIBE);
    s.play("without DESCRIBE on the assigned topic", v, |_| r.clone());
    grant(s, TOPIC, &t, DESCRIBE);
    s.play("with DESCRIBE on the assigned topic", v, |_| r.clone());
    revoke_all(s);
}
