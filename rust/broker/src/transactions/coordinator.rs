//! The transaction coordinator, for both protocols: transaction version 1 (clients add
//! partitions with AddPartitionsToTxn; librdkafka, kafka-python, older Java clients) and
//! version 2 (KIP-890, which ApiVersions finalizes for Kafka 4 clients: Produce v12 and
//! TxnOffsetCommit v5 add partitions implicitly, EndTxn v5 bumps the epoch with every
//! transaction). It keeps every transactional id of this node with its producer id,
//! epoch, state and partitions, in memory and written to `__transaction_state` on every
//! change, replayed at start.
//!
//! Completing a transaction (EndTxn, an InitProducerId that fences an open one, a
//! timeout): the state becomes Prepare{Commit,Abort} and is written, the markers are written
//! to every partition of the transaction (`markers`; the group's `__consumer_offsets`
//! partition among them settles its offsets), then the state becomes
//! Complete{Commit,Abort} and is written. Requests for the id meanwhile get
//! CONCURRENT_TRANSACTIONS (retriable). A Prepare state found at start is completed then.
//!
//! Lock: one mutex over every id, held for a check and a log write, never while markers are
//! written (a marker takes the partition's producer lock, which Produce holds while it asks
//! `verify_produce`).
//!
//! Offsets sent with TxnOffsetCommit are the group coordinator's (`groups::txn_offsets`):
//! written to `__consumer_offsets` as the producer's transactional batch and settled by the
//! marker this coordinator writes to the group's partition.
//!
//! In cluster mode this broker coordinates the ids of the `__transaction_state`
//! partitions it leads (`shards`, `placement`): every request first asks the shards
//! (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), under the same lock an unload takes.

use crate::coordinator::internal_log::lock_blocking;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, Weak};

use kafkalite_core::error_codes as codes;
use kafkalite_core::logging;
use kafkalite_core::storage::clock::now_ms;

use super::config::TxnConfig;
use super::log_topic::TxnLogTopic;
use super::markers::{MarkerChannel, COORDINATOR_EPOCH};
use super::state::{TxnMeta, TxnStatus};
use crate::cluster::topic::INTERNAL_TXN_TOPIC;
use crate::config::{BrokerConfig, ConfigError};
use crate::coordinator::internal_log::Placement;
use crate::coordinator::runtime::Shards;
use crate::errors::ApiError;
use crate::transactions::host::TxnHost;

/// Kafka moves to a new producer id once the epoch reaches this.
const MAX_EPOCH: i16 = i16::MAX - 1;
pub(super) const LOGGER: &str = "kafkalite.coordinator.transaction.TransactionCoordinator";

#[derive(Default)]
pub(super) struct Inner {
    pub(super) ids: HashMap<String, TxnMeta>,
    pub(super) by_producer: HashMap<i64, String>,
}

pub struct TransactionCoordinator {
    pub(super) config: TxnConfig,
    pub(super) inner: Mutex<Inner>,
    /// `__transaction_state` once it exists (in cluster mode: as the cluster has it).
    pub(super) store: RwLock<Option<Arc<TxnLogTopic>>>,
    /// Which ids this broker coordinates (all of them on a single node).
    pub(super) shards: Shards,
    pub(super) markers: MarkerChannel,
    broker: OnceLock<Weak<dyn TxnHost>>,
    creating: Mutex<()>,
    pub(super) started: AtomicBool,
}

/// What completing a transaction needs, taken out of the lock.
pub(super) struct Completion {
    pub(super) id: String,
    pub(super) producer_id: i64,
    pub(super) epoch: i16,
    pub(super) commit: bool,
    pub(super) partitions: BTreeSet<(String, i32)>,
}

impl TransactionCoordinator {
    pub fn new(config: &BrokerConfig) -> Result<Arc<TransactionCoordinator>, ConfigError> {
        let shards = if config.zookeeper_connect.is_some() {
            Shards::none()
        } else {
            Shards::everything()
        };
        Ok(Self::build(TxnConfig::from_raw(&config.raw)?, shards))
    }

    /// A single node's coordinator (every id is its own).
    #[must_use]
    pub fn with_config(config: TxnConfig) -> Arc<TransactionCoordinator> {
        Self::build(config, Shards::everything())
    }

