//! The control plane over real sockets: ApiVersions, Metadata, CreateTopics, DeleteTopics,
//! CreatePartitions, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and
//! DescribeCluster, with requests encoded and responses decoded by `kafka-protocol`'s client
//! side, at the lowest and highest advertised versions.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use kafka_protocol::messages::create_partitions_request::{
    CreatePartitionsAssignment, CreatePartitionsTopic,
};
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResult;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    alter_configs_request, incremental_alter_configs_request, AlterConfigsRequest,
    AlterConfigsResponse, ApiKey, ApiVersionsRequest, ApiVersionsResponse, BrokerId,
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, DescribeClusterRequest, DescribeClusterResponse,
    DescribeConfigsRequest, DescribeConfigsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, InitProducerIdRequest, InitProducerIdResponse,
    MetadataRequest, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafkalite_broker::{Broker, BrokerConfig};

mod common;
use common::Client;

// ---------------------------------------------------------------------------------------
// Harness

struct TestBroker {
    broker: Broker,
    _dir: tempfile::TempDir,
}

/// A broker configured the way server.properties would, plus `extra` keys.
fn start_with(extra: &[(&str, &str)]) -> TestBroker {
    let dir = tempfile::tempdir().unwrap();
    let mut raw: BTreeMap<String, String> = [
        ("listeners", "PLAINTEXT://127.0.0.1:0"),
        ("log.dirs", dir.path().to_str().unwrap()),
        ("node.id", "7"),
    ]
    .into_iter()
    .chain(extra.iter().copied())
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    raw.retain(|_, v| !v.is_empty());
    let config = BrokerConfig::from_pairs(&raw).unwrap();
    let broker = Broker::start(config, 2).unwrap();
    TestBroker { broker, _dir: dir }
}

fn start() -> TestBroker {
    start_with(&[])
}

const NODE: i32 = 7;

impl TestBroker {
    fn addr(&self) -> SocketAddr {
        self.broker.addresses()[0].1
    }

    fn client(&self) -> Client {
        Client::connect(self.addr())
    }

    fn partitions(&self, topic: &str) -> Option<i32> {
        self.broker
            .state()
            .topic(topic)
            .map(|t| t.partition_count())
    }

    fn overrides(&self, topic: &str) -> BTreeMap<String, String> {
        let t = self.broker.state().topic(topic).unwrap();
        let configs = t.configs.read().unwrap().clone();
        configs
    }
}

impl Client {
    fn metadata(
        &mut self,
        version: i16,
        topics: Option<&[&str]>,
        create: bool,
    ) -> MetadataResponse {
        let topics = topics.map(|names| {
            names
                .iter()
                .map(|n| MetadataRequestTopic::default().with_name(Some(topic_name(n))))
                .collect()
        });
        let request = MetadataRequest::default()
            .with_topics(topics)
            .with_allow_auto_topic_creation(create || version < 4);
        self.call(ApiKey::Metadata, version, &request)
    }

    fn create_topics(
        &mut self,
        version: i16,
        topics: Vec<CreatableTopic>,
        validate_only: bool,
    ) -> CreateTopicsResponse {
        let request = CreateTopicsRequest::default()
            .with_topics(topics)
            .with_timeout_ms(5000)
            .with_validate_only(validate_only);
        self.call(ApiKey::CreateTopics, version, &request)
    }

    /// Create one topic and return (error code, message).
    fn create(&mut self, version: i16, topic: CreatableTopic) -> (i16, String) {
        let r = self.create_topics(version, vec![topic], false);
        let t = &r.topics[0];
        (t.error_code, message(&t.error_message))
    }

    fn describe_configs(
        &mut self,
        version: i16,
        resource_type: i8,
        name: &str,
        keys: Option<&[&str]>,
        synonyms: bool,
    ) -> DescribeConfigsResult {
        let resource = DescribeConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(StrBytes::from_string(name.to_string()))
            .with_configuration_keys(keys.map(|k| {
                k.iter()
                    .map(|s| StrBytes::from_string(s.to_string()))
                    .collect()
            }));
        let request = DescribeConfigsRequest::default()
            .with_resources(vec![resource])
            .with_include_synonyms(synonyms);
        let mut r: DescribeConfigsResponse = self.call(ApiKey::DescribeConfigs, version, &request);
        assert_eq!(r.results.len(), 1);
        r.results.remove(0)
    }

