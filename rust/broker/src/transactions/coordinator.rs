//! The transaction coordinator, for both protocols: transaction version 1 (clients add
//! partitions with AddPartitionsToTxn; librdkafka, kafka-python, older Java clients) and
//! version 2 (KIP-890, which ApiVersions finalizes for Kafka 4 clients: Produce v12 and
//! TxnOffsetCommit v5 add partitions implicitly, EndTxn v5 bumps the epoch with every
//! transaction). It keeps every transactional id of this node with its producer id, epoch, state and partitions, kept in
//! memory and written to `__transaction_state` on every change, replayed at start.
//!
//! Completing a transaction (EndTxn, an InitProducerId that fences an open one, a
//! timeout): the state becomes Prepare{Commit,Abort} and is written, the markers are written
//! to every partition of the transaction (`markers`), offsets sent with TxnOffsetCommit are
//! committed to the group coordinator (commit only), then the state becomes
//! Complete{Commit,Abort} and is written. Requests for the id meanwhile get
//! CONCURRENT_TRANSACTIONS (retriable). A Prepare state found at start is completed then.
//!
//! Lock: one mutex over every id, held for a check and a log write, never while markers are
//! written (a marker takes the partition's producer lock, which Produce holds while it asks
//! `verify_produce`).
//!
//! Pending TxnOffsetCommit offsets live in memory only: a broker restart between
//! TxnOffsetCommit and EndTxn loses them (the transaction itself is aborted or committed
//! as its logged state says).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use kafkalite_core::error_codes as codes;
use kafkalite_core::logging;
use kafkalite_core::storage::clock::now_ms;

use super::config::TxnConfig;
use super::log_topic::TxnLogTopic;
use super::markers::write_markers;
use super::state::{PendingOffset, TxnMeta, TxnStatus};
use crate::config::{BrokerConfig, ConfigError};
use crate::errors::ApiError;
use crate::state::{BrokerState, INTERNAL_TXN_TOPIC};

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
    store: OnceLock<TxnLogTopic>,
    broker: OnceLock<Weak<BrokerState>>,
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
    pub(super) offsets: Vec<PendingOffset>,
}

impl TransactionCoordinator {
    pub fn new(config: &BrokerConfig) -> Result<Arc<TransactionCoordinator>, ConfigError> {
        Ok(Self::with_config(TxnConfig::from_raw(&config.raw)?))
    }

