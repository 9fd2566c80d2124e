//! One member of a classic group, and what its pending JoinGroup / SyncGroup calls receive.

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// What a JoinGroup call is answered with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JoinResult {
    pub error: i16,
    pub member_id: String,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub skip_assignment: bool,
    /// Every member's metadata for the chosen protocol; only the leader gets them.
    pub members: Vec<JoinedMember>,
}

impl JoinResult {
    #[must_use]
    pub fn error(member_id: &str, error: i16) -> JoinResult {
        JoinResult {
            error,
            member_id: member_id.to_string(),
            generation_id: -1,
            ..JoinResult::default()
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

/// What a SyncGroup call is answered with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncResult {
    pub error: i16,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncResult {
    #[must_use]
    pub fn error(error: i16) -> SyncResult {
        SyncResult {
            error,
            ..SyncResult::default()
        }
    }
}

/// An answer now, or one that arrives when the rebalance reaches the right point.
pub enum Reply<T> {
    Now(T),
    Later(oneshot::Receiver<T>),
}

pub struct Member {
    pub id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    /// (name, metadata) in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
    pub assignment: Bytes,
    /// Set while a JoinGroup of this member waits for the join phase to complete.
    pub awaiting_join: Option<oneshot::Sender<JoinResult>>,
    /// Set while a SyncGroup of this member waits for the leader's assignment.
    pub awaiting_sync: Option<oneshot::Sender<SyncResult>>,
    /// Joined during the current rebalance and not yet told its generation.
    pub is_new: bool,
    /// The member is removed if no heartbeat (or other sign of life) arrives by then.
    pub heartbeat_deadline: Instant,
    /// Distinguishes this member from an earlier one with the same id (its expiry timer
    /// stops when the incarnation changes).
    pub incarnation: u64,
    /// Order of arrival: the earliest remaining member becomes leader.
    pub join_seq: u64,
}

impl Member {
    #[must_use]
    pub fn is_awaiting_join(&self) -> bool {
        self.awaiting_join.is_some()
    }

    #[must_use]
    pub fn is_awaiting_sync(&self) -> bool {
        self.awaiting_sync.is_some()
    }

    /// The same protocols, in the same order, with the same metadata.
    #[must_use]
    pub fn matches(&self, protocols: &[(String, Bytes)]) -> bool {
        self.protocols == protocols
    }

    #[must_use]
    pub fn supports(&self, protocol: &str) -> bool {
        self.protocols.iter().any(|(name, _)| name == protocol)
    }

    /// This member's metadata for `protocol` (empty if it does not support it).
    #[must_use]
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }

    /// The member's most preferred protocol among `candidates`.
    #[must_use]
    pub fn vote<'a>(&'a self, candidates: &[&str]) -> Option<&'a str> {
        self.protocols
            .iter()
            .map(|(name, _)| name.as_str())
            .find(|name| candidates.contains(name))
    }

    /// A member that awaits a rebalance is alive by definition; a new one must complete its
    /// first join in time.
    #[must_use]
    pub fn keeps_alive_by_waiting(&self) -> bool {
        !self.is_new && (self.is_awaiting_join() || self.is_awaiting_sync())
    }

    pub fn answer_join(&mut self, result: JoinResult) {
        if let Some(tx) = self.awaiting_join.take() {
            let _ = tx.send(result);
        }
    }

    pub fn answer_sync(&mut self, result: SyncResult) {
        if let Some(tx) = self.awaiting_sync.take() {
            let _ = tx.send(result);
        }
    }
}
