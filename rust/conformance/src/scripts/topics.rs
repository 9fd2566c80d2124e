//! Topic administration and discovery: CreateTopics, DeleteTopics, CreatePartitions,
//! Metadata, DescribeCluster.

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
    DescribeClusterRequest, MetadataRequest,
};

use super::script::{create_topic, text, topic, Script};
use crate::session::Session;

pub fn scripts() -> Vec<Script> {
    vec![
        Script {
            name: "create_topics",
            api: ApiKey::CreateTopics,
            quick: true,
            run: create_topics,
        },
        Script {
            name: "delete_topics",
            api: ApiKey::DeleteTopics,
            quick: true,
            run: delete_topics,
        },
        Script {
            name: "create_partitions",
            api: ApiKey::CreatePartitions,
            quick: true,
            run: create_partitions,
        },
        Script {
            name: "metadata",
            api: ApiKey::Metadata,
            quick: true,
            run: metadata,
        },
        Script {
            name: "describe_cluster",
            api: ApiKey::DescribeCluster,
            quick: true,
            run: describe_cluster,
        },
    ]
}

fn creatable(
    name: &str,
    partitions: i32,
    replication: i16,
    configs: &[(&str, &str)],
) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(topic(name))
        .with_num_partitions(partitions)
        .with_replication_factor(replication)
        .with_configs(
            configs
                .iter()
                .map(|(k, v)| {
                    CreatableTopicConfig::default()
                        .with_name(text(k))
                        .with_value(Some(text(v)))
                })
                .collect(),
        )
}

fn create_topics(s: &mut Session, v: i16) {
    let name = format!("ct-v{v}");
    let request = |topics: Vec<CreatableTopic>, validate_only: bool| {
        CreateTopicsRequest::default()
            .with_timeout_ms(30_000)
            .with_validate_only(validate_only)
            .with_topics(topics)
    };
    let ok = request(
        vec![creatable(&name, 3, 1, &[("cleanup.policy", "compact")])],
        false,
    );
    s.play("success", v, |_| ok.clone());
    s.play("topic already exists", v, |_| ok.clone());
    let r = request(vec![creatable(&format!("{name}-vo"), 2, 1, &[])], true);
    s.play("validate only", v, |_| r.clone());
    // A timeout of 0 or less: REQUEST_TIMED_OUT and nothing created, so the same topic
    // is then created afresh (fuzzer-found: kafkalite created it at once).
    let late = vec![creatable(&format!("{name}-t0"), 1, 1, &[])];
    let r = request(late.clone(), false).with_timeout_ms(0);
    s.play("timeout 0", v, |_| r.clone());
    let r = request(late.clone(), true).with_timeout_ms(-1);
    s.play("negative timeout, validate only", v, |_| r.clone());
    let r = request(late, false);
    s.play("created after the timed-out request", v, |_| r.clone());
    let r = request(
        vec![
            creatable(
                &format!("{name}-badcfg"),
                1,
                1,
                &[("cleanup.policy", "bogus")],
            ),
            creatable(&format!("{name}-nocfg"), 1, 1, &[("no.such.config", "1")]),
            creatable(&format!("{name}-zero"), 0, 1, &[]),
            creatable(&format!("{name}-rf3"), 1, 3, &[]),
            creatable("bad/name", 1, 1, &[]),
            creatable(&"x".repeat(250), 1, 1, &[]),
        ],
        false,
    );
    s.play(
        "invalid config, partitions, replication factor, names",
        v,
        |_| r.clone(),
    );
    if v >= 4 {
        let r = request(
            vec![creatable(&format!("{name}-defaults"), -1, -1, &[])],
            false,
        );
        s.play("broker defaults (-1)", v, |_| r.clone());
    }
    let r = request(vec![], false);
    s.play("empty request", v, |_| r.clone());
    if v >= 5 {
        let mut r = request(vec![creatable(&format!("{name}-tagged"), 1, 1, &[])], true);
        r.unknown_tagged_fields
            .insert(4242, bytes::Bytes::from_static(b"?"));
        r.topics[0]
            .unknown_tagged_fields
            .insert(7, bytes::Bytes::new());
        s.play("unknown tagged fields", v, |_| r.clone());
    }
}

fn delete_topics(s: &mut Session, v: i16) {
    let name = format!("dt-v{v}");
    create_topic(s, &name, 1, &[]);
    let request = |names: &[&str]| {
        let r = DeleteTopicsRequest::default().with_timeout_ms(30_000);
        if v >= 6 {
            r.with_topics(
                names
                    .iter()
                    .map(|n| DeleteTopicState::default().with_name(Some(topic(n))))
                    .collect(),
            )
        } else {
            r.with_topic_names(names.iter().map(|n| topic(n)).collect())
        }
    };
    if v >= 6 {
        // Named by both name and id: INVALID_REQUEST, nothing deleted (fuzzer-found).
        let mut r = request(&[&name]);
        r.topics[0].topic_id = uuid::Uuid::from_u128(0x0400_0000_0000_0000_0000);
        s.play("name and id both", v, |_| r.clone());
    }
    // A timeout of 0 or less: REQUEST_TIMED_OUT, nothing deleted (fuzzer-found).
    let r = request(&[&name, "dt-unknown"]).with_timeout_ms(0);
    s.play("timeout 0", v, |_| r.clone());
    let r = request(&[&name]);
    s.play("success", v, |_| r.clone());
    let r = request(&["dt-unknown"]);
    s.play("unknown topic", v, |_| r.clone());
    let r = request(&[]);
    s.play("empty request", v, |_| r.clone());
}