    fn build(config: TxnConfig, shards: Shards) -> Arc<TransactionCoordinator> {
        Arc::new(TransactionCoordinator {
            config,
            inner: Mutex::new(Inner::default()),
            store: RwLock::new(None),
            shards,
            markers: MarkerChannel::default(),
            broker: OnceLock::new(),
            creating: Mutex::new(()),
            started: AtomicBool::new(false),
        })
    }

    #[must_use]
    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    /// Bind to the broker and replay `__transaction_state` if it exists; transactions found
    /// half-completed are completed now. In cluster mode ids are loaded partition by
    /// partition as leadership arrives (`placement`).
    pub fn open(self: &Arc<Self>, broker: &Arc<dyn TxnHost>) -> anyhow::Result<()> {
        let _ = self.broker.set(Arc::downgrade(broker));
        if self.shards.is_cluster() {
            return Ok(());
        }
        let Some(topic) = broker.topic(INTERNAL_TXN_TOPIC) else {
            return Ok(());
        };
        // Kept locally in full (not placed by the controller): every partition is hosted.
        let store = TxnLogTopic::new(
            topic.id,
            topic.partition_slots(),
            Placement::SingleNode,
            self.config.writes,
        );
        let loaded = store.replay()?;
        *self.store.write().expect("lock") = Some(Arc::new(store));
        let pending = {
            let mut inner = lock_blocking(&self.inner);
            Self::install(&mut inner, loaded)
        };
        for c in pending {
            self.finish(&**broker, c);
        }
        Ok(())
    }

    /// Take replayed ids in; the transactions left half-completed, to complete.
    pub(super) fn install(
        inner: &mut Inner,
        loaded: HashMap<String, super::records::TxnRecord>,
    ) -> Vec<Completion> {
        let mut pending = Vec::new();
        for (id, record) in loaded {
            let meta = TxnMeta::from_record(&id, record);
            inner.by_producer.insert(meta.producer_id, id.clone());
            if matches!(
                meta.status,
                TxnStatus::PrepareCommit | TxnStatus::PrepareAbort
            ) {
                pending.push(Completion {
                    id: id.clone(),
                    producer_id: meta.producer_id,
                    epoch: meta.epoch,
                    commit: meta.status == TxnStatus::PrepareCommit,
                    partitions: meta.partitions.clone(),
                });
            }
            inner.ids.insert(id, meta);
        }
        pending
    }

