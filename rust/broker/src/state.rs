//! The broker's shared state: configuration, the topic registry and metadata store
//! (`cluster/`), producer ids, the group coordinator and the advertised listeners. It
//! composes those parts and serialises every metadata change with the store's writes.
//!
//! Topic metadata (id, partition count, config overrides) lives in
//! `<first log dir>/.kafkalite/topics.json` (`cluster::file_store`); partition data lives in
//! `<log dir>/<topic>-<partition>/` (`cluster::partition`).

mod hosts;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kafkalite_core::storage::{DirLock, LogConfig};
use tokio::sync::Notify;

use crate::cluster::{
    file_store, partition_dirs, AdminOp, BrokerNode, ClusterLink, FileStore, MetadataView,
    ProducerIds, ReplicaState, StoredMetadata, TopicRecord, TopicRegistry,
};
pub use crate::cluster::{
    validate_topic_name, Partition, Topic, INTERNAL_OFFSETS_TOPIC, INTERNAL_TXN_TOPIC,
};
use crate::config::BrokerConfig;
use crate::errors::{codes, ApiError};
use crate::groups::host::GroupHost;
use crate::transactions::host::TxnHost;

/// How long an admin request waits for the controller side before REQUEST_TIMED_OUT:
/// under the clients' default 30 s request timeout, so they see the broker's answer.
pub const ADMIN_WAIT_MS: u64 = 25_000;

/// Run `work` (file system work or a wait: topic dirs for thousands of partitions, an
/// answer from the controller) without holding one of the runtime's few worker threads,
/// so the connections they serve go on while it runs; plain when called off the runtime.
pub fn off_the_runtime<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// How long an admin request with its own `timeout_ms` waits for the controller side:
/// that long (so the client has its answer in time), within [500 ms, ADMIN_WAIT_MS]. The
/// controller side is given `timeout_ms` too and answers a little before it, with
/// REQUEST_TIMED_OUT for what did not finish.
#[must_use]
pub fn admin_wait_for(timeout_ms: i32) -> u64 {
    u64::try_from(timeout_ms)
        .unwrap_or(0)
        .clamp(500, ADMIN_WAIT_MS)
}

pub struct BrokerState {
    pub config: BrokerConfig,
    pub cluster_id: String,
    pub topics: TopicRegistry,
    /// Woken on every append (and a follower's high watermark move), so long-polling
    /// fetches re-check their partitions.
    pub data_arrived: Arc<Notify>,
    pub producer_ids: ProducerIds,
    /// (listener name, host, port) told to clients in Metadata; set once listeners are bound.
    pub advertised: std::sync::OnceLock<Vec<(String, String, u16)>>,
    /// The group coordinator (consumer groups, committed offsets in `__consumer_offsets`).
    pub groups: Arc<crate::groups::GroupCoordinator>,
    /// The transaction coordinator (`__transaction_state`).
    pub transactions: Arc<crate::transactions::TransactionCoordinator>,
    /// Share groups (KIP-932) and the share coordinator (`__share_group_state`).
    pub share: Arc<crate::share::ShareGroups>,
    /// Cluster mode (`zookeeper.connect` set): the controller's view, pushed in by the
    /// Python side (`cluster_sync`), and the way out for admin requests. `None` on a single
    /// node, which keeps every topic in its own file store.
    pub cluster: Option<ClusterLink>,
    /// TLS and SASL per listener, and the SCRAM credentials.
    pub security: crate::security::Security,
    /// Dynamic broker configs over server.properties (`config::dynamic`).
    pub dynamic: crate::config::dynamic::DynamicStore,
    /// Group-level configs (`config::group`).
    pub group_configs: crate::config::group::GroupConfigStore,
    /// Cluster mode: the follower fetchers (`replication`).
    pub fetchers: Option<crate::replication::fetchers::Fetchers>,
    /// Request, traffic and connection counters for the metrics endpoint.
    pub metrics: crate::metrics::Metrics,
    /// Client-metrics subscriptions (KIP-714 config resources).
    pub client_metrics: crate::config::client_metrics_store::ClientMetricsStore,
    /// Client instances pushing telemetry (KIP-714) and what they pushed last.
    pub telemetry: crate::telemetry::Telemetry,
    /// `queued.max.request.bytes`: the bytes of requests read and not yet answered.
    pub request_memory: crate::net::request_memory::RequestMemory,
    store: FileStore,
    /// Serialises metadata-changing operations and the metadata file writes.
    admin: Mutex<()>,
    /// The log dirs' `.lock` files, held while this state lives (see `storage::dir_lock`).
    _dir_locks: Vec<DirLock>,
}

