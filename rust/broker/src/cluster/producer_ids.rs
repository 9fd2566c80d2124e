//! Producer ids for InitProducerId: handed out in increasing order, never reused. The next
//! id is persisted by the metadata store after every allocation (by the caller, under its
//! admin lock), so a restart continues above every id already issued.
//!
//! In cluster mode the ids come in blocks the controller side claims from ZooKeeper
//! (`/latest_producer_id_block`, as Kafka's ZooKeeper mode did), so ids are unique across
//! brokers: the broker hands out its block and asks for the next when it runs dry.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

/// The first id a new data dir hands out.
pub const FIRST_PRODUCER_ID: i64 = 1000;

#[derive(Debug)]
pub struct ProducerIds {
    next: AtomicI64,
    /// Cluster mode: (next, last) of the current block, inclusive; `next > last` when
    /// there is none. Held while a new block is fetched, so one fetch serves everyone.
    block: Mutex<(i64, i64)>,
}

impl ProducerIds {
    /// Continue from a stored next id (never below `FIRST_PRODUCER_ID`).
    #[must_use]
    pub fn starting_at(stored_next: i64) -> ProducerIds {
        ProducerIds {
            next: AtomicI64::new(stored_next.max(FIRST_PRODUCER_ID)),
            block: Mutex::new((0, -1)),
        }
    }

    /// Cluster mode: the next id of this broker's block, calling `fetch` for a new
    /// (first, last) block when it is used up.
    pub fn allocate_from_block<E>(
        &self,
        fetch: impl FnOnce() -> Result<(i64, i64), E>,
    ) -> Result<i64, E> {
        let mut block = self.block.lock().expect("lock");
        if block.0 > block.1 {
            *block = fetch()?;
        }
        let id = block.0;
        block.0 += 1;
        self.next.fetch_max(id + 1, Ordering::SeqCst);
        Ok(id)
    }

    /// A fresh id; the caller persists `next()` before handing it out.
    pub fn allocate(&self) -> i64 {
        self.next.fetch_add(1, Ordering::SeqCst)
    }

    /// The id the next `allocate` returns (what the store keeps).
    #[must_use]
    pub fn next(&self) -> i64 {
        self.next.load(Ordering::SeqCst)
    }

    /// Was `id` handed out by this cluster (so a client may bump its epoch)?
    #[must_use]
    pub fn was_issued(&self, id: i64) -> bool {
        id >= 0 && id < self.next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_increase_and_survive_a_restart() {
        let ids = ProducerIds::starting_at(0);
        assert_eq!(ids.allocate(), FIRST_PRODUCER_ID);
        assert_eq!(ids.allocate(), FIRST_PRODUCER_ID + 1);
        assert!(ids.was_issued(FIRST_PRODUCER_ID + 1));
        assert!(!ids.was_issued(FIRST_PRODUCER_ID + 2));
        assert!(!ids.was_issued(-1));
        let restarted = ProducerIds::starting_at(ids.next());
        assert_eq!(restarted.allocate(), FIRST_PRODUCER_ID + 2);
    }

    #[test]
    fn blocks_are_used_up_before_the_next_is_fetched() {
        let ids = ProducerIds::starting_at(0);
        let mut fetched = Vec::new();
        let mut take = |first: i64| {
            ids.allocate_from_block(|| {
                fetched.push(first);
                Ok::<_, ()>((first, first + 1))
            })
            .unwrap()
        };
        assert_eq!([take(5000), take(9000), take(7000)], [5000, 5001, 7000]);
        assert_eq!(fetched, [5000, 7000]);
        assert!(ids.was_issued(7000));
        let failing = ProducerIds::starting_at(0);
        assert_eq!(
            failing.allocate_from_block(|| Err("no ZooKeeper")),
            Err("no ZooKeeper")
        );
    }
}
