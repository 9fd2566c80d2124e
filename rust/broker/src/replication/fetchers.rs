//! The follower fetchers of this broker: one per (source broker, fetcher index), each
//! with the partitions it copies. Every snapshot recomputes which partitions this broker
//! follows and from whom (`sync`): new ones are handed to their fetcher (started when
//! needed) to be truncated and fetched, gone ones are taken away, and fetchers left with
//! nothing stop. A partition goes to fetcher `hash(topic, partition) %
//! num.replica.fetchers` of its leader, as Kafka spreads them.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use kafkalite_client::Address;
use tokio::sync::Notify;

use super::fetcher::{self, FetcherShared, Followed};
use super::inter_broker::InterBroker;
use super::ReplicationConfig;
use crate::cluster::{ClusterLink, TopicRegistry};

/// (leader id, leader host, leader port, fetcher index).
type FetcherKey = (i32, String, u16, usize);
/// A fetcher's partitions with the leader epoch each is followed in.
type Assigned = BTreeMap<(String, i32), (Arc<crate::cluster::Partition>, i32)>;

struct Running {
    shared: Arc<FetcherShared>,
    task: tokio::task::JoinHandle<()>,
}

pub struct Fetchers {
    pub config: ReplicationConfig,
    /// The listener leaders are reached on, and how its connections are secured.
    pub inter_broker: InterBroker,
    runtime: OnceLock<tokio::runtime::Handle>,
    running: Mutex<HashMap<FetcherKey, Running>>,
    /// The broker's `data_arrived`: consumers long-polling a follower (KIP-392) wake when
    /// its high watermark moves.
    data_arrived: Arc<Notify>,
}

impl Fetchers {
    #[must_use]
    pub fn new(
        config: ReplicationConfig,
        inter_broker: InterBroker,
        data_arrived: Arc<Notify>,
    ) -> Fetchers {
        Fetchers {
            config,
            inter_broker,
            runtime: OnceLock::new(),
            running: Mutex::new(HashMap::new()),
            data_arrived,
        }
    }

    /// The runtime fetchers run on (set once the broker's runtime exists).
    pub fn set_runtime(&self, handle: tokio::runtime::Handle) {
        let _ = self.runtime.set(handle);
    }

    /// Make the fetchers follow exactly the partitions the current replica states in
    /// `topics` say broker `node` follows, from the leaders' addresses in `link`.
    pub fn sync(&self, node: i32, topics: &TopicRegistry, link: &ClusterLink) {
        let Some(runtime) = self.runtime.get() else {
            return;
        };
        // Each leader's registered endpoint of the inter-broker listener; a broker without
        // one (misconfigured) is not fetched from.
        let listener = self.inter_broker.listener.as_str();
        let brokers: HashMap<i32, (String, u16)> = link
            .info()
            .brokers
            .into_iter()
            .filter_map(|b| {
                let (_, host, port) = b.endpoints.into_iter().find(|(n, _, _)| n == listener)?;
                Some((b.node_id, (host, u16::try_from(port).ok()?)))
            })
            .collect();
        let mut wanted: HashMap<FetcherKey, Assigned> = HashMap::new();
        for topic in topics.all() {
            for index in 0..topic.partition_count() {
                let Some(partition) = topic.partition(index) else {
                    continue;
                };
                let replica = partition.replica_state();
                if replica.leader == node || replica.leader < 0 || !replica.replicas.contains(&node)
                {
                    continue;
                }
                let Some((host, port)) = brokers.get(&replica.leader) else {
                    continue;
                };
                let mut h = DefaultHasher::new();
                (topic.name.as_str(), index).hash(&mut h);
                let slot =
                    usize::try_from(h.finish() % self.config.num_fetchers as u64).unwrap_or(0);
                wanted
                    .entry((replica.leader, host.clone(), *port, slot))
                    .or_default()
                    .insert(
                        (topic.name.clone(), index),
                        (partition, replica.leader_epoch),
                    );
            }
        }
        let mut running = self.running.lock().expect("lock");
        running.retain(|key, r| {
            if wanted.contains_key(key) {
                return true;
            }
            r.task.abort();
            false
        });
        for (key, parts) in wanted {
            let r = running.entry(key.clone()).or_insert_with(|| {
                let shared = Arc::new(FetcherShared {
                    partitions: Mutex::new(BTreeMap::new()),
                    changed: Notify::new(),
                    data_arrived: Arc::clone(&self.data_arrived),
                });
                let task = runtime.spawn(fetcher::run(
                    node,
                    Address {
                        host: key.1.clone(),
                        port: key.2,
                    },
                    self.config.clone(),
                    self.inter_broker.security.clone(),
                    Arc::clone(&shared),
                ));
                Running { shared, task }
            });
            let mut followed = r.shared.partitions.lock().expect("lock");
            followed.retain(|tp, _| parts.contains_key(tp));
            for (tp, (partition, epoch)) in parts {
                let same = followed.get(&tp).is_some_and(|f| {
                    f.leader_epoch == epoch && Arc::ptr_eq(&f.partition, &partition)
                });
                if !same {
                    // A new leader or epoch: truncate by epoch again before fetching.
                    followed.insert(tp, Followed::new(partition, epoch));
                }
            }
            drop(followed);
            r.shared.changed.notify_one();
        }
    }

    /// Stop every fetcher (broker shutdown).
    pub fn stop_all(&self) {
        for (_, r) in self.running.lock().expect("lock").drain() {
            r.task.abort();
        }
    }
}