    #[must_use]
    pub fn with_config(config: TxnConfig) -> Arc<TransactionCoordinator> {
        Arc::new(TransactionCoordinator {
            config,
            inner: Mutex::new(Inner::default()),
            store: OnceLock::new(),
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
    /// half-completed are completed now.
    pub fn open(self: &Arc<Self>, broker: &Arc<BrokerState>) -> anyhow::Result<()> {
        let _ = self.broker.set(Arc::downgrade(broker));
        let Some(topic) = broker.topic(INTERNAL_TXN_TOPIC) else {
            return Ok(());
        };
        // Kept locally in full (not placed by the controller): every partition is hosted.
        let store = TxnLogTopic::new(topic.hosted());
        let loaded = store.replay()?;
        let _ = self.store.set(store);
        let mut pending = Vec::new();
        {
            let mut inner = self.inner.lock().expect("lock");
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
                        offsets: Vec::new(),
                    });
                }
                inner.ids.insert(id, meta);
            }
        }
        for c in pending {
            self.finish(broker, c);
        }
        Ok(())
    }

    pub(super) fn broker(&self) -> Result<Arc<BrokerState>, i16> {
        self.broker
            .get()
            .and_then(Weak::upgrade)
            .ok_or(codes::COORDINATOR_NOT_AVAILABLE)
    }

    /// The internal topic, created on first use.
    pub(super) fn store(&self) -> Result<&TxnLogTopic, i16> {
        if let Some(store) = self.store.get() {
            return Ok(store);
        }
        let _creating = self.creating.lock().expect("lock");
        if let Some(store) = self.store.get() {
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
        let partitions = topic.hosted();
        Ok(self.store.get_or_init(|| TxnLogTopic::new(partitions)))
    }

    /// Write the id's state; the caller holds the lock.
    pub(super) fn persist(&self, meta: &TxnMeta) -> Result<(), i16> {
        self.store()?
            .append(&meta.transactional_id, Some(&meta.record()), now_ms())
            .map_err(|e| {
                logging::error(LOGGER, &format!("cannot write transaction state: {e:?}"));
                codes::COORDINATOR_NOT_AVAILABLE
            })
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
            let mut inner = self.inner.lock().expect("lock");
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
                    pending_offsets: Vec::new(),
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
            self.bump_epoch(&broker, &mut inner, &mut meta)?;
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
                    offsets: Vec::new(),
                };
                inner.ids.insert(id.to_string(), meta);
                Some(completion)
            } else {
                meta.status = TxnStatus::Empty;
                meta.partitions.clear();
                meta.groups.clear();
                meta.pending_offsets.clear();
                self.persist(&meta)?;
                let out = (meta.producer_id, meta.epoch);
                inner.ids.insert(id.to_string(), meta);
                return Ok(out);
            }
        };
        if let Some(c) = fence {
            let out = (c.producer_id, c.epoch);
            self.finish(&broker, c);
            return Ok(out);
        }
        Err(codes::UNKNOWN_SERVER_ERROR)
    }

    /// Next epoch, or a new producer id once the epoch is exhausted.
    pub(super) fn bump_epoch(
        &self,
        broker: &BrokerState,
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
    fn checked<'a>(
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

    /// Add partitions (already checked to exist) to the transaction; `verify_only` (the
    /// v4+ broker form) only checks they are in it.
    pub fn add_partitions(
        self: &Arc<Self>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
        verify_only: bool,
    ) -> Result<(), i16> {
        self.ensure_started();
        let mut inner = self.inner.lock().expect("lock");
        let meta = Self::checked(&mut inner, id, producer_id, epoch)?;
        if verify_only {
            let all = meta.status == TxnStatus::Ongoing
                && partitions.iter().all(|p| meta.partitions.contains(p));
            return if all {
                Ok(())
            } else {
                Err(codes::INVALID_TXN_STATE)
            };
        }
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

    /// AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction.
    pub fn add_offsets(
        self: &Arc<Self>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
        offsets_partition: (String, i32),
    ) -> Result<(), i16> {
        self.add_partitions(id, producer_id, epoch, &[offsets_partition], false)?;
        let mut inner = self.inner.lock().expect("lock");
        let meta = Self::checked(&mut inner, id, producer_id, epoch)?;
        meta.groups.insert(group.to_string());
        Ok(())
    }

    /// TxnOffsetCommit: remember offsets to commit for `group` if the transaction commits.
    pub fn txn_offset_commit(
        &self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
        offsets: Vec<PendingOffset>,
    ) -> Result<(), i16> {
        let mut inner = self.inner.lock().expect("lock");
        let meta = Self::checked(&mut inner, id, producer_id, epoch)?;
        if meta.status != TxnStatus::Ongoing || !meta.groups.contains(group) {
            return Err(codes::INVALID_TXN_STATE);
        }
        meta.pending_offsets.retain(|o| {
            !offsets
                .iter()
                .any(|n| n.group == o.group && n.topic == o.topic && n.partition == o.partition)
        });
        meta.pending_offsets.extend(offsets);
        Ok(())
    }

    // -----------------------------------------------------------------------------------
    // EndTxn and completion

    /// EndTxn. `bump` (EndTxn v5, transaction version 2, KIP-890): the epoch is bumped
    /// with every transaction, the markers carry the new one, and the answer is the
    /// producer id and epoch for the next transaction.
    pub fn end_txn(
        self: &Arc<Self>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        bump: bool,
    ) -> Result<(i64, i16), i16> {
        self.ensure_started();
        let broker = self.broker()?;
        let completion = {
            let mut inner = self.inner.lock().expect("lock");
            if bump {
                // A retry of an EndTxn whose answer was lost: the epoch before the bump.
                if let Some(m) = inner.ids.get(id) {
                    let done = matches!(
                        (m.status, commit),
                        (TxnStatus::CompleteCommit, true) | (TxnStatus::CompleteAbort, false)
                    );
                    if done && m.producer_id == producer_id && m.last_epoch == epoch {
                        return Ok((m.producer_id, m.epoch));
                    }
                }
            }
            let mut meta = Self::checked(&mut inner, id, producer_id, epoch)?.clone();
            match (meta.status, commit) {
                (TxnStatus::Ongoing, _) => {}
                // TV2 clients may abort without having sent anything: a new epoch only.
                (
                    TxnStatus::Empty | TxnStatus::CompleteCommit | TxnStatus::CompleteAbort,
                    false,
                ) if bump => {
                    self.bump_epoch(&broker, &mut inner, &mut meta)?;
                    meta.status = TxnStatus::CompleteAbort;
                    meta.last_update_ms = now_ms();
                    self.persist(&meta)?;
                    let out = (meta.producer_id, meta.epoch);
                    inner.ids.insert(id.to_string(), meta);
                    return Ok(out);
                }
                // A retry of a completed EndTxn.
                (TxnStatus::CompleteCommit, true) | (TxnStatus::CompleteAbort, false) => {
                    return Ok((meta.producer_id, meta.epoch))
                }
                _ => return Err(codes::INVALID_TXN_STATE),
            }
            let marker_pid = meta.producer_id;
            if bump {
                self.bump_epoch(&broker, &mut inner, &mut meta)?;
            }
            // A new producer id (the epoch was exhausted) leaves the markers on the old one.
            let marker_epoch = if meta.producer_id == marker_pid {
                meta.epoch
            } else {
                meta.last_epoch
            };
            meta.status = if commit {
                TxnStatus::PrepareCommit
            } else {
                TxnStatus::PrepareAbort
            };
            meta.last_update_ms = now_ms();
            self.persist(&meta)?;
            let completion = Completion {
                id: id.to_string(),
                producer_id: marker_pid,
                epoch: marker_epoch,
                commit,
                partitions: meta.partitions.clone(),
                offsets: std::mem::take(&mut meta.pending_offsets),
            };
            inner.ids.insert(id.to_string(), meta);
            completion
        };
        self.finish(&broker, completion);
        let inner = self.inner.lock().expect("lock");
        let meta = inner
            .ids
            .get(id)
            .ok_or(codes::INVALID_PRODUCER_ID_MAPPING)?;
        Ok((meta.producer_id, meta.epoch))
    }

    /// Produce v12 (transaction version 2): the partition of a transactional batch joins
    /// the producer's transaction implicitly (Kafka's broker sends AddPartitionsToTxn).
    pub fn add_partition_implicitly(
        self: &Arc<Self>,
        producer_id: i64,
        epoch: i16,
        topic: &str,
        partition: i32,
    ) -> Result<(), (i16, String)> {
        let id = {
            let inner = self.inner.lock().expect("lock");
            inner.by_producer.get(&producer_id).cloned()
        };
        let Some(id) = id else {
            return Err((
                codes::INVALID_TXN_STATE,
                format!("producer {producer_id} has no transactional id"),
            ));
        };
        self.add_partitions(
            &id,
            producer_id,
            epoch,
            &[(topic.to_string(), partition)],
            false,
        )
        .map_err(|code| {
            let code = if code == codes::PRODUCER_FENCED {
                codes::INVALID_PRODUCER_EPOCH
            } else {
                code
            };
            (
                code,
                format!("{topic}-{partition} cannot join the transaction of {id}"),
            )
        })
    }

    /// Markers, offsets, then the Complete state (module docs).
    pub(super) fn finish(&self, broker: &Arc<BrokerState>, c: Completion) {
        write_markers(broker, c.producer_id, c.epoch, c.commit, &c.partitions);
        if c.commit {
            let mut by_group: HashMap<String, Vec<_>> = HashMap::new();
            for o in c.offsets {
                by_group
                    .entry(o.group)
                    .or_default()
                    .push((o.topic, o.partition, o.committed));
            }
            for (group, commits) in by_group {
                if let Err(code) = broker.groups.commit_transactional(&group, commits) {
                    logging::error(
                        LOGGER,
                        &format!("offsets of transaction {} for group {group} not committed: error {code}", c.id),
                    );
                }
            }
        }
        let mut inner = self.inner.lock().expect("lock");
        if let Some(meta) = inner.ids.get_mut(&c.id) {
            let mut updated = meta.clone();
            updated.status = if c.commit {
                TxnStatus::CompleteCommit
            } else {
                TxnStatus::CompleteAbort
            };
            updated.partitions.clear();
            updated.groups.clear();
            updated.pending_offsets.clear();
            updated.last_update_ms = now_ms();
            if self.persist(&updated).is_ok() {
                *meta = updated;
            } else {
                // Still done in the partitions; memory says so even if the log could not.
                meta.status = updated.status;
                meta.partitions.clear();
            }
        }
    }
}