impl BrokerState {
    /// Load topic metadata and open every partition log (running recovery where needed).
    pub fn open(config: BrokerConfig) -> anyhow::Result<Arc<BrokerState>> {
        let dir_locks = DirLock::acquire_all(&config.log_dirs)?;
        let (config, dynamic) = crate::config::dynamic::at_start(config)?;
        let store = FileStore::in_log_dir(config.metadata_dir());
        let stored = store.load()?;
        // Marks the metadata log dir from the first start, before any store writes there.
        std::fs::create_dir_all(store.path().parent().unwrap_or(config.metadata_dir()))?;
        let cluster_id = if stored.cluster_id.is_empty() {
            file_store::new_cluster_id()
        } else {
            stored.cluster_id.clone()
        };
        let groups = crate::groups::GroupCoordinator::new(&config)?;
        let group_configs = if config.zookeeper_connect.is_some() {
            crate::config::group::GroupConfigStore::pushed()
        } else {
            crate::config::group::GroupConfigStore::open(config.metadata_dir())?
        };
        let transactions = crate::transactions::TransactionCoordinator::new(&config)?;
        let share =
            crate::share::ShareGroups::new(crate::share::coordinator::ShareCoordinator::new(
                crate::share::coordinator::ShareCoordinatorConfig::from_settings(
                    &kafkalite_core::config::BrokerSettings::validate(&config.raw)?,
                ),
                config.zookeeper_connect.as_ref().map(|_| config.node_id),
            ));
        let topics = TopicRegistry::new(
            config.log_dirs.clone(),
            ReplicaState::single_node(config.node_id),
        );
        // In cluster mode topics come from the controller, `__consumer_offsets` too.
        let cluster = config
            .zookeeper_connect
            .as_ref()
            .map(|_| ClusterLink::new(&cluster_id));
        let security = crate::security::Security::from_config(&config)?;
        let client_metrics = if cluster.is_some() {
            crate::config::client_metrics_store::ClientMetricsStore::pushed()
        } else {
            crate::config::client_metrics_store::ClientMetricsStore::open(config.metadata_dir())?
        };
        let data_arrived = Arc::new(Notify::new());
        let fetchers = match &cluster {
            Some(_) => Some(crate::replication::fetchers::Fetchers::new(
                crate::replication::ReplicationConfig::from_broker(&config),
                crate::replication::inter_broker::InterBroker::from_config(&config)?,
                Arc::clone(&data_arrived),
            )),
            None => None,
        };
        let telemetry =
            crate::telemetry::Telemetry::new(config.settings.int("telemetry.max.bytes"));
        let request_memory = crate::net::request_memory::RequestMemory::new(
            config.settings.long("queued.max.request.bytes"),
        );
        let state = Arc::new(BrokerState {
            config,
            cluster_id,
            topics,
            data_arrived,
            producer_ids: ProducerIds::starting_at(stored.next_producer_id),
            advertised: std::sync::OnceLock::new(),
            groups,
            fetchers,
            transactions,
            share,
            cluster,
            security,
            metrics: crate::metrics::Metrics::default(),
            client_metrics,
            telemetry,
            request_memory,
            dynamic,
            group_configs,
            store,
            admin: Mutex::new(()),
            _dir_locks: dir_locks,
        });
        // Before any partition opens: finish interrupted deletions, drop orphans of
        // interrupted creates and deletes.
        partition_dirs::clean(&state.config.log_dirs, &stored.topics);
        for (name, record) in stored.topics {
            // In cluster mode the controller's first snapshot opens them.
            if state.cluster.is_some() {
                continue;
            }
            let log_config = state.log_config(&record.configs)?;
            state.topics.open_topic(&name, record, &log_config, false)?;
        }
        state.persist()?;
        // The coordinators bind to the broker as their host (`hosts`).
        let group_host: Arc<dyn GroupHost> = Arc::clone(&state) as Arc<dyn GroupHost>;
        state.groups.open(&group_host)?;
        let txn_host: Arc<dyn TxnHost> = Arc::clone(&state) as Arc<dyn TxnHost>;
        state.transactions.open(&txn_host)?;
        let share_host: Arc<dyn crate::share::ShareHost> =
            Arc::clone(&state) as Arc<dyn crate::share::ShareHost>;
        state.share.open(&share_host)?;
        Ok(state)
    }