    fn alter(
        &mut self,
        version: i16,
        topic: &str,
        configs: &[(&str, &str)],
        validate_only: bool,
    ) -> (i16, String) {
        let resource = alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(TOPIC)
            .with_resource_name(StrBytes::from_string(topic.to_string()))
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        alter_configs_request::AlterableConfig::default()
                            .with_name(StrBytes::from_string(k.to_string()))
                            .with_value(Some(StrBytes::from_string(v.to_string())))
                    })
                    .collect(),
            );
        let request = AlterConfigsRequest::default()
            .with_resources(vec![resource])
            .with_validate_only(validate_only);
        let r: AlterConfigsResponse = self.call(ApiKey::AlterConfigs, version, &request);
        let res = &r.responses[0];
        assert_eq!(res.resource_name.as_str(), topic);
        (res.error_code, message(&res.error_message))
    }

    fn incremental(
        &mut self,
        version: i16,
        resource_type: i8,
        name: &str,
        ops: &[(&str, i8, Option<&str>)],
        validate_only: bool,
    ) -> (i16, String) {
        let resource = incremental_alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(StrBytes::from_string(name.to_string()))
            .with_configs(
                ops.iter()
                    .map(|(k, op, v)| {
                        incremental_alter_configs_request::AlterableConfig::default()
                            .with_name(StrBytes::from_string(k.to_string()))
                            .with_config_operation(*op)
                            .with_value(v.map(|v| StrBytes::from_string(v.to_string())))
                    })
                    .collect(),
            );
        let request = IncrementalAlterConfigsRequest::default()
            .with_resources(vec![resource])
            .with_validate_only(validate_only);
        let r: IncrementalAlterConfigsResponse =
            self.call(ApiKey::IncrementalAlterConfigs, version, &request);
        let res = &r.responses[0];
        (res.error_code, message(&res.error_message))
    }
}

const TOPIC: i8 = 2;
const BROKER: i8 = 4;

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

fn message(m: &Option<StrBytes>) -> String {
    m.as_ref().map(ToString::to_string).unwrap_or_default()
}

fn new_topic(name: &str, partitions: i32, replication: i16) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(topic_name(name))
        .with_num_partitions(partitions)
        .with_replication_factor(replication)
}

fn with_configs(topic: CreatableTopic, configs: &[(&str, &str)]) -> CreatableTopic {
    topic.with_configs(
        configs
            .iter()
            .map(|(k, v)| {
                CreatableTopicConfig::default()
                    .with_name(StrBytes::from_string(k.to_string()))
                    .with_value(Some(StrBytes::from_string(v.to_string())))
            })
            .collect(),
    )
}

/// (value, source) of one key in a DescribeConfigs result.
fn config<'a>(r: &'a DescribeConfigsResult, key: &str) -> (&'a str, i8) {
    let c = r
        .configs
        .iter()
        .find(|c| c.name.as_str() == key)
        .unwrap_or_else(|| panic!("{key} not described"));
    (
        c.value.as_ref().map_or("<null>", |v| v.as_str()),
        c.config_source,
    )
}

// ---------------------------------------------------------------------------------------
// ApiVersions

#[test]
fn api_versions_advertise_the_implemented_ranges_and_a_modern_release() {
    let b = start();
    let mut c = b.client();
    // From v3 the client names its software (KIP-511); Kafka refuses an empty name.
    let request = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("kafkalite-test"))
        .with_client_software_version(StrBytes::from_static_str("1.0"));
    let r: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, &request);
    assert_eq!(r.error_code, 0);
    let range = |key: ApiKey| {
        r.api_keys
            .iter()
            .find(|k| k.api_key == key as i16)
            .map(|k| (k.min_version, k.max_version))
    };
    for (key, min, max) in [
        (ApiKey::ApiVersions, 0, 5),
        (ApiKey::Metadata, 0, 13),
        (ApiKey::Produce, 0, 13),
        (ApiKey::Fetch, 4, 18),
        (ApiKey::ListOffsets, 1, 11),
        (ApiKey::CreateTopics, 2, 7),
        (ApiKey::DeleteTopics, 1, 6),
        (ApiKey::CreatePartitions, 0, 3),
        (ApiKey::DescribeConfigs, 1, 4),
        (ApiKey::AlterConfigs, 0, 2),
        (ApiKey::IncrementalAlterConfigs, 0, 1),
        (ApiKey::DescribeCluster, 0, 2),
        (ApiKey::InitProducerId, 0, 5),
        (ApiKey::DescribeLogDirs, 1, 5),
        (ApiKey::ElectLeaders, 0, 2),
        (ApiKey::AlterPartitionReassignments, 0, 1),
        (ApiKey::ListPartitionReassignments, 0, 0),
        (ApiKey::EndTxn, 0, 5),
        (ApiKey::TxnOffsetCommit, 0, 6),
    ] {
        assert_eq!(range(key), Some((min, max)), "{key:?}");
    }
    // kafka-python 3.x picks the newest release whose marker version is advertised:
    // Produce v13 means Kafka 4.1 and newer; the ranges above are Kafka 4.4.0's (Fetch v13+
    // with topic ids).
    let has = |key: ApiKey, v: i16| range(key).is_some_and(|(lo, hi)| lo <= v && v <= hi);
    assert!(has(ApiKey::ListOffsets, 10) && has(ApiKey::Produce, 13) && has(ApiKey::Fetch, 18));
    // Transaction version 2 (KIP-890) is finalized for Kafka 4 clients.
    let tv = r
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .map(|f| f.max_version_level);
    assert_eq!(tv, Some(2));
}

// ---------------------------------------------------------------------------------------
// Metadata

