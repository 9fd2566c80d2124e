//! The topics a consumer group's assignment is computed from: a snapshot of the broker's
//! topics (name, id, partition count), taken at each heartbeat so that a topic created or
//! grown reaches the next assignment.

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
