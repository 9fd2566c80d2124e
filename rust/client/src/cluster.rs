//! The cluster as a Metadata answer describes it: brokers, and topics' partitions with
//! their leaders and replicas.

use std::collections::BTreeMap;

use crate::address::Address;

/// (topic, partition).
pub type TopicPartition = (String, i32);

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metadata {
    /// node id -> address.
    pub brokers: BTreeMap<i32, Address>,
    /// Every topic the broker described, with or without an error.
    pub topics: BTreeMap<String, TopicMetadata>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct TopicMetadata {
    /// 0, or why the topic could not be described (3: UNKNOWN_TOPIC_OR_PARTITION).
    pub error_code: i16,
    pub is_internal: bool,
    /// By partition index.
    pub partitions: Vec<PartitionMetadata>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartitionMetadata {
    pub partition: i32,
    pub error_code: i16,
    /// Node id of the leader, -1 when there is none.
    pub leader: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

impl Metadata {
    /// Where the leader of `topic`/`partition` listens, when known.
    #[must_use]
    pub fn leader_address(&self, topic: &str, partition: i32) -> Option<Address> {
        let leader = self
            .topics
            .get(topic)?
            .partitions
            .iter()
            .find(|p| p.partition == partition)?
            .leader;
        self.brokers.get(&leader).cloned()
    }
}
