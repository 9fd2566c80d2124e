//! Writing a transaction's COMMIT or ABORT markers into its partitions (Kafka's
//! `TransactionMarkerChannelManager`). A partition this broker leads (every partition on a
//! single node) gets its marker appended here; in a cluster the others get theirs through
//! WriteTxnMarkers to their leader, sent with the project's client (each request bounded
//! by `request.timeout.ms`, each connection by `socket.connection.setup.timeout.ms`).
//! Leaders move: a retriable answer (or an unreachable broker) sends the marker again, to
//! whoever leads the partition by then, until it is written or the coordinator is no
//! longer this broker (its successor completes the transaction from the logged Prepare
//! state). A partition whose topic was deleted is skipped; an answer saying the marker is
//! stale (fenced epoch) is final.
//!
//! A marker in `__consumer_offsets` also settles the offsets the transaction committed
//! there (`GroupCoordinator::complete_txn_offsets`), here or on the partition's leader.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use kafkalite_client::{Address, Client, ClientConfig, TxnMarker};
use kafkalite_core::error_codes as codes;
use kafkalite_core::logging;
use kafkalite_core::storage::clock::now_ms;

use crate::cluster::topic::INTERNAL_OFFSETS_TOPIC;
use crate::cluster::Partition;
use crate::coordinator::internal_log;
use crate::replication::inter_broker::InterBroker;
use crate::replication::SetupTimeout;
use crate::transactions::host::TxnHost;

/// The coordinator epoch of a single node (it never changes coordinator).
pub const COORDINATOR_EPOCH: i32 = 0;
/// Local append attempts per partition before the failure is logged and it is skipped.
const ATTEMPTS: usize = 3;
const RETRY_BACKOFF: Duration = Duration::from_millis(100);
const LOGGER: &str = "kafkalite.coordinator.transaction.TransactionMarkerChannelManager";

/// One transaction's marker.
#[derive(Clone, Copy, Debug)]
pub struct Marker {
    pub producer_id: i64,
    pub epoch: i16,
    pub commit: bool,
    pub coordinator_epoch: i32,
    /// WriteTxnMarkers v2's: 2 makes the partition's epoch check strict
    /// (`Partition::append_marker`). This broker's own coordinator writes 0.
    pub transaction_version: i8,
}

/// Connections to the other brokers, kept between transactions.
#[derive(Default)]
pub struct MarkerChannel {
    client: Mutex<Option<Client>>,
}

impl MarkerChannel {
    /// Write every marker; false when the coordinator stopped being this broker's
    /// (`still_ours` said so) before all were written.
    pub fn write(
        &self,
        broker: &dyn TxnHost,
        m: &Marker,
        partitions: &BTreeSet<(String, i32)>,
        still_ours: &dyn Fn() -> bool,
    ) -> bool {
        if broker.cluster_brokers().is_none() {
            write_local_all(broker, m, partitions);
            return true;
        }
        let node = broker.node_id();
        let mut left: BTreeSet<(String, i32)> = partitions.clone();
        let mut backoff = RETRY_BACKOFF;
        loop {
            // Where each partition is now: here, on another leader, or nowhere yet.
            let mut remote: BTreeMap<Address, Vec<(String, i32)>> = BTreeMap::new();
            let brokers = broker.cluster_brokers().unwrap_or_default();
            for (topic, index) in left.clone() {
                // The leader as the controller says, whether or not this broker hosts a
                // replica of the partition (logs are opened only where replicas live).
                let Some(t) = broker.topic(&topic) else {
                    // The topic was deleted: nothing to mark.
                    left.remove(&(topic, index));
                    continue;
                };
                let Some(replica) = usize::try_from(index)
                    .ok()
                    .and_then(|i| t.replica_states().get(i).cloned())
                else {
                    left.remove(&(topic, index));
                    continue;
                };
                let leader = replica.leader;
                if leader == node {
                    // Led here but not opened yet: the next round writes it.
                    let Some(partition) = t.partition(index) else {
                        continue;
                    };
                    match write_local(broker, &partition, m, Some(node)) {
                        Ok(()) => {
                            left.remove(&(topic, index));
                        }
                        Err(code) if retriable(code) => {}
                        Err(code) => {
                            give_up(m, &topic, index, code);
                            left.remove(&(topic, index));
                        }
                    }
                    continue;
                }
                // Brokers reach each other on the inter-broker listener, as the replica
                // fetchers do.
                let address = brokers.iter().find(|b| b.node_id == leader).and_then(|b| {
                    let (host, port) = match inter_broker(broker) {
                        Some(ib) => b
                            .endpoints
                            .iter()
                            .find(|(name, _, _)| *name == ib.listener)
                            .map(|(_, h, p)| (h.clone(), *p))?,
                        None => (b.host.clone(), b.port),
                    };
                    Some(Address {
                        host,
                        port: u16::try_from(port).ok()?,
                    })
                });
                if let Some(address) = address {
                    remote.entry(address).or_default().push((topic, index));
                }
            }
            for (address, partitions) in remote {
                let marker = TxnMarker {
                    producer_id: m.producer_id,
                    producer_epoch: m.epoch,
                    commit: m.commit,
                    coordinator_epoch: m.coordinator_epoch,
                    partitions,
                };
                match self.send(broker, &address, &marker) {
                    Ok(results) => {
                        for ((topic, index), code) in results {
                            if code == codes::NONE {
                                left.remove(&(topic, index));
                            } else if !retriable(code) {
                                give_up(m, &topic, index, code);
                                left.remove(&(topic, index));
                            }
                        }
                    }
                    Err(e) => logging::warn(
                        LOGGER,
                        &format!("markers to {address} not sent (will retry): {e}"),
                    ),
                }
            }
            if left.is_empty() {
                broker.data_arrived().notify_waiters();
                return true;
            }
            if !still_ours() {
                return false;
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    }

    fn send(
        &self,
        broker: &dyn TxnHost,
        address: &Address,
        marker: &TxnMarker,
    ) -> kafkalite_client::Result<Vec<((String, i32), i16)>> {
        let mut client = self.client.lock().expect("lock");
        let client = client.get_or_insert_with(|| {
            // The bootstrap list is never used: every request names its broker.
            let security = inter_broker(broker)
                .map(|ib| ib.security.clone())
                .unwrap_or_default();
            Client::with_security(&address.to_string(), marker_client_config(broker), security)
                .expect("an address from the cluster view parses")
        });
        let call = client.write_txn_markers(address, marker);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => handle.block_on(call),
            Err(_) => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|source| kafkalite_client::Error::Io {
                    broker: address.to_string(),
                    source,
                })?
                .block_on(call),
        }
    }
}