    /// The lock over every id, once the shards say this broker coordinates `id` now
    /// (asked under the lock: an unload takes it too).
    pub(super) fn lock_for(&self, id: &str) -> Result<MutexGuard<'_, Inner>, i16> {
        let inner = lock_blocking(&self.inner);
        match self.shards.check(id) {
            codes::NONE => Ok(inner),
            code => Err(code),
        }
    }

    /// Whether this broker coordinates `id` now.
    #[must_use]
    pub fn coordinates(&self, id: &str) -> bool {
        self.shards.check(id) == codes::NONE
    }

    pub(super) fn broker(&self) -> Result<Arc<dyn TxnHost>, i16> {
        self.broker
            .get()
            .and_then(Weak::upgrade)
            .ok_or(codes::COORDINATOR_NOT_AVAILABLE)
    }

    /// The internal topic: created on first use on a single node; in cluster mode the
    /// controller creates it (FindCoordinator asks) and `placement` attaches it.
    pub(super) fn store(&self) -> Result<Arc<TxnLogTopic>, i16> {
        if let Some(store) = self.store.read().expect("lock").clone() {
            return Ok(store);
        }
        if self.shards.is_cluster() {
            return Err(codes::NOT_COORDINATOR);
        }
        let _creating = self.creating.lock().expect("lock");
        if let Some(store) = self.store.read().expect("lock").clone() {
            return Ok(store);
        }
        let broker = self.broker()?;
        let topic = broker
            .create_internal_topic(
                INTERNAL_TXN_TOPIC,
                self.config.log_partitions,
                self.config.log_topic_configs(),
            )
            .map_err(|e: ApiError| {
                logging::error(
                    LOGGER,
                    &format!("cannot create {INTERNAL_TXN_TOPIC}: {e:?}"),
                );
                codes::COORDINATOR_NOT_AVAILABLE
            })?;
        let store = Arc::new(TxnLogTopic::new(
            topic.id,
            topic.partition_slots(),
            Placement::SingleNode,
            self.config.writes,
        ));
        *self.store.write().expect("lock") = Some(Arc::clone(&store));
        Ok(store)
    }

    /// Write the id's state; the caller holds the lock. In cluster mode the write waits
    /// for the ISR and fails with NOT_COORDINATOR once this broker lost the partition.
    pub(super) fn persist(&self, meta: &TxnMeta) -> Result<(), i16> {
        let broker = self.broker()?;
        self.store()?
            .append(
                &meta.transactional_id,
                Some(&meta.record()),
                now_ms(),
                broker.data_arrived(),
            )
            .map_err(|e| {
                logging::error(LOGGER, &format!("cannot write transaction state: {e:?}"));
                if e.code == codes::NOT_COORDINATOR {
                    codes::NOT_COORDINATOR
                } else {
                    codes::COORDINATOR_NOT_AVAILABLE
                }
            })
    }

    /// The epoch markers carry: the leader epoch of the id's `__transaction_state`
    /// partition, so partitions refuse markers of a coordinator that was replaced.
    pub(super) fn coordinator_epoch(&self, id: &str) -> i32 {
        if !self.shards.is_cluster() {
            return COORDINATOR_EPOCH;
        }
        self.store()
            .ok()
            .and_then(|s| s.partition(id).ok().map(|p| p.leader_epoch()))
            .unwrap_or(COORDINATOR_EPOCH)
    }

    // -----------------------------------------------------------------------------------
    // InitProducerId

    /// InitProducerId with a transactional id: (producer id, epoch) or an error code
    /// (PRODUCER_FENCED for a stale producer; the handler maps it for old versions).
    pub fn init_producer_id(
        self: &Arc<Self>,
        id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> Result<(i64, i16), i16> {
        self.ensure_started();
        if timeout_ms <= 0 || timeout_ms > self.config.max_timeout_ms {
            return Err(codes::INVALID_TRANSACTION_TIMEOUT);
        }
        let broker = self.broker()?;
        let now = now_ms();
        let fence = {
            let mut inner = self.lock_for(id)?;
            let Some(meta) = inner.ids.get(id).cloned() else {
                let pid = broker
                    .allocate_producer_id()
                    .map_err(|_| codes::COORDINATOR_NOT_AVAILABLE)?;
                let meta = TxnMeta {
                    transactional_id: id.to_string(),
                    producer_id: pid,
                    last_producer_id: -1,
                    last_epoch: -1,
                    epoch: 0,
                    timeout_ms,
                    status: TxnStatus::Empty,
                    partitions: BTreeSet::new(),
                    groups: BTreeSet::new(),
                    start_ms: -1,
                    last_update_ms: now,
                };
                self.persist(&meta)?;
                inner.by_producer.insert(pid, id.to_string());
                inner.ids.insert(id.to_string(), meta);
                return Ok((pid, 0));
            };
            if meta.status.is_preparing() {
                return Err(codes::CONCURRENT_TRANSACTIONS);
            }
            if let Some((pid, epoch)) = expected {
                let current = meta.producer_id == pid && meta.epoch == epoch;
                let retried = (meta.producer_id == pid || meta.last_producer_id == pid)
                    && meta.last_epoch == epoch;
                if retried && !current && meta.status != TxnStatus::Ongoing {
                    return Ok((meta.producer_id, meta.epoch));
                }
                if !current {
                    return Err(codes::PRODUCER_FENCED);
                }
            }
            let mut meta = meta;
            self.bump_epoch(&*broker, &mut inner, &mut meta)?;
            meta.timeout_ms = timeout_ms;
            meta.last_update_ms = now;
            if meta.status == TxnStatus::Ongoing {
                // Fence the open transaction: abort it with the new epoch.
                meta.status = TxnStatus::PrepareAbort;
                self.persist(&meta)?;
                let completion = Completion {
                    id: id.to_string(),
                    producer_id: meta.producer_id,
                    epoch: meta.epoch,
                    commit: false,
                    partitions: meta.partitions.clone(),
                };
                inner.ids.insert(id.to_string(), meta);
                Some(completion)
            } else {
                meta.status = TxnStatus::Empty;
                meta.partitions.clear();
                meta.groups.clear();
                self.persist(&meta)?;
                let out = (meta.producer_id, meta.epoch);
                inner.ids.insert(id.to_string(), meta);
                return Ok(out);
            }
        };
        if let Some(c) = fence {
            let out = (c.producer_id, c.epoch);
            self.finish(&*broker, c);
            return Ok(out);
        }
        Err(codes::UNKNOWN_SERVER_ERROR)
    }

    /// Next epoch, or a new producer id once the epoch is exhausted.
    pub(super) fn bump_epoch(
        &self,
        broker: &dyn TxnHost,
        inner: &mut Inner,
        meta: &mut TxnMeta,
    ) -> Result<(), i16> {
        meta.last_producer_id = meta.producer_id;
        meta.last_epoch = meta.epoch;
        if meta.epoch >= MAX_EPOCH {
            let pid = broker
                .allocate_producer_id()
                .map_err(|_| codes::COORDINATOR_NOT_AVAILABLE)?;
            inner.by_producer.remove(&meta.producer_id);
            inner.by_producer.insert(pid, meta.transactional_id.clone());
            meta.producer_id = pid;
            meta.epoch = 0;
        } else {
            meta.epoch += 1;
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------
    // AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit

    /// The id's state for a request of `producer_id`/`epoch`, checked as Kafka does.
    pub(super) fn checked<'a>(
        inner: &'a mut Inner,
        id: &str,
        producer_id: i64,
        epoch: i16,
    ) -> Result<&'a mut TxnMeta, i16> {
        let meta = inner
            .ids
            .get_mut(id)
            .ok_or(codes::INVALID_PRODUCER_ID_MAPPING)?;
        if meta.producer_id != producer_id {
            return Err(codes::INVALID_PRODUCER_ID_MAPPING);
        }
        if meta.epoch != epoch {
            return Err(codes::PRODUCER_FENCED);
        }
        if meta.status.is_preparing() {
            return Err(codes::CONCURRENT_TRANSACTIONS);
        }
        Ok(meta)
    }

    /// Add partitions (already checked to exist) to the transaction.
    pub fn add_partitions(
        self: &Arc<Self>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Result<(), i16> {
        self.ensure_started();
        let mut inner = self.lock_for(id)?;
        let meta = Self::checked(&mut inner, id, producer_id, epoch)?;
        let mut updated = meta.clone();
        if updated.status != TxnStatus::Ongoing {
            updated.status = TxnStatus::Ongoing;
            updated.partitions.clear();
            updated.start_ms = now_ms();
        }
        let before = updated.partitions.len();
        updated.partitions.extend(partitions.iter().cloned());
        if before == updated.partitions.len() && meta.status == TxnStatus::Ongoing {
            return Ok(());
        }
        updated.last_update_ms = now_ms();
        self.persist(&updated)?;
        *meta = updated;
        Ok(())
    }

    /// AddPartitionsToTxn's `verify_only` (the v4+ broker form): each partition NONE when
    /// the ongoing transaction holds it, else TRANSACTION_ABORTABLE, as Kafka 4.1 answers
    /// (KIP-890); the producer's checks fail every partition alike.
    pub fn verify_partitions(
        self: &Arc<Self>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Result<Vec<i16>, i16> {
        self.ensure_started();
        let mut inner = self.lock_for(id)?;
        let meta = Self::checked(&mut inner, id, producer_id, epoch)?;
        let ongoing = meta.status == TxnStatus::Ongoing;
        Ok(partitions
            .iter()
            .map(|p| {
                if ongoing && meta.partitions.contains(p) {
                    codes::NONE
                } else {
                    codes::TRANSACTION_ABORTABLE
                }
            })
            .collect())
    }

    /// AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction.
    pub fn add_offsets(
        self: &Arc<Self>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
        offsets_partition: (String, i32),
    ) -> Result<(), i16> {
        self.add_partitions(id, producer_id, epoch, &[offsets_partition])?;
        let mut inner = self.lock_for(id)?;
        let meta = Self::checked(&mut inner, id, producer_id, epoch)?;
        meta.groups.insert(group.to_string());
        Ok(())
    }

    /// TxnOffsetCommit's check, when this broker coordinates `id` (`None` otherwise: in a
    /// cluster the group's coordinator trusts the producer's id and epoch, as Kafka's does
    /// for transaction version 1): the transaction is ongoing and has the group.
    #[must_use]
    pub fn verify_offsets(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
    ) -> Option<Result<(), i16>> {
        let mut inner = self.lock_for(id).ok()?;
        Some(
            Self::checked(&mut inner, id, producer_id, epoch).and_then(|meta| {
                if meta.status != TxnStatus::Ongoing || !meta.groups.contains(group) {
                    Err(codes::INVALID_TXN_STATE)
                } else {
                    Ok(())
                }
            }),
        )
    }
}
