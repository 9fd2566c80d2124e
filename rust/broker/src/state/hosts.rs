//! The broker as its coordinators' host (`coordinator::host`, `groups::host`,
//! `transactions::host`): what they ask of it, answered from its parts.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::BrokerState;
use crate::cluster::metadata_view::BrokerNode;
use crate::cluster::topic::Topic;
use crate::config::group::ConsumerTimeouts;
use crate::config::BrokerConfig;
use crate::coordinator::host::CoordinatorHost;
use crate::errors::ApiError;
use crate::groups::host::GroupHost;
use crate::replication::inter_broker::InterBroker;
use crate::transactions::host::TxnHost;

impl CoordinatorHost for BrokerState {
    fn node_id(&self) -> i32 {
        self.config.node_id
    }

    fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        BrokerState::topic(self, name)
    }

    fn topic_names(&self) -> Vec<String> {
        BrokerState::topic_names(self)
    }

    fn create_internal_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<Arc<Topic>, ApiError> {
        BrokerState::create_internal_topic(self, name, partitions, configs)
    }

    fn data_arrived(&self) -> &Notify {
        &self.data_arrived
    }
}

impl GroupHost for BrokerState {
    fn consumer_timeouts(&self, group_id: &str) -> ConsumerTimeouts {
        self.group_configs
            .consumer_timeouts(group_id, &self.dynamic.live().settings)
    }
}

impl TxnHost for BrokerState {
    fn allocate_producer_id(&self) -> anyhow::Result<i64> {
        BrokerState::allocate_producer_id(self)
    }

    fn cluster_brokers(&self) -> Option<Vec<BrokerNode>> {
        self.cluster.as_ref().map(|link| link.info().brokers)
    }

    fn inter_broker(&self) -> Option<&InterBroker> {
        self.fetchers.as_ref().map(|f| &f.inter_broker)
    }

    fn broker_config(&self) -> &BrokerConfig {
        &self.config
    }

    fn complete_txn_offsets(&self, partition: i32, producer_id: i64, commit: bool) {
        self.groups
            .complete_txn_offsets(partition, producer_id, commit);
    }

    fn marker_replication_wait(&self) -> Duration {
        self.transactions.config().writes.replication_wait
    }
}

impl crate::share::ShareHost for BrokerState {
    fn share_settings(&self, group: &str) -> crate::share::ShareSettings {
        self.group_configs
            .share_settings(group, &self.dynamic.live().settings)
    }

    fn topic_by_id(&self, id: uuid::Uuid) -> Option<Arc<Topic>> {
        BrokerState::topic_by_id(self, id)
    }

    fn other_group_type(&self, group: &str) -> Option<String> {
        self.groups
            .list(&[])
            .into_iter()
            .find(|g| g.group_id == group)
            .map(|g| g.group_type.to_string())
    }

    fn max_share_sessions(&self) -> usize {
        usize::try_from(
            self.dynamic
                .live()
                .settings
                .int("group.share.max.share.sessions"),
        )
        .unwrap_or(usize::MAX)
    }
}
