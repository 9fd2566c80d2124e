//! One member of a consumer-protocol group: what it subscribes to, where it stands in its
//! reconciliation, and when its session ends.

use std::collections::BTreeSet;

use bytes::Bytes;
use regex::Regex;
use tokio::time::Instant;

use super::reconcile::Progress;
use super::topics::TopicImage;

/// The epoch a member leaves with (KIP-848).
pub const LEAVE_EPOCH: i32 = -1;
/// The epoch a static member leaves with, expecting to come back under its instance id.
pub const STATIC_LEAVE_EPOCH: i32 = -2;

#[derive(Clone, Debug)]
pub struct Subscription {
    pub names: Vec<String>,
    /// The pattern as the client sent it, and compiled (matched against whole names, as
    /// Java's `Pattern.matches`).
    pub regex: Option<(String, Regex)>,
    /// With an authorizer: what the regex matched at the member's last heartbeat among
    /// the topics its principal may DESCRIBE (`resolve`). `None`: the regex is matched
    /// against every topic whenever asked.
    pub resolved: Option<BTreeSet<String>>,
}

/// Which topics a member's principal may DESCRIBE. Kafka resolves a group's regexes with
/// the authority of the member whose heartbeat asked for it, so a regex never reaches a
/// topic the member could not see in Metadata.
#[derive(Clone)]
pub struct TopicFilter(pub std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>);

impl std::fmt::Debug for TopicFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TopicFilter")
    }
}

impl PartialEq for Subscription {
    fn eq(&self, other: &Self) -> bool {
        self.names == other.names
            && self.regex.as_ref().map(|r| &r.0) == other.regex.as_ref().map(|r| &r.0)
    }
}

impl Subscription {
    /// The topics of `image` this subscription covers (names that exist, and regex matches).
    #[must_use]
    pub fn topics(&self, image: &TopicImage) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self
            .names
            .iter()
            .filter(|n| image.get(n).is_some())
            .cloned()
            .collect();
        if let Some((_, re)) = &self.regex {
            match &self.resolved {
                Some(seen) => out.extend(seen.iter().filter(|n| image.get(n).is_some()).cloned()),
                None => out.extend(image.names().filter(|n| re.is_match(n)).map(String::from)),
            }
        }
        out
    }

    /// Fix what the regex matches among the topics `filter` lets the member see (no
    /// filter: no authorizer, the regex keeps matching every topic).
    pub fn resolve(&mut self, image: &TopicImage, filter: Option<&TopicFilter>) {
        self.resolved = match (&self.regex, filter) {
            (Some((_, re)), Some(may_describe)) => Some(
                image
                    .names()
                    .filter(|n| re.is_match(n) && (may_describe.0)(n))
                    .map(String::from)
                    .collect(),
            ),
            _ => None,
        };
    }

    /// Names this subscription asks for, whether they exist or not (a topic created later
    /// must start a new assignment).
    #[must_use]
    pub fn named(&self) -> BTreeSet<String> {
        self.names.iter().cloned().collect()
    }
}

/// Compile a subscription regex as a whole-name match. Kafka uses RE2/J; Rust's `regex`
/// crate has the same linear-time design and nearly the same syntax, which is as close as
/// this gets without RE2/J itself.
pub fn compile_regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(&format!("^(?:{pattern})$")).map_err(|e| e.to_string())
}

/// What a member that joined with the classic protocol (JoinGroup) keeps of it: Kafka's
/// `ClassicMemberMetadata`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassicMember {
    pub session_timeout_ms: i32,
    /// (name, metadata) in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
}

impl ClassicMember {
    /// The protocol the member's JoinGroup and SyncGroup answers name (its first).
    #[must_use]
    pub fn protocol_name(&self) -> &str {
        self.protocols.first().map_or("", |(name, _)| name.as_str())
    }
}

#[derive(Clone, Debug)]
pub struct ConsumerMember {
    pub id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub subscription: Subscription,
    pub server_assignor: Option<String>,
    pub progress: Progress,
    /// A static member that left with epoch -2: it keeps its partitions until it returns
    /// or its session ends.
    pub left_static: bool,
    pub session_deadline: Instant,
    /// When a member asked to revoke partitions is removed if it still holds them.
    pub revocation_deadline: Option<Instant>,
    /// Identifies this life of the member for its timers.
    pub incarnation: u64,
    /// Set for a member using the classic protocol (JoinGroup, SyncGroup, Heartbeat).
    pub classic: Option<ClassicMember>,
    /// A classic member told to rejoin is removed if it has not by then.
    pub join_deadline: Option<Instant>,
    /// A classic member that joined is removed if it has not synced by then.
    pub sync_deadline: Option<Instant>,
    /// Whether a timer watches `join_deadline` and `sync_deadline`.
    pub classic_timer: bool,
}

impl ConsumerMember {
    #[must_use]
    pub fn uses_classic_protocol(&self) -> bool {
        self.classic.is_some()
    }

    #[must_use]
    pub fn epoch(&self) -> i32 {
        if self.left_static {
            STATIC_LEAVE_EPOCH
        } else {
            self.progress.epoch
        }
    }
}