#[test]
fn metadata_describes_this_node_and_its_topics_at_every_version() {
    let b = start();
    let mut c = b.client();
    assert_eq!(c.create(7, new_topic("orders", 3, 1)).0, 0);
    let id = b.broker.state().topic("orders").unwrap().id;
    let port = b.addr().port() as i32;
    for version in 1..=12 {
        let r = c.metadata(version, Some(&["orders"]), false);
        assert_eq!(r.brokers.len(), 1);
        assert_eq!(r.brokers[0].node_id, BrokerId(NODE));
        assert_eq!(r.brokers[0].host.as_str(), "127.0.0.1");
        assert_eq!(r.brokers[0].port, port);
        assert_eq!(r.brokers[0].rack, None);
        assert_eq!(r.controller_id, BrokerId(NODE));
        if version >= 2 {
            assert_eq!(
                r.cluster_id.as_deref(),
                Some(b.broker.state().cluster_id.as_str())
            );
        }
        let t = &r.topics[0];
        assert_eq!(t.error_code, 0, "v{version}");
        assert!(!t.is_internal);
        assert_eq!(t.partitions.len(), 3);
        for (i, p) in t.partitions.iter().enumerate() {
            assert_eq!(p.partition_index, i as i32);
            assert_eq!(p.leader_id, BrokerId(NODE));
            assert_eq!(p.replica_nodes, vec![BrokerId(NODE)]);
            assert_eq!(p.isr_nodes, vec![BrokerId(NODE)]);
            assert!(p.offline_replicas.is_empty());
            if version >= 7 {
                assert_eq!(p.leader_epoch, 0);
            }
        }
        if version >= 8 {
            assert_eq!(t.topic_authorized_operations, i32::MIN);
        }
        if version >= 10 {
            assert_eq!(t.topic_id, id);
        }
    }
}

#[test]
fn metadata_topic_selection_and_errors() {
    let b = start();
    let mut c = b.client();
    c.create(7, new_topic("a", 1, 1));
    c.create(7, new_topic("b", 2, 1));
    // null = all, empty = none.
    let all = c.metadata(12, None, false);
    let mut names: Vec<_> = all
        .topics
        .iter()
        .map(|t| t.name.as_ref().unwrap().0.to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
    assert!(c.metadata(12, Some(&[]), false).topics.is_empty());
    // Unknown without auto-creation, and invalid names.
    let r = c.metadata(12, Some(&["missing", "bad/name"]), false);
    assert_eq!(r.topics[0].error_code, 3);
    assert_eq!(r.topics[1].error_code, 17);
    assert_eq!(b.partitions("missing"), None);
    // By topic id (v12), known and unknown.
    let id = b.broker.state().topic("b").unwrap().id;
    let request = MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default()
            .with_name(None)
            .with_topic_id(id),
        MetadataRequestTopic::default()
            .with_name(None)
            .with_topic_id(uuid::Uuid::from_u128(42)),
    ]));
    let r: MetadataResponse = c.call(ApiKey::Metadata, 12, &request);
    assert_eq!(r.topics[0].name.as_ref().unwrap().0.as_str(), "b");
    assert_eq!(r.topics[0].partitions.len(), 2);
    assert_eq!(r.topics[1].error_code, 100);
    // Authorized operations when asked for (no authorizer: everything a topic supports).
    let request = MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(topic_name("a")))
        ]))
        .with_include_topic_authorized_operations(true)
        .with_include_cluster_authorized_operations(true);
    let r: MetadataResponse = c.call(ApiKey::Metadata, 10, &request);
    assert_ne!(r.topics[0].topic_authorized_operations, i32::MIN);
    assert_ne!(
        r.topics[0].topic_authorized_operations & (1 << 3),
        0,
        "READ"
    );
    assert_ne!(r.cluster_authorized_operations, i32::MIN);
}

#[test]
fn metadata_auto_creates_when_allowed() {
    let b = start_with(&[("num.partitions", "4")]);
    let mut c = b.client();
    // v1-3 have no flag and always ask for creation; v4+ say so explicitly.
    let r = c.metadata(1, Some(&["auto-v1"]), false);
    assert_eq!(r.topics[0].error_code, 0);
    assert_eq!(r.topics[0].partitions.len(), 4);
    let r = c.metadata(12, Some(&["auto-v12"]), true);
    assert_eq!(r.topics[0].error_code, 0);
    assert_eq!(b.partitions("auto-v12"), Some(4));
    assert_eq!(
        c.metadata(12, Some(&["no-auto"]), false).topics[0].error_code,
        3
    );

    let off = start_with(&[("auto.create.topics.enable", "false")]);
    let mut c = off.client();
    assert_eq!(c.metadata(12, Some(&["x"]), true).topics[0].error_code, 3);
    assert_eq!(c.metadata(1, Some(&["x"]), true).topics[0].error_code, 3);
    assert_eq!(off.partitions("x"), None);
}

// ---------------------------------------------------------------------------------------
// CreateTopics

