//! What other parts of the broker ask the coordinator: Produce's verification of a
//! transactional batch, DescribeTransactions and ListTransactions.

use crate::coordinator::internal_log::lock_blocking;
use kafkalite_core::error_codes as codes;

use super::coordinator::TransactionCoordinator;
use super::state::{TxnMeta, TxnStatus};

impl TransactionCoordinator {
    /// May `producer_id`/`epoch` write a transactional batch to this partition? `Ok` also
    /// for producers this coordinator does not know when they may belong to another
    /// coordinator (cluster mode).
    pub fn verify_produce(
        &self,
        producer_id: i64,
        epoch: i16,
        topic: &str,
        partition: i32,
        local_only: bool,
    ) -> Result<(), (i16, String)> {
        let inner = lock_blocking(&self.inner);
        let Some(meta) = inner
            .by_producer
            .get(&producer_id)
            .and_then(|id| inner.ids.get(id))
        else {
            if !local_only {
                return Ok(());
            }
            return Err((
                codes::INVALID_TXN_STATE,
                format!("producer {producer_id} has no transaction"),
            ));
        };
        if epoch < meta.epoch {
            return Err((
                codes::INVALID_PRODUCER_EPOCH,
                format!(
                    "epoch {epoch} of producer {producer_id} is older than the current {}",
                    meta.epoch
                ),
            ));
        }
        let key = (topic.to_string(), partition);
        if meta.status != TxnStatus::Ongoing
            || meta.epoch != epoch
            || !meta.partitions.contains(&key)
        {
            return Err((
                codes::INVALID_TXN_STATE,
                format!(
                    "{topic}-{partition} is not part of an ongoing transaction of producer {producer_id}"
                ),
            ));
        }
        Ok(())
    }

    /// The state of `id`, for DescribeTransactions.
    #[must_use]
    pub fn describe(&self, id: &str) -> Option<TxnMeta> {
        lock_blocking(&self.inner).ids.get(id).cloned()
    }

    /// Every id, for ListTransactions.
    #[must_use]
    pub fn list(&self) -> Vec<TxnMeta> {
        self.inner
            .lock()
            .expect("lock")
            .ids
            .values()
            .cloned()
            .collect()
    }
}
