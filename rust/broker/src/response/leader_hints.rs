//! KIP-951 leader discovery: a Produce (v10+) or Fetch (v16+) partition refused because
//! this broker does not lead it names the partition's current leader and epoch, and the
//! response lists that leader's endpoint, so the client moves there without first asking
//! Metadata (librdkafka 2.4+ and the Java client 3.7+ do).
//!
//! As Kafka's `KafkaApis.getCurrentLeader`: the leader and epoch this broker knows for the
//! partition, (-1, -1) when it knows no such partition; the endpoint only while that leader
//! is a live broker, on the addresses Metadata gives the same connection.

use std::collections::BTreeMap;

use crate::cluster::BrokerNode;
use crate::state::BrokerState;

/// Collects the leaders one response names.
pub struct LeaderHints<'a> {
    state: &'a BrokerState,
    listener: &'a str,
    /// Live brokers, read once per response on first need.
    live: Option<Vec<BrokerNode>>,
    named: BTreeMap<i32, BrokerNode>,
}

impl<'a> LeaderHints<'a> {
    #[must_use]
    pub fn new(state: &'a BrokerState, listener: &'a str) -> LeaderHints<'a> {
        LeaderHints {
            state,
            listener,
            live: None,
            named: BTreeMap::new(),
        }
    }

    /// (leader id, leader epoch) of partition `index` of `topic`; the leader's endpoint is
    /// kept for `endpoints` when it is alive.
    pub fn current_leader(&mut self, topic: &str, index: i32) -> (i32, i32) {
        let replica = self.state.topic(topic).and_then(|t| t.replica_state(index));
        let Some(replica) = replica else {
            return (-1, -1);
        };
        if replica.leader >= 0 && !self.named.contains_key(&replica.leader) {
            let (state, listener) = (self.state, self.listener);
            let live = self
                .live
                .get_or_insert_with(|| state.live_brokers_on(listener));
            if let Some(node) = live.iter().find(|b| b.node_id == replica.leader) {
                self.named.insert(node.node_id, node.clone());
            }
        }
        (replica.leader, replica.leader_epoch)
    }

    /// The endpoints of the leaders named so far, by node id.
    #[must_use]
    pub fn endpoints(self) -> Vec<BrokerNode> {
        self.named.into_values().collect()
    }
}