#[test]
fn create_topics_defaults_and_returned_configs() {
    let b = start_with(&[("num.partitions", "3"), ("log.retention.hours", "1")]);
    let mut c = b.client();
    for version in [2, 4] {
        let name = format!("v{version}");
        let (code, _) = c.create(version, new_topic(&name, -1, -1));
        assert_eq!(code, 0);
        assert_eq!(b.partitions(&name), Some(3));
    }
    let r = c.create_topics(
        7,
        vec![with_configs(
            new_topic("t7", -1, -1),
            &[("cleanup.policy", "compact"), ("preallocate", "TRUE")],
        )],
        false,
    );
    let t = &r.topics[0];
    assert_eq!(t.error_code, 0, "{:?}", t.error_message);
    assert_eq!((t.num_partitions, t.replication_factor), (3, 1));
    assert_eq!(t.topic_id, b.broker.state().topic("t7").unwrap().id);
    let configs = t.configs.as_ref().unwrap();
    let get = |k: &str| {
        let c = configs.iter().find(|c| c.name.as_str() == k).unwrap();
        (c.value.as_ref().unwrap().to_string(), c.config_source)
    };
    assert_eq!(get("cleanup.policy"), ("compact".into(), 1));
    assert_eq!(get("preallocate"), ("true".into(), 1));
    assert_eq!(get("retention.ms"), ("3600000".into(), 4));
    assert_eq!(get("segment.bytes"), ("1073741824".into(), 5));
    assert!(configs.len() >= 22, "{}", configs.len());
    assert_eq!(b.overrides("t7")["cleanup.policy"], "compact");
}

#[test]
fn create_topics_errors_name_their_cause() {
    let b = start();
    let mut c = b.client();
    let (code, msg) = c.create(7, new_topic("rf3", 1, 3));
    assert_eq!(code, 38);
    assert!(msg.contains('3') && msg.contains("1 broker"), "{msg}");
    assert_eq!(c.create(7, new_topic("rf0", 1, 0)).0, 38);
    assert_eq!(c.create(7, new_topic("p0", 0, 1)).0, 37);
    assert_eq!(c.create(7, new_topic("bad name", 1, 1)).0, 17);
    assert_eq!(c.create(7, new_topic("__consumer_offsets", 1, 1)).0, 36);

    let (code, msg) = c.create(7, with_configs(new_topic("k", 1, 1), &[("no.such", "1")]));
    assert_eq!(code, 40);
    assert!(msg.contains("no.such"), "{msg}");
    let (code, msg) = c.create(
        7,
        with_configs(new_topic("k", 1, 1), &[("retention.ms", "soon")]),
    );
    assert_eq!(code, 40);
    assert!(
        msg.contains("retention.ms") && msg.contains("soon"),
        "{msg}"
    );
    assert_eq!(b.partitions("k"), None);

    // Manual assignment: onto this node works, onto any other broker does not.
    let assign = |broker_ids: Vec<i32>| {
        new_topic("manual", -1, -1).with_assignments(vec![CreatableReplicaAssignment::default()
            .with_partition_index(0)
            .with_broker_ids(broker_ids.into_iter().map(BrokerId).collect())])
    };
    let (code, msg) = c.create(7, assign(vec![NODE + 1]));
    assert_eq!(code, 39);
    assert!(msg.contains(&(NODE + 1).to_string()), "{msg}");
    assert_eq!(c.create(7, assign(vec![NODE, NODE])).0, 39);
    assert_eq!(c.create(7, assign(vec![NODE])).0, 0);
    assert_eq!(b.partitions("manual"), Some(1));

    // Duplicates in one request fail both; existing topics fail with 36.
    let r = c.create_topics(
        7,
        vec![new_topic("dup", 1, 1), new_topic("dup", 1, 1)],
        false,
    );
    assert_eq!(
        r.topics.iter().map(|t| t.error_code).collect::<Vec<_>>(),
        [42, 42]
    );
    assert_eq!(b.partitions("dup"), None);
    assert_eq!(c.create(2, new_topic("manual", 1, 1)).0, 36);
}

#[test]
fn create_topics_validate_only_creates_nothing() {
    let b = start();
    let mut c = b.client();
    let r = c.create_topics(7, vec![new_topic("dry", 5, 1)], true);
    assert_eq!(r.topics[0].error_code, 0);
    assert_eq!(r.topics[0].num_partitions, 5);
    assert!(r.topics[0].configs.as_ref().is_some_and(|c| !c.is_empty()));
    assert_eq!(b.partitions("dry"), None);
    let r = c.create_topics(7, vec![new_topic("dry", 5, 2)], true);
    assert_eq!(r.topics[0].error_code, 38);
}

// ---------------------------------------------------------------------------------------
// DeleteTopics

