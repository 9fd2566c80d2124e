//! Feature flags (KIP-584) this broker supports and has finalized, as ApiVersions v3+
//! reports them and UpdateFeatures answers about them.
//!
//! Only features whose semantics are implemented are listed, because Kafka 4 clients act on
//! them: `transaction.version` 2 (KIP-890: an epoch bump per transaction, partitions added
//! by Produce v12), and `group.version` 1 (KIP-848's consumer protocol) only while the
//! broker serves ConsumerGroupHeartbeat, and `share.version` 2 (KIP-932's share groups, with
//! ShareFetch and ShareAcknowledge v2: renew acknowledgements and acquire modes). `metadata.version` and `kraft.version` describe a
//! KRaft metadata log and quorum, which a cluster with a ZooKeeper-elected controller does
//! not have (Kafka 3.x brokers in ZooKeeper mode finalized neither), so they are absent:
//! no client or tool of Kafka 4.1 needs them to talk to a broker.
//!
//! The levels are fixed: nothing here can be switched off or on at run time (UpdateFeatures
//! accepts only the level already finalized).

/// One feature: the range this broker supports and its finalized level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feature {
    pub name: &'static str,
    pub min_version: i16,
    pub max_version: i16,
    /// 0 = not finalized (Kafka leaves such a feature out of the finalized list).
    pub finalized: i16,
}

pub const TRANSACTION_VERSION: &str = "transaction.version";
pub const GROUP_VERSION: &str = "group.version";
pub const SHARE_VERSION: &str = "share.version";

/// The epoch of the finalized set: it never changes while the process runs.
pub const FINALIZED_EPOCH: i64 = 1;

/// Every feature this broker knows.
#[must_use]
pub fn all() -> Vec<Feature> {
    vec![
        Feature {
            name: GROUP_VERSION,
            min_version: 0,
            max_version: 1,
            finalized: 1,
        },
        Feature {
            name: SHARE_VERSION,
            min_version: 0,
            max_version: 2,
            finalized: 2,
        },
        Feature {
            name: TRANSACTION_VERSION,
            min_version: 0,
            max_version: 2,
            finalized: 2,
        },
    ]
}

#[must_use]
pub fn find(name: &str) -> Option<Feature> {
    all().into_iter().find(|f| f.name == name)
}

/// Why a request to set `name` to `level` cannot be honoured, or `None` when it asks for
/// what is already finalized (a no-op that succeeds, as Kafka answers it).
#[must_use]
pub fn refuse_update(name: &str, level: i16) -> Option<String> {
    let Some(f) = find(name) else {
        return Some(format!(
            "Invalid update version {level} for feature {name}. The broker does not support this feature."
        ));
    };
    if level == f.finalized {
        return None;
    }
    if level < f.min_version || level > f.max_version {
        return Some(format!(
            "Invalid update version {level} for feature {name}. Supported versions are {}-{}.",
            f.min_version, f.max_version
        ));
    }
    Some(format!(
        "Feature {name} is fixed at level {} in kafkalite: its level {level} is supported by the code but cannot be switched to while the cluster runs.",
        f.finalized
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_version_is_finalized_at_two() {
        let f = find(TRANSACTION_VERSION).unwrap();
        assert_eq!((f.min_version, f.max_version, f.finalized), (0, 2, 2));
        assert!(refuse_update(TRANSACTION_VERSION, 2).is_none());
        assert!(refuse_update(TRANSACTION_VERSION, 1)
            .unwrap()
            .contains("fixed at level 2"));
        assert!(refuse_update(TRANSACTION_VERSION, 3)
            .unwrap()
            .contains("Supported versions are 0-2"));
        assert!(refuse_update("metadata.version", 27)
            .unwrap()
            .contains("does not support"));
    }

    #[test]
    fn group_version_is_finalized_while_kip_848_is_served() {
        let heartbeat = kafka_protocol::messages::ApiKey::ConsumerGroupHeartbeat;
        assert_eq!(crate::handlers::supported_range(heartbeat), Some((0, 1)));
        assert_eq!(find(GROUP_VERSION).map(|f| f.finalized), Some(1));
    }
}
