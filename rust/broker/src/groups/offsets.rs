//! A group's committed offsets, in memory (the durable copy is in `__consumer_offsets`),
//! and Kafka's rules for when they expire (KIP-211).

use std::collections::{BTreeMap, BTreeSet};

/// One committed offset as OffsetFetch returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    pub offset: i64,
    pub leader_epoch: i32,
    /// A null metadata string is stored (and fetched) as "", as Kafka does.
    pub metadata: String,
    pub commit_ms: i64,
    /// Set by OffsetCommit v2-4 with an explicit retention time; otherwise the group's
    /// `offsets.retention.minutes` applies.
    pub expire_ms: Option<i64>,
}

/// (topic, partition) -> commit.
#[derive(Debug, Default)]
pub struct Offsets {
    map: BTreeMap<(String, i32), Committed>,
}

/// What the retention rule measures from, depending on the group.
pub enum RetentionBase<'a> {
    /// Empty group using group management: retention counts from when it became Empty.
    EmptySince(i64),
    /// Stable consumer group: topics nobody subscribes to any more, from their commit time.
    Unsubscribed(&'a BTreeSet<String>),
    /// Standalone (assign()-mode) consumers: from each offset's commit time.
    CommitTime,
    /// Anything else (a rebalancing group): nothing expires.
    Never,
}

impl Offsets {
    #[must_use]
    pub fn get(&self, topic: &str, partition: i32) -> Option<&Committed> {
        self.map.get(&(topic.to_string(), partition))
    }

    pub fn insert(&mut self, topic: String, partition: i32, c: Committed) {
        self.map.insert((topic, partition), c);
    }

    pub fn remove(&mut self, topic: &str, partition: i32) -> Option<Committed> {
        self.map.remove(&(topic.to_string(), partition))
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, i32, &Committed)> {
        self.map.iter().map(|((t, p), c)| (t.as_str(), *p, c))
    }

    /// Every partition with a commit, grouped by topic (topics in name order).
    #[must_use]
    pub fn by_topic(&self) -> Vec<(String, Vec<i32>)> {
        let mut out: Vec<(String, Vec<i32>)> = Vec::new();
        for (topic, partition) in self.map.keys() {
            match out.last_mut() {
                Some((t, parts)) if t == topic => parts.push(*partition),
                _ => out.push((topic.clone(), vec![*partition])),
            }
        }
        out
    }

    /// Partitions of `topic` with a commit.
    #[must_use]
    pub fn partitions_of(&self, topic: &str) -> Vec<i32> {
        self.map
            .keys()
            .filter(|(t, _)| t == topic)
            .map(|(_, p)| *p)
            .collect()
    }

    /// The (topic, partition)s whose retention has passed at `now_ms`. An offset committed
    /// with an explicit expire timestamp (OffsetCommit v2-4) expires then, whatever the group.
    #[must_use]
    pub fn expired(
        &self,
        now_ms: i64,
        retention_ms: i64,
        base: &RetentionBase,
    ) -> Vec<(String, i32)> {
        self.map
            .iter()
            .filter(|((topic, _), c)| {
                let since = match base {
                    RetentionBase::EmptySince(t) if *t >= 0 => *t,
                    RetentionBase::EmptySince(_) | RetentionBase::CommitTime => c.commit_ms,
                    RetentionBase::Unsubscribed(subscribed) => {
                        if subscribed.contains(topic) {
                            return false;
                        }
                        c.commit_ms
                    }
                    RetentionBase::Never => return false,
                };
                match c.expire_ms {
                    Some(expire) => now_ms >= expire,
                    None => now_ms.saturating_sub(since) >= retention_ms,
                }
            })
            .map(|(k, _)| k.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(commit_ms: i64) -> Committed {
        Committed {
            offset: 1,
            leader_epoch: -1,
            metadata: String::new(),
            commit_ms,
            expire_ms: None,
        }
    }

    #[test]
    fn retention_follows_the_group_kind() {
        let mut o = Offsets::default();
        o.insert("a".into(), 0, c(0));
        o.insert("b".into(), 0, c(900));
        // Standalone: from each commit.
        assert_eq!(
            o.expired(1000, 500, &RetentionBase::CommitTime),
            vec![("a".into(), 0)]
        );
        // Empty group: from when it became empty, for every offset.
        assert_eq!(
            o.expired(1000, 500, &RetentionBase::EmptySince(600)).len(),
            0
        );
        assert_eq!(
            o.expired(1100, 500, &RetentionBase::EmptySince(600)).len(),
            2
        );
        // Stable group: subscribed topics never expire.
        let subscribed: BTreeSet<String> = ["a".to_string()].into();
        assert!(
            o.expired(10_000, 500, &RetentionBase::Unsubscribed(&subscribed))
                == vec![("b".into(), 0)]
        );
        assert!(o.expired(10_000, 500, &RetentionBase::Never).is_empty());
        // An explicit expire timestamp wins.
        o.insert(
            "c".into(),
            0,
            Committed {
                expire_ms: Some(50),
                ..c(0)
            },
        );
        assert!(o.expired(60, 1_000_000, &RetentionBase::CommitTime) == vec![("c".into(), 0)]);
        assert_eq!(o.by_topic().len(), 3);
    }
}

/// One offset of an open transaction.
#[derive(Clone, Debug)]
pub struct PendingTxnOffset {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub committed: Committed,
}

impl PendingTxnOffset {
    #[must_use]
    pub fn same_partition(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.group == group && self.topic == topic && self.partition == partition
    }
}
