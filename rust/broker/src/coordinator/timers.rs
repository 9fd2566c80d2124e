//! Timers as tokio tasks, for a coordinator: the group coordinator's join phase deadline
//! (rebalance timeout, or the delayed first rebalance), sync phase deadline, each member's
//! session expiry, and the periodic offset-retention check.
//!
//! A timer holds its owner weakly and what it fires holds a token (join epoch, generation,
//! member incarnation); the coordinator's callback locks the group and does nothing if the
//! token is stale, so timers are never cancelled, only outdated. Nothing here knows what a
//! group is: the coordinator says what each timer does. Without a tokio runtime (unit
//! tests of the state machine) timers are not started.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;

fn spawn(task: impl Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(task);
    }
}

/// Run `fire` once after `delay`, if `owner` still lives.
pub fn after<T: Send + Sync + 'static>(
    owner: Weak<T>,
    delay: Duration,
    fire: impl FnOnce(&Arc<T>) + Send + 'static,
) {
    spawn(async move {
        tokio::time::sleep(delay).await;
        if let Some(owner) = owner.upgrade() {
            fire(&owner);
        }
    });
}

/// Run `fire` at `deadline`, and again at each deadline it returns, until it returns
/// `None` or `owner` is gone (a member's session: each heartbeat moves its deadline).
pub fn until_done<T: Send + Sync + 'static>(
    owner: Weak<T>,
    deadline: Instant,
    fire: impl Fn(&Arc<T>) -> Option<Instant> + Send + 'static,
) {
    spawn(async move {
        let mut deadline = deadline;
        loop {
            tokio::time::sleep_until(deadline).await;
            let Some(owner) = owner.upgrade() else {
                return;
            };
            match fire(&owner) {
                Some(next) => deadline = next,
                None => return,
            }
        }
    });
}

/// Run `f` every `interval` for as long as `owner` lives.
pub fn every<T: Send + Sync + 'static>(
    owner: Weak<T>,
    interval: Duration,
    f: impl Fn(&Arc<T>) + Send + 'static,
) {
    spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            match owner.upgrade() {
                Some(owner) => f(&owner),
                None => return,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn timers_fire_while_their_owner_lives() {
        let owner = Arc::new(AtomicUsize::new(0));
        after(Arc::downgrade(&owner), Duration::from_secs(1), |o| {
            o.fetch_add(1, Ordering::SeqCst);
        });
        let start = Instant::now();
        until_done(
            Arc::downgrade(&owner),
            start + Duration::from_secs(2),
            move |o| {
                let n = o.fetch_add(10, Ordering::SeqCst);
                (n < 20).then(|| Instant::now() + Duration::from_secs(1))
            },
        );
        tokio::time::sleep(Duration::from_secs(10)).await;
        // once after 1 s; at 2, 3 and 4 s the session check, which stops itself after 3.
        assert_eq!(owner.load(Ordering::SeqCst), 31);

        let gone = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(AtomicUsize::new(0));
        let seen_by_timer = Arc::clone(&seen);
        every(Arc::downgrade(&gone), Duration::from_secs(1), move |_| {
            seen_by_timer.fetch_add(1, Ordering::SeqCst);
        });
        tokio::time::sleep(Duration::from_millis(3500)).await;
        assert_eq!(seen.load(Ordering::SeqCst), 3);
        drop(gone);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(seen.load(Ordering::SeqCst), 3);
    }
}