fn create_partitions(s: &mut Session, v: i16) {
    let name = format!("cp-v{v}");
    create_topic(s, &name, 1, &[]);
    let request = |topics: &[(&str, i32)], validate_only: bool| {
        CreatePartitionsRequest::default()
            .with_timeout_ms(30_000)
            .with_validate_only(validate_only)
            .with_topics(
                topics
                    .iter()
                    .map(|(n, c)| {
                        CreatePartitionsTopic::default()
                            .with_name(topic(n))
                            .with_count(*c)
                            .with_assignments(None)
                    })
                    .collect(),
            )
    };
    let r = request(&[(&name, 3)], true);
    s.play("validate only", v, |_| r.clone());
    let r = request(&[(&name, 3)], false);
    s.play("success", v, |_| r.clone());
    let r = request(&[(&name, 2)], false);
    s.play("fewer partitions", v, |_| r.clone());
    let r = request(&[(&name, 3)], false);
    s.play("same count", v, |_| r.clone());
    let mut r = request(&[(&name, 5)], false);
    r.topics[0].assignments = Some(vec![]);
    s.play("assignments for fewer partitions than added", v, |_| {
        r.clone()
    });
    // Found by the conformance fuzzer: Kafka refused a count of 127 that kafkalite took.
    let r = request(&[(&name, 127)], false);
    s.play("127 partitions", v, |_| r.clone());
    let r = request(&[("cp-unknown", 2)], false);
    s.play("unknown topic", v, |_| r.clone());
    let r = request(&[], false);
    s.play("empty request", v, |_| r.clone());
}

fn metadata(s: &mut Session, v: i16) {
    let name = format!("md-v{v}");
    create_topic(s, &name, 2, &[]);
    let request = |names: Option<&[&str]>, auto: bool| {
        MetadataRequest::default()
            .with_allow_auto_topic_creation(auto || v < 4)
            .with_topics(names.map(|ns| {
                ns.iter()
                    .map(|n| MetadataRequestTopic::default().with_name(Some(topic(n))))
                    .collect()
            }))
    };
    let r = request(Some(&[&name]), false);
    s.play("one topic", v, |_| r.clone());
    if v >= 4 {
        let r = request(Some(&["md-unknown", &name]), false);
        s.play("unknown topic, no auto-create", v, |_| r.clone());
        let auto = format!("md-auto-v{v}");
        let r = request(Some(&[&auto]), true);
        s.play("auto-create", v, |_| r.clone());
    }
    let r = request(Some(&["bad/name"]), false);
    s.play("invalid topic name", v, |_| r.clone());
    let many: Vec<String> = (0..64).map(|i| format!("md-missing-{i:02}")).collect();
    let names: Vec<&str> = many.iter().map(String::as_str).collect();
    let r = request(Some(&names), false).with_allow_auto_topic_creation(false);
    if v >= 4 {
        s.play("many unknown topics", v, |_| r.clone());
    }
    if v >= 9 {
        // A flexible version: a tag the broker does not know must be skipped.
        let mut r = request(Some(&[&name]), false);
        r.unknown_tagged_fields
            .insert(999, bytes::Bytes::from_static(b"unknown tag"));
        s.play("unknown tagged field", v, |_| r.clone());
    }
    if v >= 12 {
        // An unknown topic id next to a known name: the id is looked up (fuzzer-found).
        let mut r = request(Some(&[&name]), false);
        r.topics.as_mut().expect("one topic")[0].topic_id =
            uuid::Uuid::from_u128(0x0001_0000_0000_0000_0000_0000);
        s.play("unknown topic id next to a name", v, |_| r.clone());
    }
    let r = request(Some(&[]), false);
    s.play("no topics", v, |_| r.clone());
    if v >= 8 {
        let r = request(Some(&[&name]), false)
            .with_include_topic_authorized_operations(true)
            .with_include_cluster_authorized_operations(v <= 10);
        s.play("authorized operations", v, |_| r.clone());
    }
}

fn describe_cluster(s: &mut Session, v: i16) {
    let r = DescribeClusterRequest::default();
    s.play("default", v, |_| r.clone());
    let r = DescribeClusterRequest::default().with_include_cluster_authorized_operations(true);
    s.play("authorized operations", v, |_| r.clone());
    if v >= 1 {
        let r = DescribeClusterRequest::default().with_endpoint_type(2);
        s.play("controller endpoints", v, |_| r.clone());
    }
}
