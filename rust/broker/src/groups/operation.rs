//! One operation on a group, classic or consumer protocol: its clock, its settings and the
//! effects (timers to start, records to write) it asks the coordinator to carry out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::groups::config::GroupConfig;

/// The protocol type of consumer groups (KIP-848 groups, and classic members using it).
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// The first rebalance of an empty group: wait `delay_ms`, and again (up to `remaining_ms`
/// in all) while new members keep arriving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InitialDelay {
    pub configured_ms: i64,
    pub delay_ms: i64,
    pub remaining_ms: i64,
}

/// What a state change asks the coordinator to do.
#[derive(Debug)]
pub enum Effect {
    /// Complete the join phase `epoch` after `delay` (unless it completes earlier).
    JoinTimer {
        epoch: u64,
        delay: Duration,
        initial: Option<InitialDelay>,
    },
    /// Members that have not sent SyncGroup for `generation` by then are removed.
    SyncTimer { generation: i32, delay: Duration },
    /// Expire the member if its heartbeat deadline passes.
    WatchMember {
        member_id: String,
        incarnation: u64,
        deadline: Instant,
    },
    /// Forget a member id handed out with MEMBER_ID_REQUIRED if it does not rejoin in time.
    WatchPending {
        member_id: String,
        incarnation: u64,
        timeout: Duration,
    },
    /// Write the group's metadata record.
    StoreGroup,
    /// Expire a consumer-protocol member whose session runs out.
    ConsumerSession {
        member_id: String,
        incarnation: u64,
        deadline: Instant,
    },
    /// Remove a consumer-protocol member that has not revoked its partitions by then.
    ConsumerRevocation {
        member_id: String,
        incarnation: u64,
        delay: Duration,
    },
    /// Remove a classic member of a consumer group that has not rejoined or synced in time.
    ConsumerClassicDeadline {
        member_id: String,
        incarnation: u64,
        deadline: Instant,
    },
}

/// The clock, settings and effect list of one operation.
pub struct Ctx<'a> {
    pub now: Instant,
    pub now_ms: i64,
    pub config: &'a GroupConfig,
    pub incarnations: &'a AtomicU64,
    pub effects: Vec<Effect>,
}

impl Ctx<'_> {
    pub(crate) fn incarnation(&self) -> u64 {
        self.incarnations.fetch_add(1, Ordering::Relaxed)
    }
}
