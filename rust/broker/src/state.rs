//! The broker's topics and partitions, and their persistence.
//!
//! Topic metadata (id, partition count, config overrides) lives in
//! `<first log dir>/.kafkalite/topics.json`, rewritten atomically on every change; partition
//! data lives in `<log dir>/<topic>-<partition>/` as the core's segmented logs. Partitions
//! are spread over log dirs round-robin.
//!
//! Locking: `topics` is read-mostly (RwLock); each partition's log has its own mutex held
//! only for the duration of one append/read-slice computation, never across an await.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use kafkalite_core::storage::{LogConfig, PartitionLog, ProducerStateTable};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::config::BrokerConfig;
use crate::errors::{codes, ApiError};

pub struct Partition {
    pub topic: String,
    pub index: i32,
    pub dir: PathBuf,
    pub log: Mutex<PartitionLog>,
    pub producers: Mutex<ProducerStateTable>,
}

pub struct Topic {
    pub name: String,
    pub id: uuid::Uuid,
    /// Topic-level overrides only (keys as Kafka spells them, without `log.`).
    pub configs: RwLock<BTreeMap<String, String>>,
    pub partitions: RwLock<Vec<Arc<Partition>>>,
}

impl Topic {
    #[must_use]
    pub fn partition(&self, index: i32) -> Option<Arc<Partition>> {
        let parts = self.partitions.read().expect("lock");
        usize::try_from(index)
            .ok()
            .and_then(|i| parts.get(i).cloned())
    }

    #[must_use]
    pub fn partition_count(&self) -> i32 {
        self.partitions.read().expect("lock").len() as i32
    }
}

#[derive(Serialize, Deserialize)]
struct TopicRecord {
    id: uuid::Uuid,
    partitions: i32,
    configs: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize, Default)]
struct MetadataFile {
    cluster_id: String,
    next_producer_id: i64,
    topics: BTreeMap<String, TopicRecord>,
}

pub struct BrokerState {
    pub config: BrokerConfig,
    pub cluster_id: String,
    pub topics: RwLock<BTreeMap<String, Arc<Topic>>>,
    /// Woken on every append, so long-polling fetches re-check their partitions.
    pub data_arrived: Notify,
    pub next_producer_id: AtomicI64,
    /// (listener name, host, port) told to clients in Metadata; set once listeners are bound.
    pub advertised: std::sync::OnceLock<Vec<(String, String, u16)>>,
    /// The group coordinator (consumer groups, committed offsets in `__consumer_offsets`).
    pub groups: Arc<crate::groups::GroupCoordinator>,
    /// Serialises metadata-changing operations and the metadata file writes.
    admin: Mutex<()>,
}

/// Where committed offsets live; users may not create a topic of that name.
pub const INTERNAL_OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Kafka's topic name rules: 1..=249 of [a-zA-Z0-9._-], not "." or "..".
pub fn validate_topic_name(name: &str) -> Result<(), ApiError> {
    let legal = !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if legal {
        Ok(())
    } else {
        Err(ApiError::new(
            codes::INVALID_TOPIC_EXCEPTION,
            format!("invalid topic name {name:?}"),
        ))
    }
}

impl BrokerState {
    fn metadata_path(config: &BrokerConfig) -> PathBuf {
        config.log_dirs[0].join(".kafkalite").join("topics.json")
    }