    /// A share group's settings (group configs over the broker's `group.share.*` keys).
    #[must_use]
    pub fn share_settings_for(&self, group: &str) -> crate::share::ShareSettings {
        self.group_configs
            .share_settings(group, &self.dynamic.live().settings)
    }

    /// Effective log config of a topic: the broker's live defaults (dynamic configs
    /// included, `config::live`), then topic overrides.
    pub fn log_config(&self, overrides: &BTreeMap<String, String>) -> Result<LogConfig, ApiError> {
        let mut config = self.dynamic.live().log_defaults.clone();
        // Produced records must carry timestamps within the topic's bounds (Kafka's
        // message.timestamp.before/after.max.ms).
        config.check_timestamps = true;
        for (k, v) in overrides {
            config
                .set(k, v)
                .map_err(|e| ApiError::new(codes::INVALID_CONFIG, e.to_string()))?;
        }
        Ok(config)
    }

    #[must_use]
    pub fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.topics.get(name)
    }

    #[must_use]
    pub fn topic_by_id(&self, id: uuid::Uuid) -> Option<Arc<Topic>> {
        self.topics.by_id(id)
    }

    /// The topic, or UNKNOWN_TOPIC_OR_PARTITION naming it.
    pub fn require_topic(&self, name: &str) -> Result<Arc<Topic>, ApiError> {
        self.topic(name).ok_or_else(|| {
            ApiError::new(
                codes::UNKNOWN_TOPIC_OR_PARTITION,
                format!("unknown topic '{name}'"),
            )
        })
    }

    #[must_use]
    pub fn partition(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        self.topic(topic).and_then(|t| t.partition(index))
    }

    #[must_use]
    pub fn topic_names(&self) -> Vec<String> {
        self.topics.names()
    }

    /// Host and port of this node as clients are told in Metadata (the first advertised
    /// listener).
    #[must_use]
    pub fn advertised_endpoint(&self) -> Option<(String, i32)> {
        self.advertised_endpoint_on("")
    }

    /// Host and port of this node on `listener` (a client is told the addresses of the
    /// listener it came through, as Kafka does); the first listener's for an unknown name.
    #[must_use]
    pub fn advertised_endpoint_on(&self, listener: &str) -> Option<(String, i32)> {
        let all = self.advertised.get()?;
        let (_, host, port) = all.iter().find(|(n, _, _)| n == listener).or(all.first())?;
        Some((host.clone(), i32::from(*port)))
    }

    /// The cluster id clients are told: ZooKeeper's `/cluster/id` in cluster mode.
    #[must_use]
    pub fn cluster_id(&self) -> String {
        match &self.cluster {
            Some(link) => link.info().cluster_id,
            None => self.cluster_id.clone(),
        }
    }

    /// The active controller (this node on a single node; -1 while none is known).
    #[must_use]
    pub fn controller_id(&self) -> i32 {
        match &self.cluster {
            Some(link) => link.info().controller_id,
            None => self.config.node_id,
        }
    }

    /// The live brokers: those registered in ZooKeeper in cluster mode, else this node
    /// alone once its listeners are bound.
    #[must_use]
    pub fn live_brokers(&self) -> Vec<BrokerNode> {
        self.live_brokers_on("")
    }

    /// `live_brokers`, each at its address on `listener` (the one a request came in on).
    #[must_use]
    pub fn live_brokers_on(&self, listener: &str) -> Vec<BrokerNode> {
        if let Some(link) = &self.cluster {
            return link
                .info()
                .brokers
                .into_iter()
                .filter_map(|b| b.on_listener(listener))
                .collect();
        }
        self.advertised_endpoint_on(listener)
            .map(|(host, port)| BrokerNode {
                node_id: self.config.node_id,
                host,
                port,
                // Kafka's Metadata names a single node's `broker.rack` too.
                rack: self.config.rack.clone(),
                endpoints: Vec::new(),
            })
            .into_iter()
            .collect()
    }

    /// The cluster as Metadata describes it (this node is the controller).
    #[must_use]
    pub fn metadata_view(&self) -> MetadataView {
        MetadataView::snapshot(
            &self.cluster_id(),
            self.controller_id(),
            self.live_brokers(),
            &self.topics,
        )
    }

    /// Hand a metadata change to the controller side and wait for it (cluster mode only).
    /// Runs under `block_in_place`: the caller is a handler on the broker's runtime.
    pub fn ask_controller(&self, op: AdminOp) -> Result<(), ApiError> {
        self.ask_controller_for_answer(op).map(|_| ())
    }

    /// `ask_controller` for operations answered with data (JSON text).
    pub fn ask_controller_for_answer(&self, op: AdminOp) -> Result<String, ApiError> {
        self.ask_controller_within(op, ADMIN_WAIT_MS)
    }

    /// `ask_controller_all` for operations whose answer carries no data.
    fn ask_controller_done(&self, ops: Vec<AdminOp>, wait_ms: u64) -> Vec<Result<(), ApiError>> {
        self.ask_controller_all(ops, wait_ms)
            .into_iter()
            .map(|answer| answer.map(|_| ()))
            .collect()
    }

    /// Several operations asked together (`AdminBridge::call_all`), each answered on its
    /// own, waiting at most `wait_ms` for all of them.
    pub fn ask_controller_all(
        &self,
        ops: Vec<AdminOp>,
        wait_ms: u64,
    ) -> Vec<Result<String, ApiError>> {
        let Some(link) = &self.cluster else {
            let refused = ApiError::new(
                codes::INVALID_REQUEST,
                "not in cluster mode (zookeeper.connect is not set)",
            );
            return ops.iter().map(|_| Err(refused.clone())).collect();
        };
        let wait = std::time::Duration::from_millis(wait_ms);
        off_the_runtime(|| link.admin.call_all(ops, wait))
    }

    /// `ask_controller_for_answer`, waiting at most `wait_ms` (a request's own timeout).
    pub fn ask_controller_within(&self, op: AdminOp, wait_ms: u64) -> Result<String, ApiError> {
        let Some(link) = &self.cluster else {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                "not in cluster mode (zookeeper.connect is not set)",
            ));
        };
        let wait = std::time::Duration::from_millis(wait_ms);
        off_the_runtime(|| link.admin.call_for_answer(op, wait))
    }

    /// Create a topic (`validate_only` checks without creating). Config keys are validated.
    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<Option<Arc<Topic>>, ApiError> {
        TopicRegistry::check_new(name, partitions)?;
        self.log_config(&configs)?;
        if let Some(link) = &self.cluster {
            // Only Metadata's auto-creation gets here in cluster mode (CreateTopics asks
            // the controller itself): ask for the topic and let the client retry, as
            // Kafka answers LEADER_NOT_AVAILABLE while a new topic has no leader yet.
            link.admin.submit(AdminOp::CreateTopic {
                name: name.to_string(),
                partitions,
                replication_factor: self.config.default_replication_factor,
                assignments: Vec::new(),
                configs,
                validate_only,
            });
            return Err(ApiError::new(
                codes::LEADER_NOT_AVAILABLE,
                format!("topic '{name}' is being created"),
            ));
        }
        self.under_admin_lock(|| {
            self.topics.ensure_absent(name)?;
            crate::fd_budget::check_room_for_partitions(
                partitions,
                &format!("topic '{name}' with {partitions} partitions"),
            )?;
            if validate_only {
                return Ok(None);
            }
            self.add_topic(name, partitions, configs).map(Some)
        })
    }

    /// Open a new topic's logs, register it and persist the metadata. The caller holds the
    /// admin lock and has checked that the name is free.
    fn add_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<Arc<Topic>, ApiError> {
        let log_config = self.log_config(&configs)?;
        let record = TopicRecord {
            id: uuid::Uuid::new_v4(),
            partitions,
            configs,
        };
        // Dirs first, then the metadata: a crash in between leaves orphans the next start
        // removes, never a stored topic without its dirs.
        let topic = self.topics.open_topic(name, record, &log_config, true)?;
        if let Err(e) = self.persist_or_storage_error() {
            if let Ok(removed) = self.topics.remove(name) {
                TopicRegistry::delete_data(&removed);
            }
            return Err(e);
        }
        Ok(topic)
    }

    /// Create (or return) an internal topic such as `__consumer_offsets`, which users may
    /// not create themselves.
    pub fn create_internal_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<Arc<Topic>, ApiError> {
        let _guard = self.admin.lock().expect("lock");
        if let Some(topic) = self.topic(name) {
            return Ok(topic);
        }
        self.add_topic(name, partitions, configs)
    }

    /// Delete a topic and its data. The metadata is written first (the commit point: a
    /// crash after it leaves orphan dirs the next start removes), then the dirs are
    /// renamed to `-delete` and removed in the background.
    pub fn delete_topic(&self, name: &str) -> Result<(), ApiError> {
        if self.cluster.is_some() {
            return self.ask_controller(AdminOp::DeleteTopic {
                name: name.to_string(),
            });
        }
        self.under_admin_lock(|| {
            let topic = self.topics.remove(name)?;
            if let Err(e) = self.persist_or_storage_error() {
                self.topics.restore(topic);
                return Err(e);
            }
            TopicRegistry::delete_data(&topic);
            Ok(())
        })
    }

    /// Delete these topics (`delete_topic`); in cluster mode asked of the controller
    /// together, each answered within `wait_ms` on its own.
    pub fn delete_topics(&self, names: Vec<String>, wait_ms: u64) -> Vec<Result<(), ApiError>> {
        if self.cluster.is_none() {
            return names.iter().map(|n| self.delete_topic(n)).collect();
        }
        let ops = names
            .into_iter()
            .map(|name| AdminOp::DeleteTopic { name })
            .collect();
        self.ask_controller_done(ops, wait_ms)
    }

    /// Grow topics, each `(name, total, assignments, validate_only)` as
    /// `create_partitions` (`assignments`: the added partitions' replicas, empty for the
    /// controller to place them; a single node has checked they name only itself); in
    /// cluster mode asked of the controller together, each answered within `wait_ms` on its
    /// own.
    pub fn create_partitions_all(
        &self,
        grows: Vec<(String, i32, Vec<Vec<i32>>, bool)>,
        wait_ms: u64,
    ) -> Vec<Result<(), ApiError>> {
        if self.cluster.is_none() {
            return grows
                .iter()
                .map(|(name, total, _, validate_only)| {
                    self.create_partitions(name, *total, *validate_only)
                })
                .collect();
        }
        let ops = grows
            .into_iter()
            .map(
                |(name, total, assignments, validate_only)| AdminOp::CreatePartitions {
                    name,
                    total,
                    assignments,
                    validate_only,
                },
            )
            .collect();
        self.ask_controller_done(ops, wait_ms)
    }

    /// Grow a topic to `total` partitions.
    pub fn create_partitions(
        &self,
        name: &str,
        total: i32,
        validate_only: bool,
    ) -> Result<(), ApiError> {
        if self.cluster.is_some() {
            return self.ask_controller(AdminOp::CreatePartitions {
                name: name.to_string(),
                total,
                assignments: Vec::new(),
                validate_only,
            });
        }
        self.under_admin_lock(|| {
            let topic = self.require_topic(name)?;
            TopicRegistry::check_growth(&topic, total)?;
            crate::fd_budget::check_room_for_partitions(
                total - topic.partition_count(),
                &format!("growing topic '{name}' to {total} partitions"),
            )?;
            if validate_only {
                return Ok(());
            }
            let config = self.log_config(&topic.configs.read().expect("lock"))?;
            self.topics.grow(&topic, total, &config)?;
            self.persist_or_storage_error()
        })
    }

    /// Replace a topic's overrides and apply them to its open logs.
    pub fn set_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), ApiError> {
        if self.cluster.is_some() {
            self.log_config(&configs)?;
            return self.ask_controller(AdminOp::AlterConfigs {
                name: name.to_string(),
                configs,
                validate_only,
            });
        }
        self.under_admin_lock(|| {
            let topic = self.require_topic(name)?;
            let log_config = self.log_config(&configs)?;
            if validate_only {
                return Ok(());
            }
            TopicRegistry::set_configs(&topic, configs, &log_config);
            self.persist_or_storage_error()
        })
    }

    /// Hand out a new producer id (InitProducerId) and persist the counter, serialised with
    /// the other metadata writes so an id is never reused after a restart.
    pub fn allocate_producer_id(&self) -> anyhow::Result<i64> {
        if self.cluster.is_some() {
            // Outside the admin lock: the controller side may need it to apply a snapshot.
            return self.producer_ids.allocate_from_block(|| {
                let answer = self
                    .ask_controller_for_answer(AdminOp::Controller {
                        op: "producer_id_block".into(),
                        args: "{}".into(),
                    })
                    .map_err(|e| anyhow::anyhow!("no producer id block: {}", e.message))?;
                let (first, last): (i64, i64) = serde_json::from_str(&answer)?;
                anyhow::Ok((first, last))
            });
        }
        self.under_admin_lock(|| {
            let id = self.producer_ids.allocate();
            self.persist()?;
            Ok(id)
        })
    }

    /// Write the metadata file atomically.
    pub fn persist(&self) -> anyhow::Result<()> {
        self.store.save(&StoredMetadata {
            cluster_id: self.cluster_id.clone(),
            next_producer_id: self.producer_ids.next(),
            // In cluster mode too: ZooKeeper decides, but at start the file says which
            // partition dirs are this broker's data rather than orphans to clean.
            topics: self.topics.records(),
        })
    }

    /// The lock every metadata change holds (also the snapshots of `cluster_sync`).
    pub(crate) fn persist_after_snapshot(&self) -> Result<(), ApiError> {
        self.persist_or_storage_error()
    }

    pub(crate) fn admin_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.admin.lock().expect("lock")
    }

    /// Run `work` holding the admin lock, waiting for it off the runtime: the lock may be
    /// held for seconds (a topic of thousands of partitions being created), and a worker
    /// thread blocked on it serves nobody (two such stalled the whole broker).
    pub(crate) fn under_admin_lock<T>(&self, work: impl FnOnce() -> T) -> T {
        off_the_runtime(|| {
            let _guard = self.admin_lock();
            work()
        })
    }

    fn persist_or_storage_error(&self) -> Result<(), ApiError> {
        self.persist()
            .map_err(|e| ApiError::new(codes::KAFKA_STORAGE_ERROR, e.to_string()))
    }

    /// Close every log cleanly (clean-shutdown markers), after persisting metadata.
    pub fn close(&self) -> anyhow::Result<()> {
        // On a full disk persisting can fail; the logs still close (indexes, clean-shutdown
        // markers) as far as they can, and the first error is returned.
        if let Some(link) = &self.cluster {
            let _guard = self.admin_lock();
            link.closing
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let persisted = self.persist();
        let closed = self.topics.close();
        persisted?;
        closed?;
        Ok(())
    }
}
