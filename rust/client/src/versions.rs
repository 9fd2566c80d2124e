//! Which version of each API this client speaks, and the choice per connection: the highest
//! version both this client and the broker support (the broker's ranges come from
//! ApiVersions when the connection opens).

use std::collections::HashMap;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::VersionRange;

/// The versions this client encodes correctly: the caps stop before versions that address
/// topics by id only (Fetch 13, Produce 13) or need fields this client does not fill.
pub(crate) const API_VERSIONS: VersionRange = VersionRange { min: 0, max: 3 };
pub(crate) const METADATA: VersionRange = VersionRange { min: 1, max: 12 };
pub(crate) const LIST_OFFSETS: VersionRange = VersionRange { min: 1, max: 7 };
pub(crate) const FETCH: VersionRange = VersionRange { min: 4, max: 12 };
pub(crate) const PRODUCE: VersionRange = VersionRange { min: 3, max: 9 };
/// Up to v4: later versions add transaction fields (two-phase commit) this client leaves out.
pub(crate) const INIT_PRODUCER_ID: VersionRange = VersionRange { min: 0, max: 4 };
/// Up to v4: v5 and v6 only add error codes and key types this client does not ask about.
pub(crate) const FIND_COORDINATOR: VersionRange = VersionRange { min: 0, max: 4 };
/// v1 (flexible) only: Kafka 4 accepts nothing older.
pub(crate) const WRITE_TXN_MARKERS: VersionRange = VersionRange { min: 1, max: 1 };

/// A broker's supported range per API key.
#[derive(Debug, Default, Clone)]
pub(crate) struct BrokerVersions(HashMap<i16, VersionRange>);

impl BrokerVersions {
    pub(crate) fn insert(&mut self, key: i16, range: VersionRange) {
        self.0.insert(key, range);
    }

    /// The highest version in both ranges, or what the broker offers when they do not meet.
    pub(crate) fn pick(&self, key: ApiKey, ours: VersionRange) -> Result<i16, String> {
        let Some(theirs) = self.0.get(&(key as i16)) else {
            return Err("none".to_string());
        };
        let both = ours.intersect(theirs);
        if both.is_empty() {
            Err(theirs.to_string())
        } else {
            Ok(both.max)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_highest_common_version_and_refuses_disjoint_ranges() {
        let mut broker = BrokerVersions::default();
        broker.insert(ApiKey::Fetch as i16, VersionRange { min: 0, max: 17 });
        broker.insert(ApiKey::Produce as i16, VersionRange { min: 3, max: 7 });
        broker.insert(ApiKey::Metadata as i16, VersionRange { min: 13, max: 13 });
        assert_eq!(broker.pick(ApiKey::Fetch, FETCH), Ok(12));
        assert_eq!(broker.pick(ApiKey::Produce, PRODUCE), Ok(7));
        assert_eq!(
            broker.pick(ApiKey::Metadata, METADATA),
            Err("13..13".into())
        );
        assert_eq!(
            broker.pick(ApiKey::ListOffsets, LIST_OFFSETS),
            Err("none".into())
        );
    }
}