#[test]
fn delete_topics_by_name_and_by_id() {
    let b = start();
    let mut c = b.client();
    for n in ["d1", "d2", "d3"] {
        c.create(7, new_topic(n, 1, 1));
    }
    let request = DeleteTopicsRequest::default()
        .with_topic_names(vec![topic_name("d1"), topic_name("nope")])
        .with_timeout_ms(1000);
    let r: DeleteTopicsResponse = c.call(ApiKey::DeleteTopics, 1, &request);
    assert_eq!(r.responses[0].error_code, 0);
    assert_eq!(r.responses[1].error_code, 3);
    assert_eq!(b.partitions("d1"), None);

    let id = b.broker.state().topic("d2").unwrap().id;
    let unknown = uuid::Uuid::from_u128(7);
    // A timeout of 0 (the codec's default) would be REQUEST_TIMED_OUT, as in Kafka.
    let request = DeleteTopicsRequest::default()
        .with_timeout_ms(1000)
        .with_topics(vec![
            DeleteTopicState::default().with_topic_id(id),
            DeleteTopicState::default().with_topic_id(unknown),
            DeleteTopicState::default().with_name(Some(topic_name("d3"))),
            DeleteTopicState::default().with_name(Some(topic_name("__consumer_offsets"))),
        ]);
    let r: DeleteTopicsResponse = c.call(ApiKey::DeleteTopics, 6, &request);
    let d2 = &r.responses[0];
    assert_eq!((d2.error_code, d2.topic_id), (0, id));
    assert_eq!(d2.name.as_ref().unwrap().0.as_str(), "d2");
    assert_eq!(
        (r.responses[1].error_code, r.responses[1].topic_id),
        (100, unknown)
    );
    assert_eq!(r.responses[2].error_code, 0);
    assert_ne!(r.responses[3].error_code, 0);
    assert_eq!(b.broker.state().topic_names(), Vec::<String>::new());

    // The same topic twice is refused.
    c.create(7, new_topic("d4", 1, 1));
    let request =
        DeleteTopicsRequest::default().with_topic_names(vec![topic_name("d4"), topic_name("d4")]);
    let r: DeleteTopicsResponse = c.call(ApiKey::DeleteTopics, 5, &request);
    assert!(r.responses.iter().all(|t| t.error_code == 42));
    assert_eq!(b.partitions("d4"), Some(1));
}

// ---------------------------------------------------------------------------------------
// CreatePartitions

/// Grow `topic` to `count` partitions placed by the broker: null assignments, as clients
/// send (the codec's default, an empty list, is refused like Kafka refuses it).
fn grow(topic: &str, count: i32) -> CreatePartitionsTopic {
    CreatePartitionsTopic::default()
        .with_name(topic_name(topic))
        .with_count(count)
        .with_assignments(None)
}

#[test]
fn create_partitions_always_answers_every_topic() {
    let b = start();
    let mut c = b.client();
    c.create(7, new_topic("g", 1, 1));
    for version in 0..=3 {
        let count = 2 + i32::from(version);
        let request = CreatePartitionsRequest::default()
            .with_topics(vec![grow("g", count), grow("ghost", 2)])
            .with_timeout_ms(1000);
        let r: CreatePartitionsResponse = c.call(ApiKey::CreatePartitions, version, &request);
        assert_eq!(r.results.len(), 2, "v{version}");
        assert_eq!(r.results[0].name.0.as_str(), "g");
        assert_eq!(
            r.results[0].error_code, 0,
            "{:?}",
            r.results[0].error_message
        );
        assert_eq!(r.results[1].error_code, 3);
        // Kafka names an unknown topic by its code alone.
        assert_eq!(r.results[1].error_message, None);
        assert_eq!(b.partitions("g"), Some(count));
    }
    // Not an increase; validate_only; assignments onto this node and another.
    let request = CreatePartitionsRequest::default().with_topics(vec![grow("g", 2)]);
    let r: CreatePartitionsResponse = c.call(ApiKey::CreatePartitions, 3, &request);
    assert_eq!(r.results[0].error_code, 37);
    assert!(message(&r.results[0].error_message).contains('5'));
    let request = CreatePartitionsRequest::default()
        .with_topics(vec![grow("g", 9)])
        .with_validate_only(true);
    let r: CreatePartitionsResponse = c.call(ApiKey::CreatePartitions, 3, &request);
    assert_eq!(r.results[0].error_code, 0);
    assert_eq!(b.partitions("g"), Some(5));
    let onto = |node: i32| {
        grow("g", 6).with_assignments(Some(vec![
            CreatePartitionsAssignment::default().with_broker_ids(vec![BrokerId(node)])
        ]))
    };
    let r: CreatePartitionsResponse = c.call(
        ApiKey::CreatePartitions,
        1,
        &CreatePartitionsRequest::default().with_topics(vec![onto(NODE + 1)]),
    );
    assert_eq!(r.results[0].error_code, 39);
    let r: CreatePartitionsResponse = c.call(
        ApiKey::CreatePartitions,
        1,
        &CreatePartitionsRequest::default().with_topics(vec![onto(NODE)]),
    );
    assert_eq!(r.results[0].error_code, 0);
    assert_eq!(b.partitions("g"), Some(6));
    let meta = c.metadata(12, Some(&["g"]), false);
    assert_eq!(meta.topics[0].partitions.len(), 6);
}

// ---------------------------------------------------------------------------------------
// DescribeConfigs

const REQUIRED_TOPIC_KEYS: &[&str] = &[
    "cleanup.policy",
    "compression.type",
    "delete.retention.ms",
    "file.delete.delay.ms",
    "flush.messages",
    "flush.ms",
    "index.interval.bytes",
    "max.compaction.lag.ms",
    "max.message.bytes",
    "message.timestamp.type",
    "message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "min.insync.replicas",
    "preallocate",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.index.bytes",
    "segment.jitter.ms",
    "segment.ms",
    "unclean.leader.election.enable",
];

