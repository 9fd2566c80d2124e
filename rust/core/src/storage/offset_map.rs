//! The cleaner's key → latest offset map (Kafka's `SkinnyOffsetMap`): keys are stored as
//! 128-bit digests, so memory per key is fixed whatever the key's size.
//!
//! The digest is two SipHash-1-3 values under per-map random keys. A collision would make
//! the cleaner drop the older of two different keys' records, so the digest must be wide
//! enough that chance collisions never happen (2^-128 per pair) and unpredictable, so a
//! producer cannot craft a key that collides with someone else's.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};

/// Holds 2^21 buckets at hashbrown's 7/8 load: 24 bytes per entry plus a control byte,
/// about 52 MiB, and the table never has to double past that.
pub const DEFAULT_MAX_ENTRIES: usize = 1_835_008;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyDigest(u64, u64);

impl Hash for KeyDigest {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Already uniformly random: half of it is as good a table hash as any.
        state.write_u64(self.0);
    }
}

/// Passes a `KeyDigest`'s first word through as the table hash.
#[derive(Default)]
pub struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only KeyDigest is ever hashed here, through write_u64; fold anything else.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
}

pub struct OffsetMap {
    offsets: HashMap<KeyDigest, i64, BuildHasherDefault<DigestHasher>>,
    seeds: (RandomState, RandomState),
    max_entries: usize,
}

impl OffsetMap {
    #[must_use]
    pub fn new(max_entries: usize) -> OffsetMap {
        OffsetMap {
            offsets: HashMap::default(),
            seeds: (RandomState::new(), RandomState::new()),
            max_entries: max_entries.max(1),
        }
    }

    fn digest(&self, key: &[u8]) -> KeyDigest {
        KeyDigest(self.seeds.0.hash_one(key), self.seeds.1.hash_one(key))
    }

    /// Remember `offset` for `key` unless a later one is already known.
    pub fn put(&mut self, key: &[u8], offset: i64) {
        let latest = self.offsets.entry(self.digest(key)).or_insert(offset);
        *latest = (*latest).max(offset);
    }

    /// The latest offset seen for `key`.
    #[must_use]
    pub fn latest(&self, key: &[u8]) -> Option<i64> {
        self.offsets.get(&self.digest(key)).copied()
    }

    /// Would `more` new keys overflow the map? The cleaner stops mapping before a batch that
    /// might, so memory stays bounded.
    #[must_use]
    pub fn would_overflow(&self, more: usize) -> bool {
        self.offsets.len().saturating_add(more) > self.max_entries
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_latest_offset_per_key() {
        let mut map = OffsetMap::new(100);
        map.put(b"a", 1);
        map.put(b"b", 2);
        map.put(b"a", 7);
        map.put(b"a", 5);
        assert_eq!(map.latest(b"a"), Some(7));
        assert_eq!(map.latest(b"b"), Some(2));
        assert_eq!(map.latest(b"c"), None);
        assert_eq!(map.latest(b""), None);
        map.put(b"", 9);
        assert_eq!(map.latest(b""), Some(9));
        assert_eq!(map.len(), 3);
    }

    #[test]
    fn many_keys_do_not_collide_and_overflow_is_reported() {
        let n = 200_000;
        let mut map = OffsetMap::new(n);
        for i in 0..n {
            map.put(format!("key-{i}").as_bytes(), i as i64);
        }
        assert_eq!(map.len(), n);
        for i in (0..n).step_by(997) {
            assert_eq!(map.latest(format!("key-{i}").as_bytes()), Some(i as i64));
        }
        assert!(!map.would_overflow(0));
        assert!(map.would_overflow(1));
    }

    #[test]
    fn digests_differ_between_maps() {
        // Per-map seeds: a digest learnt from one map says nothing about another.
        let (a, b) = (OffsetMap::new(1), OffsetMap::new(1));
        assert_ne!(a.digest(b"k"), b.digest(b"k"));
    }
}
