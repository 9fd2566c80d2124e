//! Ending transactions: EndTxn (both transaction versions), Produce v12's implicit
//! partitions, and completing a transaction (markers, then the Complete state), which
//! EndTxn, fencing, timeouts and loads share.

use crate::coordinator::internal_log::lock_blocking;
use std::sync::Arc;

use kafkalite_core::error_codes as codes;
use kafkalite_core::storage::clock::now_ms;

use super::coordinator::{Completion, TransactionCoordinator};
use super::markers::Marker;
use super::state::TxnStatus;
use crate::transactions::host::TxnHost;

impl TransactionCoordinator {
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
            let mut inner = self.lock_for(id)?;
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
                    self.bump_epoch(&*broker, &mut inner, &mut meta)?;
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
                self.bump_epoch(&*broker, &mut inner, &mut meta)?;
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
            };
            inner.ids.insert(id.to_string(), meta);
            completion
        };
        if !self.finish(&*broker, completion) {
            // Another broker took the id over mid-way: it completes the transaction.
            return Err(codes::NOT_COORDINATOR);
        }
        let inner = self.lock_for(id)?;
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
            let inner = lock_blocking(&self.inner);
            inner.by_producer.get(&producer_id).cloned()
        };
        let Some(id) = id else {
            return Err((
                codes::INVALID_TXN_STATE,
                format!("producer {producer_id} has no transactional id"),
            ));
        };
        self.add_partitions(&id, producer_id, epoch, &[(topic.to_string(), partition)])
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

    /// Markers, then the Complete state (module docs). False when this broker stopped
    /// coordinating the id before the markers were all written: the state stays Prepare in
    /// the log, and the new coordinator completes it when it loads the partition.
    pub(super) fn finish(&self, broker: &dyn TxnHost, c: Completion) -> bool {
        let marker = Marker {
            producer_id: c.producer_id,
            epoch: c.epoch,
            commit: c.commit,
            coordinator_epoch: self.coordinator_epoch(&c.id),
            transaction_version: 0,
        };
        if !self
            .markers
            .write(broker, &marker, &c.partitions, &|| self.coordinates(&c.id))
        {
            return false;
        }
        let Ok(mut inner) = self.lock_for(&c.id) else {
            return false;
        };
        if let Some(meta) = inner.ids.get_mut(&c.id) {
            let mut updated = meta.clone();
            updated.status = if c.commit {
                TxnStatus::CompleteCommit
            } else {
                TxnStatus::CompleteAbort
            };
            updated.partitions.clear();
            updated.groups.clear();
            updated.last_update_ms = now_ms();
            match self.persist(&updated) {
                Ok(()) => *meta = updated,
                Err(codes::NOT_COORDINATOR) => return false,
                Err(_) => {
                    // Still done in the partitions; memory says so even if the log could not.
                    meta.status = updated.status;
                    meta.partitions.clear();
                }
            }
        }
        true
    }
}