#[test]
fn describe_configs_topic_has_every_key_with_its_source() {
    let b = start_with(&[("log.segment.bytes", "2097152")]);
    let mut c = b.client();
    c.create(
        7,
        with_configs(new_topic("dc", 1, 1), &[("retention.ms", "1000")]),
    );
    for version in 1..=4 {
        let r = c.describe_configs(version, TOPIC, "dc", None, version % 2 == 0);
        assert_eq!(r.error_code, 0);
        for key in REQUIRED_TOPIC_KEYS {
            config(&r, key);
        }
        assert_eq!(config(&r, "retention.ms"), ("1000", 1));
        assert_eq!(config(&r, "segment.bytes"), ("2097152", 4));
        assert_eq!(config(&r, "cleanup.policy"), ("delete", 5));
        assert_eq!(config(&r, "max.message.bytes"), ("1048588", 5));
        for e in &r.configs {
            assert!(!e.read_only && !e.is_sensitive, "{}", e.name.as_str());
            if version >= 3 {
                assert_eq!(e.documentation, None);
                assert_ne!(e.config_type, 0, "{}", e.name.as_str());
            }
        }
        if version >= 3 {
            let kind = |k: &str| {
                r.configs
                    .iter()
                    .find(|c| c.name.as_str() == k)
                    .unwrap()
                    .config_type
            };
            assert_eq!(kind("cleanup.policy"), 7);
            assert_eq!(kind("retention.ms"), 5);
            assert_eq!(kind("preallocate"), 1);
        }
        let retention = r
            .configs
            .iter()
            .find(|c| c.name.as_str() == "retention.ms")
            .unwrap();
        if version % 2 == 0 {
            let synonyms: Vec<_> = retention
                .synonyms
                .iter()
                .map(|s| (s.name.to_string(), s.source))
                .collect();
            assert_eq!(synonyms[0], ("retention.ms".to_string(), 1));
            assert!(synonyms.len() >= 2, "{synonyms:?}");
            let seg = r
                .configs
                .iter()
                .find(|c| c.name.as_str() == "segment.bytes")
                .unwrap();
            assert_eq!(seg.synonyms[0].name.as_str(), "log.segment.bytes");
            assert_eq!(seg.synonyms[0].source, 4);
        } else {
            assert!(retention.synonyms.is_empty());
        }
    }
    // configuration_keys filter.
    let r = c.describe_configs(4, TOPIC, "dc", Some(&["retention.ms", "segment.ms"]), false);
    let mut names: Vec<_> = r.configs.iter().map(|c| c.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["retention.ms", "segment.ms"]);
    // Unknown topic, and an unsupported resource type.
    let r = c.describe_configs(4, TOPIC, "nope", None, false);
    assert_eq!(r.error_code, 3);
    assert!(r.configs.is_empty());
    assert_ne!(c.describe_configs(4, 8, "x", None, false).error_code, 0);
}

#[test]
fn describe_configs_broker() {
    let b = start_with(&[
        ("num.partitions", "5"),
        ("ssl.keystore.password", "hunter2"),
        ("log.retention.hours", "2"),
    ]);
    let mut c = b.client();
    // The cluster-default entity ("") describes only dynamic cluster-wide values, as
    // Kafka's does: none are set here.
    let r = c.describe_configs(4, BROKER, "", None, true);
    assert_eq!(r.error_code, 0);
    assert!(r
        .configs
        .iter()
        .all(|c| c.name.as_str() != "num.partitions"));
    for name in [NODE.to_string()] {
        let r = c.describe_configs(4, BROKER, &name, None, true);
        assert_eq!(r.error_code, 0);
        assert_eq!(config(&r, "num.partitions"), ("5", 4));
        assert_eq!(config(&r, "node.id"), ("7", 4));
        assert_eq!(config(&r, "default.replication.factor"), ("1", 5));
        assert_eq!(config(&r, "auto.create.topics.enable"), ("true", 5));
        assert_eq!(config(&r, "log.retention.hours"), ("2", 4));
        // As Kafka 4.1.1 describes it: log.retention.ms shows its own value (null, from
        // no layer), whatever log.retention.hours makes of retention.ms.
        let ms = r
            .configs
            .iter()
            .find(|c| c.name.as_str() == "log.retention.ms")
            .unwrap();
        assert_eq!((ms.value.as_deref(), ms.config_source), (None, 5));
        assert!(ms.synonyms.is_empty());
        assert_eq!(config(&r, "log.roll.hours"), ("168", 5));
        assert_eq!(config(&r, "log.segment.bytes"), ("1073741824", 5));
        for key in [
            "message.max.bytes",
            "socket.request.max.bytes",
            "log.dirs",
            "listeners",
        ] {
            config(&r, key);
        }
        let secret = r
            .configs
            .iter()
            .find(|c| c.name.as_str() == "ssl.keystore.password")
            .unwrap();
        assert!(secret.is_sensitive);
        assert_eq!(secret.value, None);
        assert!(secret.synonyms.iter().all(|s| s.value.is_none()));
        // Schema keys nobody set: their type, Kafka's default (null included), the
        // dynamic-update class as read_only, and PASSWORD keys as sensitive.
        let entry = |k: &str| r.configs.iter().find(|c| c.name.as_str() == k).unwrap();
        assert_eq!(config(&r, "zookeeper.connect"), ("<null>", 5));
        assert_eq!(config(&r, "group.initial.rebalance.delay.ms"), ("3000", 5));
        assert_eq!(config(&r, "offsets.topic.num.partitions"), ("50", 5));
        assert_eq!(entry("log.retention.ms").config_type, 5);
        assert_eq!(entry("auto.create.topics.enable").config_type, 1);
        assert_eq!(entry("log.dirs").config_type, 2);
        assert!(entry("num.partitions").read_only);
        assert!(!entry("log.retention.ms").read_only);
        let unset_secret = entry("ssl.truststore.password");
        assert!(unset_secret.is_sensitive && unset_secret.value.is_none());
        assert_eq!(entry("ssl.truststore.password").config_type, 9);
    }
    let r = c.describe_configs(1, BROKER, "99", None, false);
    assert_eq!(r.error_code, 42);
}

