//! What the transaction coordinator asks of its broker beyond any coordinator's needs
//! (`coordinator::host`): producer ids, and what delivering markers takes (the other
//! brokers and how to reach them, and the group coordinator's part in a marker written to
//! `__consumer_offsets`, which the broker hands over: this coordinator knows no other).

use std::time::Duration;

use crate::cluster::metadata_view::BrokerNode;
use crate::config::BrokerConfig;
use crate::coordinator::host::CoordinatorHost;
use crate::replication::inter_broker::InterBroker;

pub trait TxnHost: CoordinatorHost {
    /// A new producer id (InitProducerId's counter; in a cluster, from the controller's
    /// blocks).
    fn allocate_producer_id(&self) -> anyhow::Result<i64>;
    /// The live brokers as the controller last described them; `None` on a single node.
    fn cluster_brokers(&self) -> Option<Vec<BrokerNode>>;
    /// The inter-broker listener and its TLS / SASL (cluster mode).
    fn inter_broker(&self) -> Option<&InterBroker>;
    /// The broker's config (the timeouts of its own requests to other brokers).
    fn broker_config(&self) -> &BrokerConfig;
    /// A marker was appended to partition `partition` of `__consumer_offsets`: the group
    /// coordinator settles `producer_id`'s transactional offsets there.
    fn complete_txn_offsets(&self, partition: i32, producer_id: i64, commit: bool);
    /// How long a marker's append waits for the ISR (`request.timeout.ms`).
    fn marker_replication_wait(&self) -> Duration;
}
