//! DescribeLogDirs at every version on a single node (every partition is one of its
//! replicas), and what ElectLeaders and the reassignment APIs answer without a cluster.
//! The cluster-mode paths run against real brokers in `tests/cluster/test_admin_ops.py`.

use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ApiKey,
    DescribeLogDirsRequest, DescribeLogDirsResponse, ElectLeadersRequest, ElectLeadersResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafkalite_core::error_codes as codes;
use kafkalite_core::records::{encode_batch, Compression, RecordInput};

mod common;
use common::TestBroker;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

#[test]
fn describe_log_dirs_lists_every_replica_with_its_size() {
    let b = TestBroker::start(&[]);
    b.create_topic("sized", 2);
    b.create_topic("other", 1);
    let batch = encode_batch(
        &[RecordInput {
            timestamp: 1,
            key: None,
            value: Some(vec![7; 200]),
            headers: Vec::new(),
        }],
        Compression::None,
        0,
    )
    .unwrap();
    let p1 = b.broker.state().partition("sized", 1).unwrap();
    p1.append(&batch, 1).unwrap();
    let mut c = b.client();
    for version in 1..=4 {
        let all: DescribeLogDirsResponse = c.call(
            ApiKey::DescribeLogDirs,
            version,
            &DescribeLogDirsRequest::default().with_topics(None),
        );
        assert_eq!(all.results.len(), 1, "one log dir");
        let dir = &all.results[0];
        assert_eq!(dir.error_code, codes::NONE);
        assert_eq!(dir.log_dir.as_str(), b.dir.path().to_str().unwrap());
        let mut seen: Vec<(String, i32, i64, i64)> = dir
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    (
                        t.name.0.to_string(),
                        p.partition_index,
                        p.partition_size,
                        p.offset_lag,
                    )
                })
            })
            .collect();
        seen.sort();
        let sizes: Vec<(&str, i32)> = seen.iter().map(|(t, p, _, _)| (t.as_str(), *p)).collect();
        assert_eq!(sizes, [("other", 0), ("sized", 0), ("sized", 1)]);
        assert_eq!(seen[1].2, 0, "an empty log");
        assert!(seen[2].2 > 200, "the batch is on disk: {seen:?}");
        assert!(seen.iter().all(|s| s.3 == 0));
        if version >= 4 {
            assert!(dir.total_bytes > 0 && dir.usable_bytes > 0);
            assert!(dir.usable_bytes <= dir.total_bytes);
        }
    }
    // Only what is asked for; an unknown partition is simply absent.
    let some: DescribeLogDirsResponse = c.call(
        ApiKey::DescribeLogDirs,
        4,
        &DescribeLogDirsRequest::default().with_topics(Some(vec![
            DescribableLogDirTopic::default()
                .with_topic(name("sized"))
                .with_partitions(vec![1, 5]),
        ])),
    );
    let topics = &some.results[0].topics;
    assert_eq!(topics.len(), 1);
    assert_eq!(topics[0].partitions.len(), 1);
    assert_eq!(topics[0].partitions[0].partition_index, 1);
}

#[test]
fn elections_and_reassignments_on_a_single_node() {
    let b = TestBroker::start(&[]);
    b.create_topic("solo", 1);
    let mut c = b.client();
    let ask = |t: &str, parts: Vec<i32>| {
        Some(vec![TopicPartitions::default()
            .with_topic(name(t))
            .with_partitions(parts)])
    };
    for version in 0..=2 {
        let r: ElectLeadersResponse = c.call(
            ApiKey::ElectLeaders,
            version,
            &ElectLeadersRequest::default()
                .with_topic_partitions(ask("solo", vec![0, 3]))
                .with_timeout_ms(5000),
        );
        let got: Vec<(i32, i16)> = r.replica_election_results[0]
            .partition_result
            .iter()
            .map(|p| (p.partition_id, p.error_code))
            .collect();
        assert_eq!(
            got,
            [
                (0, codes::ELECTION_NOT_NEEDED),
                (3, codes::UNKNOWN_TOPIC_OR_PARTITION)
            ],
            "v{version}"
        );
    }
    let bad: ElectLeadersResponse = c.call(
        ApiKey::ElectLeaders,
        2,
        &ElectLeadersRequest::default()
            .with_election_type(5)
            .with_topic_partitions(ask("solo", vec![0])),
    );
    assert_eq!(bad.error_code, codes::INVALID_REQUEST);
    // A single node answers reassignments as Kafka's single KRaft node does: the replica
    // it has is accepted with nothing to do, any other broker is refused per partition.
    use kafka_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    for (replicas, code) in [(1, codes::NONE), (2, codes::INVALID_REPLICA_ASSIGNMENT)] {
        let r: AlterPartitionReassignmentsResponse = c.call(
            ApiKey::AlterPartitionReassignments,
            0,
            &AlterPartitionReassignmentsRequest::default().with_topics(vec![
                ReassignableTopic::default()
                    .with_name(name("solo"))
                    .with_partitions(vec![ReassignablePartition::default()
                        .with_partition_index(0)
                        .with_replicas(Some(vec![kafka_protocol::messages::BrokerId(replicas)]))]),
            ]),
        );
        assert_eq!(r.error_code, codes::NONE);
        assert_eq!(
            r.responses[0].partitions[0].error_code, code,
            "to broker {replicas}"
        );
    }
}