// ---------------------------------------------------------------------------------------
// AlterConfigs / IncrementalAlterConfigs

#[test]
fn alter_configs_replaces_the_override_set_and_reaches_the_logs() {
    let b = start();
    let mut c = b.client();
    c.create(
        7,
        with_configs(new_topic("ac", 2, 1), &[("cleanup.policy", "compact")]),
    );
    for version in 0..=2 {
        let ms = format!("{}", 60_000 + i64::from(version));
        assert_eq!(c.alter(version, "ac", &[("retention.ms", &ms)], false).0, 0);
        assert_eq!(
            b.overrides("ac"),
            BTreeMap::from([("retention.ms".to_string(), ms.clone())])
        );
        let p = b.broker.state().partition("ac", 1).unwrap();
        assert_eq!(
            p.log.lock().unwrap().config().retention_ms,
            60_000 + i64::from(version)
        );
    }
    // validate_only and failures change nothing.
    assert_eq!(c.alter(2, "ac", &[("segment.ms", "5000")], true).0, 0);
    let (code, msg) = c.alter(2, "ac", &[("bogus.key", "1")], false);
    assert_eq!(code, 40);
    assert!(msg.contains("bogus.key"));
    let (code, msg) = c.alter(2, "ac", &[("segment.bytes", "-5")], false);
    assert_eq!(code, 40);
    assert!(msg.contains("segment.bytes") && msg.contains("-5"), "{msg}");
    assert_eq!(b.overrides("ac").len(), 1);
    assert_eq!(c.alter(2, "missing", &[("retention.ms", "1")], false).0, 3);
    let r = c.describe_configs(4, TOPIC, "ac", Some(&["retention.ms"]), false);
    assert_eq!(config(&r, "retention.ms"), ("60002", 1));

    // A read-only broker key is refused by name, not pretended (dynamic ones are issue
    // 21's, tested in tests/dyncfg).
    let resource = alter_configs_request::AlterConfigsResource::default()
        .with_resource_type(BROKER)
        .with_resource_name(StrBytes::from_string(NODE.to_string()))
        .with_configs(vec![alter_configs_request::AlterableConfig::default()
            .with_name(StrBytes::from_static_str("log.dirs"))
            .with_value(Some(StrBytes::from_static_str("/elsewhere")))]);
    let r: AlterConfigsResponse = c.call(
        ApiKey::AlterConfigs,
        1,
        &AlterConfigsRequest::default().with_resources(vec![resource]),
    );
    // INVALID_REQUEST, as Kafka 4.1.1 refuses a broker key it cannot change dynamically.
    assert_eq!(r.responses[0].error_code, 42);
    assert!(message(&r.responses[0].error_message).contains("log.dirs"));
}

