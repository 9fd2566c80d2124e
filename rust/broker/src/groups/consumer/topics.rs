//! The topics a consumer group's assignment is computed from: a snapshot of the broker's
//! topics (name, id, partition count), taken at each heartbeat so that a topic created or
//! grown reaches the next assignment; and its hash, which Kafka 4.1 stores with the group
//! epoch so a group reloaded after a restart knows whether its topics changed meanwhile.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

/// Partitions by topic id: what a member owns, is assigned or is to revoke.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicMeta {
    pub id: Uuid,
    pub partitions: i32,
}

/// Every topic a group may subscribe to, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicImage {
    by_name: BTreeMap<String, TopicMeta>,
}

impl TopicImage {
    pub fn insert(&mut self, name: &str, id: Uuid, partitions: i32) {
        self.by_name
            .insert(name.to_string(), TopicMeta { id, partitions });
    }

    #[must_use]
    pub fn get(&self, name: &str) -> Option<&TopicMeta> {
        self.by_name.get(name)
    }

    #[must_use]
    pub fn name_of(&self, id: Uuid) -> Option<&str> {
        self.by_name
            .iter()
            .find(|(_, m)| m.id == id)
            .map(|(n, _)| n.as_str())
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    /// The part of the image `topics` names (what a change of must trigger a new
    /// assignment).
    #[must_use]
    pub fn restricted_to(&self, topics: &BTreeSet<String>) -> TopicImage {
        TopicImage {
            by_name: topics
                .iter()
                .filter_map(|t| self.by_name.get(t).map(|m| (t.clone(), m.clone())))
                .collect(),
        }
    }
}

impl TopicImage {
    /// Kafka 4.1's metadata hash of these topics (`Utils.computeGroupHash` over
    /// `computeTopicHash`): XXH3 of each topic's magic byte, id, name, partition count and,
    /// per partition, its index and its replicas' racks (none here); combined in name
    /// order; 0 for no topics. Values are written as hash4j writes them: little-endian,
    /// strings as UTF-16 code units then their count.
    #[must_use]
    pub fn metadata_hash(&self) -> i64 {
        if self.by_name.is_empty() {
            return 0;
        }
        let mut group = Vec::with_capacity(self.by_name.len() * 8);
        for (name, meta) in &self.by_name {
            group.extend_from_slice(&topic_hash(name, meta.id, meta.partitions).to_le_bytes());
        }
        xxh3(&group)
    }
}

/// Kafka's `computeTopicHash` of a topic without racks.
fn topic_hash(name: &str, id: Uuid, partitions: i32) -> i64 {
    let mut b = Vec::with_capacity(32 + name.len() * 2 + partitions.max(0) as usize * 4);
    b.push(0); // TOPIC_HASH_MAGIC_BYTE
    let (hi, lo) = id.as_u64_pair();
    b.extend_from_slice(&hi.to_le_bytes());
    b.extend_from_slice(&lo.to_le_bytes());
    put_string(&mut b, name);
    b.extend_from_slice(&partitions.to_le_bytes());
    for p in 0..partitions {
        b.extend_from_slice(&p.to_le_bytes());
    }
    xxh3(&b)
}

/// hash4j's `putString`: the UTF-16 code units, then their count.
fn put_string(b: &mut Vec<u8>, s: &str) {
    let mut units = 0i32;
    for u in s.encode_utf16() {
        b.extend_from_slice(&u.to_le_bytes());
        units += 1;
    }
    b.extend_from_slice(&units.to_le_bytes());
}

fn xxh3(bytes: &[u8]) -> i64 {
    twox_hash::XxHash3_64::oneshot(bytes) as i64
}

/// Number of partitions in `a`.
#[must_use]
pub fn count(a: &Assignment) -> usize {
    a.values().map(BTreeSet::len).sum()
}

/// Whether `a` and `b` share a partition.
#[must_use]
pub fn overlaps(a: &Assignment, b: &Assignment) -> bool {
    a.iter()
        .any(|(t, ps)| b.get(t).is_some_and(|qs| !ps.is_disjoint(qs)))
}

/// Whether every partition of `a` is in `b`.
#[must_use]
pub fn is_subset(a: &Assignment, b: &Assignment) -> bool {
    a.iter()
        .all(|(t, ps)| ps.is_empty() || b.get(t).is_some_and(|qs| ps.is_subset(qs)))
}

/// `a` without empty topic entries, so equal assignments compare equal.
#[must_use]
pub fn normalized(a: Assignment) -> Assignment {
    a.into_iter().filter(|(_, ps)| !ps.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_hashes_are_kafkas() {
        // Golden values from hash4j 0.22 (Kafka 4.1.1's), streaming the same fields.
        let id = Uuid::from_u64_pair(0x0123_4567_89ab_cdef, 0x0fed_cba9_8765_4321);
        assert_eq!(topic_hash("t", id, 1), -2_069_457_670_958_709_482);
        let mut image = TopicImage::default();
        image.insert("t", id, 1);
        let mut group = Vec::new();
        group.extend_from_slice(&(-2_069_457_670_958_709_482i64).to_le_bytes());
        assert_eq!(image.metadata_hash(), xxh3(&group));
        assert_eq!(TopicImage::default().metadata_hash(), 0);
        // hash4j's putString("ab"): UTF-16 units, then their count.
        let mut b = Vec::new();
        put_string(&mut b, "ab");
        assert_eq!(xxh3(&b), 8_853_075_174_099_927_999);
    }
}
