//! What every script file shares: the `Script` a file registers, and the setup steps
//! (creating a topic, producing, waiting until both brokers agree) scripts play.

use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, FetchRequest, GroupId, ListOffsetsRequest,
    MetadataRequest, OffsetCommitRequest, OffsetFetchRequest, ProduceRequest, TopicName,
    TxnOffsetCommitRequest,
};
use kafka_protocol::protocol::StrBytes;
use kafkalite_core::records::{encode_batch, Compression, Header, RecordInput};

use crate::session::{Session, Side};

/// One scripted sequence for one API, run once per version.
pub struct Script {
    pub name: &'static str,
    pub api: ApiKey,
    /// In the quick subset CI runs.
    pub quick: bool,
    pub run: fn(&mut Session, i16),
}

pub fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

pub fn topic(name: &str) -> TopicName {
    TopicName(text(name))
}

pub fn group(name: &str) -> GroupId {
    GroupId(text(name))
}

/// Versions at which setup steps run: supported by both brokers for their whole life.
pub const CREATE_TOPICS_SETUP_V: i16 = 5;
pub const PRODUCE_SETUP_V: i16 = 8;

/// Create `name` with `partitions` partitions and `configs` (a compared setup step).
pub fn create_topic(s: &mut Session, name: &str, partitions: i32, configs: &[(&str, &str)]) {
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(topic(name))
            .with_num_partitions(partitions)
            .with_replication_factor(1)
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        CreatableTopicConfig::default()
                            .with_name(text(k))
                            .with_value(Some(text(v)))
                    })
                    .collect(),
            )]);
    s.play("setup: create topic", CREATE_TOPICS_SETUP_V, |_| {
        request.clone()
    });
    settle(s, name);
    learn_topic_id(s, name);
}

/// Keep each side's id of topic `name` in its vars (uncompared: ids are random per
/// cluster), for the versions that name topics by id (Produce v13+, Fetch v13+).
pub fn learn_topic_id(s: &mut Session, name: &str) {
    let request = MetadataRequest::default()
        .with_allow_auto_topic_creation(false)
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(topic(name)))
        ]));
    for side in 0..2 {
        if let Ok(r) = s.call_unrecorded(side, &request, 12) {
            if let Some(t) = r.topics.first().filter(|t| !t.topic_id.is_nil()) {
                s.sides[side]
                    .vars
                    .insert(format!("id:{name}"), t.topic_id.to_string());
            }
        }
    }
}