/// The broker's own requests to other brokers, as Kafka's marker channel bounds them: each
/// by `request.timeout.ms`, connecting by `socket.connection.setup.timeout.ms`.
fn marker_client_config(broker: &dyn TxnHost) -> ClientConfig {
    let settings = &broker.broker_config().settings;
    let request_ms = u64::try_from(settings.int("request.timeout.ms")).unwrap_or(0);
    ClientConfig {
        request_timeout: Duration::from_millis(request_ms),
        connect_timeout: Some(SetupTimeout::from_broker(broker.broker_config()).base),
        ..ClientConfig::default()
    }
}

/// The inter-broker listener and its TLS / SASL (cluster mode).
fn inter_broker(broker: &dyn TxnHost) -> Option<&InterBroker> {
    broker.inter_broker()
}

/// Answers after which the same marker may succeed later (a leader that moved, a
/// replica set catching up).
fn retriable(code: i16) -> bool {
    matches!(
        code,
        codes::NOT_LEADER_OR_FOLLOWER
            | codes::UNKNOWN_TOPIC_OR_PARTITION
            | codes::LEADER_NOT_AVAILABLE
            | codes::NOT_ENOUGH_REPLICAS
            | codes::NOT_ENOUGH_REPLICAS_AFTER_APPEND
            | codes::REQUEST_TIMED_OUT
            | codes::KAFKA_STORAGE_ERROR
            | codes::NOT_COORDINATOR
    )
}

fn give_up(m: &Marker, topic: &str, index: i32, code: i16) {
    logging::error(
        LOGGER,
        &format!(
            "marker for producer {} not written to {topic}-{index}: error {code}",
            m.producer_id
        ),
    );
}

fn write_local_all(broker: &dyn TxnHost, m: &Marker, partitions: &BTreeSet<(String, i32)>) {
    for (topic, index) in partitions {
        let Some(partition) = broker.partition(topic, *index) else {
            continue;
        };
        let mut last = codes::NONE;
        for _ in 0..ATTEMPTS {
            last = match write_local(broker, &partition, m, None) {
                Ok(()) => codes::NONE,
                Err(code) => code,
            };
            if last == codes::NONE {
                break;
            }
        }
        if last != codes::NONE {
            give_up(m, topic, *index, last);
        }
    }
    broker.data_arrived().notify_waiters();
}

/// Append the marker to a partition this broker leads; in a cluster (`node`), wait until
/// the ISR has it, as Kafka appends markers with acks=all.
pub fn write_local(
    broker: &dyn TxnHost,
    partition: &Partition,
    m: &Marker,
    node: Option<i32>,
) -> Result<(), i16> {
    let offset = partition
        .append_marker(
            m.producer_id,
            m.epoch,
            m.commit,
            m.coordinator_epoch,
            m.transaction_version,
            now_ms(),
        )
        .map_err(|e| e.kafka_code())?;
    if partition.topic == INTERNAL_OFFSETS_TOPIC {
        broker.complete_txn_offsets(partition.index, m.producer_id, m.commit);
    }
    if let Some(node) = node {
        partition.advance_leader_high_watermark();
        broker.data_arrived().notify_waiters();
        // As Kafka's WriteTxnMarkers append: within `request.timeout.ms`.
        let wait = broker.marker_replication_wait();
        internal_log::wait_replicated(partition, node, offset + 1, wait).map_err(|e| {
            if e.code == codes::NOT_COORDINATOR {
                codes::NOT_LEADER_OR_FOLLOWER
            } else {
                e.code
            }
        })?;
    }
    Ok(())
}
