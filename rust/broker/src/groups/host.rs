//! What the group coordinator asks of its broker beyond any coordinator's needs
//! (`coordinator::host`).

use crate::config::group::ConsumerTimeouts;
use crate::coordinator::host::CoordinatorHost;

pub trait GroupHost: CoordinatorHost {
    /// A consumer group's session and heartbeat timeouts: its group configs over the
    /// broker's (read at each heartbeat, so a change reaches members at their next one).
    fn consumer_timeouts(&self, group_id: &str) -> ConsumerTimeouts;
}