/// `side`'s id of topic `name`; nil when it has none (an unknown topic: both brokers then
/// answer UNKNOWN_TOPIC_ID).
#[must_use]
pub fn topic_id(side: &Side, name: &str) -> uuid::Uuid {
    side.vars
        .get(&format!("id:{name}"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_default()
}

/// `request` with each topic's id as `side` knows it (the name stays for versions < 13).
#[must_use]
pub fn with_produce_ids(side: &Side, mut request: ProduceRequest) -> ProduceRequest {
    for t in &mut request.topic_data {
        t.topic_id = topic_id(side, t.name.as_str());
    }
    request
}

/// `request` with each topic's id as `side` knows it (the name stays for versions < 13).
#[must_use]
pub fn with_fetch_ids(side: &Side, mut request: FetchRequest) -> FetchRequest {
    for t in &mut request.topics {
        t.topic_id = topic_id(side, t.topic.as_str());
    }
    request
}

/// `request` with each topic's id as `side` knows it, for OffsetCommit v10+ (the name
/// stays for older versions).
#[must_use]
pub fn with_commit_ids(side: &Side, mut request: OffsetCommitRequest) -> OffsetCommitRequest {
    for t in &mut request.topics {
        t.topic_id = topic_id(side, t.name.as_str());
    }
    request
}

/// `request` with each named topic's id as `side` knows it, for OffsetFetch v10+.
#[must_use]
pub fn with_offset_fetch_ids(side: &Side, mut request: OffsetFetchRequest) -> OffsetFetchRequest {
    for g in &mut request.groups {
        for t in g.topics.iter_mut().flatten() {
            t.topic_id = topic_id(side, t.name.as_str());
        }
    }
    request
}

/// `request` with each topic's id as `side` knows it, for TxnOffsetCommit v6+.
#[must_use]
pub fn with_txn_commit_ids(
    side: &Side,
    mut request: TxnOffsetCommitRequest,
) -> TxnOffsetCommitRequest {
    for t in &mut request.topics {
        t.topic_id = topic_id(side, t.name.as_str());
    }
    request
}

/// Ask both brokers (uncompared) until `ready` holds for each, or 10 s pass: Kafka applies
/// an admin change (ACLs, quotas, credentials) through its controller, a moment after it
/// answers the request that made it.
#[track_caller]
pub fn until_both(s: &mut Session, mut ready: impl FnMut(&mut Session, usize) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if (0..2).all(|side| ready(s, side)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let waiting: Vec<usize> = (0..2).filter(|&side| !ready(s, side)).collect();
    eprintln!(
        "conformance: {}: gave up waiting 10 s for side(s) {waiting:?} (0 kafkalite, 1 kafka)",
        std::panic::Location::caller()
    );
}

/// Wait (uncompared) until both brokers name a leader for every partition of `name`:
/// Kafka's broker learns a new topic from its controller a moment after CreateTopics
/// answers, and answers NOT_LEADER_OR_FOLLOWER until then.
pub fn settle(s: &mut Session, name: &str) {
    let request = MetadataRequest::default()
        .with_allow_auto_topic_creation(false)
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(topic(name)))
        ]));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        let partitions = (0..2).map(|side| {
            s.call_unrecorded(side, &request, 9).ok().and_then(|r| {
                let ok = r.topics.iter().all(|t| {
                    t.error_code == 0
                        && !t.partitions.is_empty()
                        && t.partitions.iter().all(|p| p.leader_id.0 >= 0)
                });
                ok.then(|| r.topics.first().map_or(0, |t| t.partitions.len()))
            })
        });
        let counts: Vec<Option<usize>> = partitions.collect();
        // The metadata cache names a leader a moment before the partition serves as one:
        // ListOffsets goes through the replica manager, as Produce and Fetch do.
        let ready = counts.iter().enumerate().all(|(side, count)| {
            count.is_some_and(|n| {
                let offsets = ListOffsetsRequest::default()
                    .with_replica_id(BrokerId(-1))
                    .with_topics(vec![ListOffsetsTopic::default()
                        .with_name(topic(name))
                        .with_partitions(
                            (0..n as i32)
                                .map(|p| {
                                    ListOffsetsPartition::default()
                                        .with_partition_index(p)
                                        .with_timestamp(-1)
                                })
                                .collect(),
                        )]);
                s.call_unrecorded(side, &offsets, 5).is_ok_and(|r| {
                    r.topics
                        .iter()
                        .flat_map(|t| &t.partitions)
                        .all(|p| p.error_code == 0)
                })
            })
        });
        if ready {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A record batch of `count` records with fixed CreateTime timestamps, keys, values and a
/// header, so both brokers store byte-identical batches.
pub fn batch(count: usize, value_bytes: usize) -> bytes::Bytes {
    let records: Vec<RecordInput> = (0..count)
        .map(|i| RecordInput {
            timestamp: 1_700_000_000_000 + i as i64,
            key: Some(format!("key-{i}").into_bytes()),
            value: Some(vec![b'v'; value_bytes]),
            headers: vec![Header {
                key: b"h".to_vec(),
                value: Some(b"1".to_vec()),
            }],
        })
        .collect();
    bytes::Bytes::from(encode_batch(&records, Compression::None, 0).expect("valid batch"))
}

/// A Produce request of `records` bytes to one partition with acks=-1.
pub fn produce_request(
    name: &str,
    partition: i32,
    records: Option<bytes::Bytes>,
) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic(name))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(records)])])
}

/// Produce `batches` batches of 3 records to `name`/0 (a compared setup step).
pub fn produce(s: &mut Session, name: &str, batches: usize) {
    for _ in 0..batches {
        let request = produce_request(name, 0, Some(batch(3, 16)));
        s.play("setup: produce", PRODUCE_SETUP_V, |_| request.clone());
    }
}