#[test]
fn incremental_alter_configs_operations() {
    const SET: i8 = 0;
    const DELETE: i8 = 1;
    const APPEND: i8 = 2;
    const SUBTRACT: i8 = 3;
    let b = start();
    let mut c = b.client();
    c.create(
        7,
        with_configs(new_topic("inc", 1, 1), &[("retention.ms", "5000")]),
    );
    let ops: &[(&str, i8, Option<&str>)] = &[
        ("segment.ms", SET, Some("90000")),
        ("retention.ms", DELETE, None),
        ("cleanup.policy", APPEND, Some("compact")),
    ];
    assert_eq!(
        c.incremental(0, TOPIC, "inc", ops, false),
        (0, String::new())
    );
    assert_eq!(
        b.overrides("inc"),
        BTreeMap::from([
            ("cleanup.policy".to_string(), "delete,compact".to_string()),
            ("segment.ms".to_string(), "90000".to_string()),
        ])
    );
    let p = b.broker.state().partition("inc", 0).unwrap();
    assert_eq!(p.log.lock().unwrap().config().segment_ms, 90_000);

    let ops: &[(&str, i8, Option<&str>)] = &[("cleanup.policy", SUBTRACT, Some("delete"))];
    assert_eq!(c.incremental(1, TOPIC, "inc", ops, false).0, 0);
    assert_eq!(b.overrides("inc")["cleanup.policy"], "compact");

    // APPEND on a non-list key, unknown keys, duplicates, validate_only, brokers.
    let (code, msg) = c.incremental(
        1,
        TOPIC,
        "inc",
        &[("retention.ms", APPEND, Some("1"))],
        false,
    );
    assert_eq!(code, 40);
    assert!(msg.contains("retention.ms"));
    assert_eq!(
        c.incremental(1, TOPIC, "inc", &[("x.y", SET, Some("1"))], false)
            .0,
        40
    );
    let dup: &[(&str, i8, Option<&str>)] = &[
        ("segment.ms", SET, Some("1")),
        ("segment.ms", SET, Some("2")),
    ];
    assert_eq!(c.incremental(1, TOPIC, "inc", dup, false).0, 42);
    assert_eq!(
        c.incremental(1, TOPIC, "inc", &[("segment.ms", SET, Some("7"))], true)
            .0,
        0
    );
    assert_eq!(b.overrides("inc")["segment.ms"], "90000");
    assert_eq!(
        c.incremental(1, TOPIC, "nope", &[("segment.ms", SET, Some("7"))], false)
            .0,
        3
    );
    let broker = NODE.to_string();
    let (code, msg) = c.incremental(
        1,
        BROKER,
        &broker,
        &[("num.partitions", SET, Some("3"))],
        false,
    );
    assert_eq!(code, 42);
    assert!(msg.contains("num.partitions"));
}

// ---------------------------------------------------------------------------------------
// DescribeCluster

#[test]
fn describe_cluster() {
    let b = start();
    let mut c = b.client();
    for version in 0..=1 {
        let r: DescribeClusterResponse = c.call(
            ApiKey::DescribeCluster,
            version,
            &DescribeClusterRequest::default(),
        );
        assert_eq!(r.error_code, 0);
        assert_eq!(r.cluster_id.as_str(), b.broker.state().cluster_id);
        assert_eq!(r.controller_id, BrokerId(NODE));
        assert_eq!(r.brokers.len(), 1);
        assert_eq!(r.brokers[0].broker_id, BrokerId(NODE));
        assert_eq!(r.brokers[0].port, b.addr().port() as i32);
        assert_eq!(r.cluster_authorized_operations, i32::MIN);
        if version == 1 {
            assert_eq!(r.endpoint_type, 1);
        }
    }
    let r: DescribeClusterResponse = c.call(
        ApiKey::DescribeCluster,
        1,
        &DescribeClusterRequest::default().with_endpoint_type(2),
    );
    assert_eq!(r.error_code, 114);
}

/// Requests that wait for the admin lock wait off the runtime's worker threads: with a
/// 3,000-partition CreateTopics holding the lock, two IncrementalAlterConfigs or two
/// idempotent InitProducerIds (one per worker thread) once stalled the whole broker until
/// it finished, fresh connections included (found by the conformance fuzzer).
#[test]
fn admin_requests_queued_behind_a_big_create_leave_the_broker_serving() {
    let b = start();
    let addr = b.addr();
    assert_eq!(b.client().create(7, new_topic("small", 1, 1)).0, 0);
    let create = std::thread::spawn(move || {
        let mut c = Client::connect(addr);
        let started = std::time::Instant::now();
        let (code, message) = c.create(7, new_topic("big", 3_000, 1));
        (code, message, started.elapsed())
    });
    // Let the create take the admin lock (it holds it for seconds).
    std::thread::sleep(std::time::Duration::from_millis(300));
    let alters: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                c.incremental(
                    1,
                    TOPIC,
                    "small",
                    &[("retention.ms", 0, Some("60000"))],
                    false,
                )
            })
        })
        .collect();
    let producers: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                let r: InitProducerIdResponse = Client::connect(addr).call(
                    ApiKey::InitProducerId,
                    4,
                    &InitProducerIdRequest::default()
                        .with_transactional_id(None)
                        .with_transaction_timeout_ms(60_000)
                        .with_producer_id((-1).into())
                        .with_producer_epoch(-1),
                );
                r.error_code
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let versions: ApiVersionsResponse =
        Client::connect(addr).call(ApiKey::ApiVersions, 2, &ApiVersionsRequest::default());
    let answered_in = started.elapsed();
    assert_eq!(versions.error_code, 0);
    let (code, message, create_took) = create.join().unwrap();
    assert_eq!(code, 0, "{message}");
    for alter in alters {
        assert_eq!(alter.join().unwrap().0, 0);
    }
    for producer in producers {
        assert_eq!(producer.join().unwrap(), 0);
    }
    // Ordering, not speed: the ApiVersions, sent 600 ms after the create, was answered
    // well before the create (a stalled broker answers both at the same moment).
    let create_left = create_took.saturating_sub(std::time::Duration::from_millis(600));
    assert!(
        answered_in < create_left / 2,
        "ApiVersions took {answered_in:?} while the create took {create_took:?}"
    );
}
