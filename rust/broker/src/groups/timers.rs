//! The coordinator's timers, as tokio tasks: the join phase's deadline (rebalance timeout,
//! or the delayed first rebalance), the sync phase's deadline, each member's session
//! expiry, and the periodic offset-retention check.
//!
//! A timer holds the group it concerns and a token (join epoch, generation, member
//! incarnation); when it fires it locks the group and does nothing if the token is stale,
//! so timers are never cancelled, only outdated. Without a tokio runtime (unit tests of the
//! state machine) timers are not started.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::coordinator::{GroupCell, GroupCoordinator};
use super::group::InitialDelay;

fn spawn(task: impl Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(task);
    }
}

pub(super) fn join(
    coordinator: &Arc<GroupCoordinator>,
    cell: &Arc<GroupCell>,
    epoch: u64,
    delay: Duration,
    initial: Option<InitialDelay>,
) {
    let (coordinator, cell) = (Arc::downgrade(coordinator), Arc::clone(cell));
    spawn(async move {
        tokio::time::sleep(delay).await;
        if let Some(coordinator) = coordinator.upgrade() {
            coordinator.with_cell(&cell, |g, cx| g.on_join_timer(epoch, initial, cx));
        }
    });
}

pub(super) fn sync(
    coordinator: &Arc<GroupCoordinator>,
    cell: &Arc<GroupCell>,
    generation: i32,
    delay: Duration,
) {
    let (coordinator, cell) = (Arc::downgrade(coordinator), Arc::clone(cell));
    spawn(async move {
        tokio::time::sleep(delay).await;
        if let Some(coordinator) = coordinator.upgrade() {
            coordinator.with_cell(&cell, |g, cx| g.on_sync_timer(generation, cx));
        }
    });
}

/// Watch a member's heartbeat deadline until it expires or the member is gone; the
/// deadline moves with every heartbeat, so this sleeps again until the latest one.
pub(super) fn session(
    coordinator: &Arc<GroupCoordinator>,
    cell: &Arc<GroupCell>,
    member_id: String,
    incarnation: u64,
    deadline: Instant,
) {
    let (coordinator, cell) = (Arc::downgrade(coordinator), Arc::clone(cell));
    spawn(async move {
        let mut deadline = deadline;
        loop {
            tokio::time::sleep_until(deadline).await;
            let Some(coordinator) = coordinator.upgrade() else {
                return;
            };
            let next = coordinator.with_cell(&cell, |g, cx| {
                g.on_heartbeat_deadline(&member_id, incarnation, cx)
            });
            match next.flatten() {
                Some(next) => deadline = next,
                None => return,
            }
        }
    });
}

pub(super) fn pending(
    coordinator: &Arc<GroupCoordinator>,
    cell: &Arc<GroupCell>,
    member_id: String,
    incarnation: u64,
    timeout: Duration,
) {
    let (coordinator, cell) = (Arc::downgrade(coordinator), Arc::clone(cell));
    spawn(async move {
        tokio::time::sleep(timeout).await;
        if let Some(coordinator) = coordinator.upgrade() {
            coordinator.with_cell(&cell, |g, cx| {
                g.on_pending_deadline(&member_id, incarnation, cx);
            });
        }
    });
}

/// Run `f` every `interval` for as long as the coordinator lives.
pub(super) fn every(
    coordinator: Weak<GroupCoordinator>,
    interval: Duration,
    f: impl Fn(&Arc<GroupCoordinator>) + Send + 'static,
) {
    spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            match coordinator.upgrade() {
                Some(c) => f(&c),
                None => return,
            }
        }
    });
}
