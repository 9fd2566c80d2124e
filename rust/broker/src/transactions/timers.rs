//! The coordinator's background work: aborting transactions past their timeout and
//! forgetting transactional ids idle past `transactional.id.expiration.ms`.

use crate::coordinator::internal_log::lock_blocking;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use kafkalite_core::logging;
use kafkalite_core::storage::clock::now_ms;

use super::coordinator::{Completion, TransactionCoordinator, LOGGER};
use super::state::TxnStatus;

impl TransactionCoordinator {
    /// Start the timeout / expiration task once a runtime is there.
    pub(super) fn ensure_started(self: &Arc<Self>) {
        if self.started.load(Ordering::Acquire) || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(self);
        let every = Duration::from_millis(self.config.abort_check_interval_ms);
        let expire_every = self.config.expire_check_interval_ms;
        tokio::spawn(async move {
            let mut last_expiry = now_ms();
            loop {
                tokio::time::sleep(every).await;
                let Some(c) = weak.upgrade() else { return };
                let now = now_ms();
                let expire = now - last_expiry >= expire_every as i64;
                if expire {
                    last_expiry = now;
                }
                // Markers are file appends: off the async workers.
                let _ = tokio::task::spawn_blocking(move || c.tick(now, expire)).await;
            }
        });
    }

    /// Abort transactions past their timeout (bumping the epoch, so the producer is
    /// fenced) and, when `expire`, forget ids idle past `transactional.id.expiration.ms`.
    pub fn tick(self: &Arc<Self>, now: i64, expire: bool) {
        let Ok(broker) = self.broker() else { return };
        let mut aborts = Vec::new();
        {
            let mut inner = lock_blocking(&self.inner);
            let timed_out: Vec<String> = inner
                .ids
                .values()
                .filter(|m| {
                    m.status == TxnStatus::Ongoing
                        && now.saturating_sub(m.start_ms) > i64::from(m.timeout_ms)
                })
                .map(|m| m.transactional_id.clone())
                .collect();
            for id in timed_out {
                let Some(mut meta) = inner.ids.get(&id).cloned() else {
                    continue;
                };
                if self.bump_epoch(&*broker, &mut inner, &mut meta).is_err() {
                    continue;
                }
                meta.status = TxnStatus::PrepareAbort;
                meta.last_update_ms = now;
                if self.persist(&meta).is_err() {
                    continue;
                }
                logging::info(
                    LOGGER,
                    &format!(
                        "aborting transaction {id}: it passed its timeout of {} ms",
                        meta.timeout_ms
                    ),
                );
                aborts.push(Completion {
                    id: id.clone(),
                    producer_id: meta.producer_id,
                    epoch: meta.epoch,
                    commit: false,
                    partitions: meta.partitions.clone(),
                });
                inner.ids.insert(id, meta);
            }
            if expire {
                let expired: Vec<String> = inner
                    .ids
                    .values()
                    .filter(|m| {
                        matches!(
                            m.status,
                            TxnStatus::Empty | TxnStatus::CompleteCommit | TxnStatus::CompleteAbort
                        ) && now.saturating_sub(m.last_update_ms) > self.config.id_expiration_ms
                    })
                    .map(|m| m.transactional_id.clone())
                    .collect();
                for id in expired {
                    if let Ok(store) = self.store() {
                        if store.append(&id, None, now, broker.data_arrived()).is_err() {
                            continue;
                        }
                    }
                    if let Some(meta) = inner.ids.remove(&id) {
                        inner.by_producer.remove(&meta.producer_id);
                    }
                }
            }
        }
        for c in aborts {
            self.finish(&*broker, c);
        }
    }
}