    /// Load topic metadata and open every partition log (running recovery where needed).
    pub fn open(config: BrokerConfig) -> anyhow::Result<Arc<BrokerState>> {
        for dir in &config.log_dirs {
            fs::create_dir_all(dir)?;
        }
        let path = Self::metadata_path(&config);
        let meta: MetadataFile = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => MetadataFile::default(),
            Err(e) => return Err(e.into()),
        };
        let cluster_id = if meta.cluster_id.is_empty() {
            new_cluster_id()
        } else {
            meta.cluster_id.clone()
        };
        let groups = crate::groups::GroupCoordinator::new(&config)?;
        let state = Arc::new(BrokerState {
            config,
            cluster_id,
            topics: RwLock::new(BTreeMap::new()),
            data_arrived: Notify::new(),
            next_producer_id: AtomicI64::new(meta.next_producer_id.max(1000)),
            advertised: std::sync::OnceLock::new(),
            groups,
            admin: Mutex::new(()),
        });
        {
            let mut topics = state.topics.write().expect("lock");
            for (name, record) in meta.topics {
                let topic =
                    state.build_topic(&name, record.id, record.partitions, record.configs)?;
                topics.insert(name, topic);
            }
        }
        state.persist()?;
        state.groups.open(&state)?;
        Ok(state)
    }

    /// Effective log config of a topic: broker defaults, then topic overrides.
    pub fn log_config(&self, overrides: &BTreeMap<String, String>) -> Result<LogConfig, ApiError> {
        let mut config = self.config.log_defaults.clone();
        for (k, v) in overrides {
            config
                .set(k, v)
                .map_err(|e| ApiError::new(codes::INVALID_CONFIG, e.to_string()))?;
        }
        Ok(config)
    }

    fn partition_dir(&self, topic: &str, index: i32) -> PathBuf {
        let dirs = &self.config.log_dirs;
        dirs[(index as usize) % dirs.len()].join(format!("{topic}-{index}"))
    }

    fn open_partition(
        &self,
        topic: &str,
        index: i32,
        config: LogConfig,
    ) -> Result<Arc<Partition>, ApiError> {
        let dir = self.partition_dir(topic, index);
        let log = PartitionLog::open(&dir, config)?;
        let producers = ProducerStateTable::rebuild(&log);
        Ok(Arc::new(Partition {
            topic: topic.to_string(),
            index,
            dir,
            log: Mutex::new(log),
            producers: Mutex::new(producers),
        }))
    }

    fn build_topic(
        &self,
        name: &str,
        id: uuid::Uuid,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<Arc<Topic>, ApiError> {
        let log_config = self.log_config(&configs)?;
        let parts = (0..partitions)
            .map(|i| self.open_partition(name, i, log_config.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Arc::new(Topic {
            name: name.to_string(),
            id,
            configs: RwLock::new(configs),
            partitions: RwLock::new(parts),
        }))
    }

    #[must_use]
    pub fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.topics.read().expect("lock").get(name).cloned()
    }

    #[must_use]
    pub fn topic_by_id(&self, id: uuid::Uuid) -> Option<Arc<Topic>> {
        let topics = self.topics.read().expect("lock");
        topics.values().find(|t| t.id == id).cloned()
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

    /// Host and port of this node as clients are told in Metadata (the first advertised
    /// listener).
    #[must_use]
    pub fn advertised_endpoint(&self) -> Option<(String, i32)> {
        let (_, host, port) = self.advertised.get()?.first()?;
        Some((host.clone(), i32::from(*port)))
    }

    #[must_use]
    pub fn partition(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        self.topic(topic).and_then(|t| t.partition(index))
    }

    #[must_use]
    pub fn topic_names(&self) -> Vec<String> {
        self.topics.read().expect("lock").keys().cloned().collect()
    }

    /// Create a topic (`validate_only` checks without creating). Config keys are validated.
    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<Option<Arc<Topic>>, ApiError> {
        validate_topic_name(name)?;
        if name == INTERNAL_OFFSETS_TOPIC {
            return Err(ApiError::new(
                codes::TOPIC_ALREADY_EXISTS,
                format!("'{name}' is an internal topic"),
            ));
        }
        if partitions < 1 {
            return Err(ApiError::new(
                codes::INVALID_PARTITIONS,
                format!("number of partitions must be at least 1, got {partitions}"),
            ));
        }
        self.log_config(&configs)?;
        let _guard = self.admin.lock().expect("lock");
        if self.topic(name).is_some() {
            return Err(ApiError::new(
                codes::TOPIC_ALREADY_EXISTS,
                format!("topic '{name}' already exists"),
            ));
        }
        if validate_only {
            return Ok(None);
        }
        self.add_topic(name, partitions, configs).map(Some)
    }

    /// Open a new topic's logs, register it and persist the metadata. The caller holds the
    /// admin lock and has checked that the name is free.
    fn add_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<Arc<Topic>, ApiError> {
        let topic = self.build_topic(name, uuid::Uuid::new_v4(), partitions, configs)?;
        self.topics
            .write()
            .expect("lock")
            .insert(name.to_string(), Arc::clone(&topic));
        self.persist()
            .map_err(|e| ApiError::new(codes::KAFKA_STORAGE_ERROR, e.to_string()))?;
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

    /// Delete a topic and its data.
    pub fn delete_topic(&self, name: &str) -> Result<(), ApiError> {
        let _guard = self.admin.lock().expect("lock");
        let topic = self
            .topics
            .write()
            .expect("lock")
            .remove(name)
            .ok_or_else(|| {
                ApiError::new(
                    codes::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("unknown topic '{name}'"),
                )
            })?;
        self.persist()
            .map_err(|e| ApiError::new(codes::KAFKA_STORAGE_ERROR, e.to_string()))?;
        for p in topic.partitions.read().expect("lock").iter() {
            if let Ok(mut log) = p.log.lock() {
                let _ = log.close();
            }
            let _ = fs::remove_dir_all(&p.dir);
        }
        Ok(())
    }

    /// Grow a topic to `total` partitions.
    pub fn create_partitions(
        &self,
        name: &str,
        total: i32,
        validate_only: bool,
    ) -> Result<(), ApiError> {
        let _guard = self.admin.lock().expect("lock");
        let topic = self.require_topic(name)?;
        let current = topic.partition_count();
        if total <= current {
            return Err(ApiError::new(
                codes::INVALID_PARTITIONS,
                format!(
                    "topic currently has {current} partitions, {total} would not be an increase"
                ),
            ));
        }
        if validate_only {
            return Ok(());
        }
        let config = self.log_config(&topic.configs.read().expect("lock"))?;
        let new = (current..total)
            .map(|i| self.open_partition(name, i, config.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        topic.partitions.write().expect("lock").extend(new);
        self.persist()
            .map_err(|e| ApiError::new(codes::KAFKA_STORAGE_ERROR, e.to_string()))?;
        Ok(())
    }

    /// Replace a topic's overrides and apply them to its open logs.
    pub fn set_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), ApiError> {
        let _guard = self.admin.lock().expect("lock");
        let topic = self.require_topic(name)?;
        let log_config = self.log_config(&configs)?;
        if validate_only {
            return Ok(());
        }
        *topic.configs.write().expect("lock") = configs;
        for p in topic.partitions.read().expect("lock").iter() {
            p.log.lock().expect("lock").set_config(log_config.clone());
        }
        self.persist()
            .map_err(|e| ApiError::new(codes::KAFKA_STORAGE_ERROR, e.to_string()))?;
        Ok(())
    }

    /// Hand out a new producer id (InitProducerId) and persist the counter, serialised with
    /// the other metadata writes so an id is never reused after a restart.
    pub fn allocate_producer_id(&self) -> anyhow::Result<i64> {
        let _guard = self.admin.lock().expect("lock");
        let id = self.next_producer_id.fetch_add(1, Ordering::SeqCst);
        self.persist()?;
        Ok(id)
    }

    /// Write the metadata file atomically.
    pub fn persist(&self) -> anyhow::Result<()> {
        let topics = self.topics.read().expect("lock");
        let meta = MetadataFile {
            cluster_id: self.cluster_id.clone(),
            next_producer_id: self.next_producer_id.load(Ordering::SeqCst),
            topics: topics
                .iter()
                .map(|(name, t)| {
                    (
                        name.clone(),
                        TopicRecord {
                            id: t.id,
                            partitions: t.partition_count(),
                            configs: t.configs.read().expect("lock").clone(),
                        },
                    )
                })
                .collect(),
        };
        let path = Self::metadata_path(&self.config);
        write_atomically(&path, &serde_json::to_vec_pretty(&meta)?)?;
        Ok(())
    }

    /// Close every log cleanly (clean-shutdown markers), after persisting metadata.
    pub fn close(&self) -> anyhow::Result<()> {
        self.persist()?;
        for topic in self.topics.read().expect("lock").values() {
            for p in topic.partitions.read().expect("lock").iter() {
                p.log.lock().expect("lock").close()?;
            }
        }
        Ok(())
    }
}

fn new_cluster_id() -> String {
    // Kafka cluster ids are 22-character base64url UUIDs.
    let id = uuid::Uuid::new_v4();
    let mut s = String::with_capacity(22);
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits: u128 = id.as_u128();
    for _ in 0..22 {
        s.push(ALPHABET[(bits & 63) as usize] as char);
        bits >>= 6;
    }
    s
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, bytes)?;
    fs::rename(&tmp, path)
}
