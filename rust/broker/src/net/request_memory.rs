//! Back-pressure on reading requests (Kafka's `queued.max.request.bytes` memory pool): a
//! request's bytes are reserved once its size is read, before its body is, and given back
//! when it has been answered. While the pool is spent, connections read no further
//! request bodies, so many large requests at once cannot take more memory than the pool.
//! No bound (-1 or 0, Kafka's default) reserves nothing.
//!
//! Every frame fits (the pool is at least `socket.request.max.bytes`, checked when the
//! broker starts), so a request waits only for requests ahead of it to be answered.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct RequestMemory {
    pool: Option<Arc<Semaphore>>,
}

/// Bytes reserved for one request, given back when dropped.
pub struct Reserved(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl RequestMemory {
    /// A pool of `max_bytes` (`queued.max.request.bytes`); no bound when not positive.
    #[must_use]
    pub fn new(max_bytes: i64) -> RequestMemory {
        let pool = usize::try_from(max_bytes)
            .ok()
            .filter(|&n| n > 0)
            .map(|n| Arc::new(Semaphore::new(n.min(Semaphore::MAX_PERMITS))));
        RequestMemory { pool }
    }

    /// Reserve `bytes` (one frame's size), waiting while the pool is spent.
    pub async fn reserve(&self, bytes: usize) -> Reserved {
        let Some(pool) = &self.pool else {
            return Reserved(None);
        };
        let wanted = u32::try_from(bytes).unwrap_or(u32::MAX);
        // The semaphore is never closed, so acquiring only waits.
        Reserved(Arc::clone(pool).acquire_many_owned(wanted).await.ok())
    }

    /// Bytes free now (`None`: no bound).
    #[must_use]
    pub fn available(&self) -> Option<usize> {
        self.pool.as_ref().map(|p| p.available_permits())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_spent_pool_holds_the_next_request_until_one_is_answered() {
        let memory = Arc::new(RequestMemory::new(100));
        let first = memory.reserve(80).await;
        assert_eq!(memory.available(), Some(20));
        let waiting = {
            let memory = Arc::clone(&memory);
            tokio::spawn(async move { memory.reserve(50).await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "80 + 50 bytes do not fit in 100");
        drop(first);
        let second = waiting.await.unwrap();
        assert_eq!(memory.available(), Some(50));
        drop(second);
        assert_eq!(memory.available(), Some(100));
        let unbounded = RequestMemory::new(-1);
        let _any = unbounded.reserve(usize::MAX).await;
        assert_eq!(unbounded.available(), None);
    }
}
