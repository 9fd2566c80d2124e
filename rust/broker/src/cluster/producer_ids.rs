//! Producer ids for InitProducerId: handed out in increasing order, never reused. The next
//! id is persisted by the metadata store after every allocation (by the caller, under its
//! admin lock), so a restart continues above every id already issued.

use std::sync::atomic::{AtomicI64, Ordering};

/// The first id a new data dir hands out.
pub const FIRST_PRODUCER_ID: i64 = 1000;

#[derive(Debug)]
pub struct ProducerIds {
    next: AtomicI64,
}

impl ProducerIds {
    /// Continue from a stored next id (never below `FIRST_PRODUCER_ID`).
    #[must_use]
    pub fn starting_at(stored_next: i64) -> ProducerIds {
        ProducerIds {
            next: AtomicI64::new(stored_next.max(FIRST_PRODUCER_ID)),
        }
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
}
