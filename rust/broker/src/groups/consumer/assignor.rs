//! The server-side assignors of `group.consumer.assignors` (KIP-848): `uniform` and
//! `range`. Both are deterministic: the same members, subscriptions and topics always give
//! the same target assignment.
//!
//! - `uniform` keeps each partition with its current owner where it can (fewer revocations
//!   mean fewer paused partitions during a rebalance), gives the rest to the least loaded
//!   subscriber, then moves partitions from the most to the least loaded subscribers until
//!   no two subscribers of a topic differ by more than one partition.
//! - `range` splits each topic's partitions into ranges over its subscribers in member-id
//!   order, so members subscribed to the same topics get the same partition numbers
//!   (co-partitioning); like Kafka 4.1's, it first leaves each member what it holds, up to
//!   its share.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::topics::{Assignment, TopicImage};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assignor {
    Uniform,
    Range,
}

impl Assignor {
    #[must_use]
    pub fn from_name(name: &str) -> Option<Assignor> {
        match name {
            "uniform" => Some(Assignor::Uniform),
            "range" => Some(Assignor::Range),
            _ => None,
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Uniform => "uniform",
            Assignor::Range => "range",
        }
    }

    /// The target assignment of every member in `members`.
    #[must_use]
    pub fn assign(
        self,
        members: &BTreeMap<String, MemberSpec>,
        topics: &TopicImage,
    ) -> BTreeMap<String, Assignment> {
        match self {
            Assignor::Uniform => uniform(members, topics),
            Assignor::Range => range(members, topics),
        }
    }
}

/// What an assignor knows of a member: the topics it subscribes to (names resolved,
/// regexes expanded) and what it is assigned now.
#[derive(Clone, Debug, Default)]
pub struct MemberSpec {
    pub topics: BTreeSet<String>,
    pub current: Assignment,
}

/// Subscribers of each existing topic, in member-id order.
fn subscribers<'a>(
    members: &'a BTreeMap<String, MemberSpec>,
    topics: &TopicImage,
) -> BTreeMap<String, (Uuid, i32, Vec<&'a str>)> {
    let mut out: BTreeMap<String, (Uuid, i32, Vec<&str>)> = BTreeMap::new();
    for (id, spec) in members {
        for topic in &spec.topics {
            if let Some(meta) = topics.get(topic) {
                out.entry(topic.clone())
                    .or_insert_with(|| (meta.id, meta.partitions, Vec::new()))
                    .2
                    .push(id.as_str());
            }
        }
    }
    out
}

fn empty_result(members: &BTreeMap<String, MemberSpec>) -> BTreeMap<String, Assignment> {
    members
        .keys()
        .map(|id| (id.clone(), Assignment::new()))
        .collect()
}

/// Kafka 4.1's server-side range assignor: each topic's partitions split over its
/// subscribers in member-id order, `quota` each and one more for the first `extra`, but a
/// member first keeps what it holds, up to its share, so a join or leave moves only the
/// partitions it must. With nothing held the ranges are contiguous.
fn range(
    members: &BTreeMap<String, MemberSpec>,
    topics: &TopicImage,
) -> BTreeMap<String, Assignment> {
    let mut out = empty_result(members);
    for (topic_id, partitions, subs) in subscribers(members, topics).into_values() {
        let n = i32::try_from(subs.len()).unwrap_or(i32::MAX).max(1);
        let (quota, mut extra) = (partitions / n, partitions % n);
        let mut taken = BTreeSet::new();
        let mut given: Vec<BTreeSet<i32>> = vec![BTreeSet::new(); subs.len()];
        for (i, member) in subs.iter().enumerate() {
            let held: Vec<i32> = members[*member]
                .current
                .get(&topic_id)
                .map(|ps| {
                    ps.iter()
                        .copied()
                        .filter(|p| (0..partitions).contains(p))
                        .collect()
                })
                .unwrap_or_default();
            let mut share = quota;
            if held.len() > usize::try_from(quota).unwrap_or(0) && extra > 0 {
                share += 1;
                extra -= 1;
            }
            for p in held.into_iter().take(usize::try_from(share).unwrap_or(0)) {
                if taken.insert(p) {
                    given[i].insert(p);
                }
            }
        }
        let mut free = (0..partitions).filter(|p| !taken.contains(p));
        for set in &mut given {
            let had = i32::try_from(set.len()).unwrap_or(i32::MAX);
            let mut share = quota;
            if had <= quota && extra > 0 {
                share += 1;
                extra -= 1;
            }
            for _ in had..share {
                if let Some(p) = free.next() {
                    set.insert(p);
                }
            }
        }
        for (member, set) in subs.into_iter().zip(given) {
            if !set.is_empty() {
                out.get_mut(member)
                    .expect("subscribers are members")
                    .insert(topic_id, set);
            }
        }
    }
    out
}

fn uniform(
    members: &BTreeMap<String, MemberSpec>,
    topics: &TopicImage,
) -> BTreeMap<String, Assignment> {
    let subs = subscribers(members, topics);
    let eligible: BTreeMap<Uuid, Vec<&str>> =
        subs.values().map(|(id, _, s)| (*id, s.clone())).collect();
    let mut owner: BTreeMap<(Uuid, i32), &str> = BTreeMap::new();
    let mut load: BTreeMap<&str, usize> = members.keys().map(|m| (m.as_str(), 0)).collect();
    // Stickiness first: a partition stays with a current owner still subscribed to it.
    for (member, spec) in members {
        for (topic, parts) in &spec.current {
            let Some(subscribed) = eligible.get(topic) else {
                continue;
            };
            if !subscribed.contains(&member.as_str()) {
                continue;
            }
            let count = subs
                .values()
                .find(|(id, _, _)| id == topic)
                .map_or(0, |(_, n, _)| *n);
            for &p in parts {
                if (0..count).contains(&p) && !owner.contains_key(&(*topic, p)) {
                    owner.insert((*topic, p), member.as_str());
                    *load.get_mut(member.as_str()).expect("member") += 1;
                }
            }
        }
    }
    // Then every unowned partition to its least loaded subscriber.
    for (topic_id, partitions, candidates) in subs.values() {
        for p in 0..*partitions {
            if owner.contains_key(&(*topic_id, p)) {
                continue;
            }
            let pick = least_loaded(candidates, &load);
            owner.insert((*topic_id, p), pick);
            *load.get_mut(pick).expect("member") += 1;
        }
    }
    // Then even out: move a partition from a member to a subscriber with at least two
    // fewer, until none can move. Each move lowers the sum of squared loads, so this ends.
    // A pass moves every partition that can move (highest first, so members keep their
    // lowest ones): one move per pass made a join to a group owning thousands of
    // partitions quadratic, long enough to stall the broker.
    let keys: Vec<(Uuid, i32)> = owner.keys().rev().copied().collect();
    let max_passes = owner.len().max(1);
    for _ in 0..max_passes {
        let mut moved = false;
        for key in &keys {
            let from = owner[key];
            let to = least_loaded(&eligible[&key.0], &load);
            if load[to] + 1 < load[from] {
                owner.insert(*key, to);
                *load.get_mut(from).expect("member") -= 1;
                *load.get_mut(to).expect("member") += 1;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    let mut out = empty_result(members);
    for ((topic, p), member) in owner {
        out.get_mut(member)
            .expect("owners are members")
            .entry(topic)
            .or_default()
            .insert(p);
    }
    out
}

/// The candidate with the fewest partitions (the first in member-id order on a tie).
fn least_loaded<'a>(candidates: &[&'a str], load: &BTreeMap<&str, usize>) -> &'a str {
    candidates
        .iter()
        .copied()
        .min_by_key(|m| (load[m], *m))
        .expect("a topic in the image has a subscriber")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groups::consumer::topics::count;

    fn image(topics: &[(&str, i32)]) -> (TopicImage, Vec<Uuid>) {
        let mut img = TopicImage::default();
        let mut ids = Vec::new();
        for (i, (name, n)) in topics.iter().enumerate() {
            let id = Uuid::from_u128(i as u128 + 1);
            img.insert(name, id, *n);
            ids.push(id);
        }
        (img, ids)
    }

    fn spec(topics: &[&str]) -> MemberSpec {
        MemberSpec {
            topics: topics.iter().map(ToString::to_string).collect(),
            current: Assignment::new(),
        }
    }

    fn loads(a: &BTreeMap<String, Assignment>) -> Vec<usize> {
        a.values().map(count).collect()
    }

    #[test]
    fn range_splits_each_topic_contiguously_in_member_order() {
        let (img, ids) = image(&[("a", 5), ("b", 2)]);
        let members = BTreeMap::from([
            ("m1".to_string(), spec(&["a", "b"])),
            ("m2".to_string(), spec(&["a", "b"])),
        ]);
        let out = Assignor::Range.assign(&members, &img);
        assert_eq!(out["m1"][&ids[0]], BTreeSet::from([0, 1, 2]));
        assert_eq!(out["m2"][&ids[0]], BTreeSet::from([3, 4]));
        assert_eq!(out["m1"][&ids[1]], BTreeSet::from([0]));
        assert_eq!(out["m2"][&ids[1]], BTreeSet::from([1]));
    }

    #[test]
    fn range_keeps_partitions_with_their_owners_when_a_member_joins_or_leaves() {
        let (img, ids) = image(&[("t", 6)]);
        let mut members: BTreeMap<String, MemberSpec> = ["m2", "m3"]
            .iter()
            .map(|m| (m.to_string(), spec(&["t"])))
            .collect();
        let first = Assignor::Range.assign(&members, &img);
        assert_eq!(first["m2"][&ids[0]], BTreeSet::from([0, 1, 2]));
        for (id, a) in &first {
            members.get_mut(id).unwrap().current = a.clone();
        }
        // m1 sorts first: a plain range split would move every partition.
        members.insert("m1".to_string(), spec(&["t"]));
        let second = Assignor::Range.assign(&members, &img);
        assert_eq!(loads(&second), vec![2, 2, 2]);
        assert_eq!(second["m2"][&ids[0]], BTreeSet::from([0, 1]));
        assert_eq!(second["m3"][&ids[0]], BTreeSet::from([3, 4]));
        assert_eq!(second["m1"][&ids[0]], BTreeSet::from([2, 5]));
        for (id, a) in &second {
            members.get_mut(id).unwrap().current = a.clone();
        }
        members.remove("m3");
        let third = Assignor::Range.assign(&members, &img);
        assert_eq!(third["m1"][&ids[0]], BTreeSet::from([2, 3, 5]));
        assert_eq!(third["m2"][&ids[0]], BTreeSet::from([0, 1, 4]));
    }

    #[test]
    fn uniform_balances_twelve_partitions_over_three_members() {
        let (img, _) = image(&[("t", 12)]);
        let members: BTreeMap<String, MemberSpec> = ["m1", "m2", "m3"]
            .iter()
            .map(|m| (m.to_string(), spec(&["t"])))
            .collect();
        let out = Assignor::Uniform.assign(&members, &img);
        assert_eq!(loads(&out), vec![4, 4, 4]);
        let all: BTreeSet<i32> = out
            .values()
            .flat_map(|a| a.values().flatten())
            .copied()
            .collect();
        assert_eq!(all.len(), 12);
    }

    #[test]
    fn uniform_is_sticky_when_a_member_joins() {
        let (img, ids) = image(&[("t", 6)]);
        let mut members: BTreeMap<String, MemberSpec> = ["m1", "m2"]
            .iter()
            .map(|m| (m.to_string(), spec(&["t"])))
            .collect();
        let first = Assignor::Uniform.assign(&members, &img);
        for (id, a) in &first {
            members.get_mut(id).unwrap().current = a.clone();
        }
        members.insert("m3".to_string(), spec(&["t"]));
        let second = Assignor::Uniform.assign(&members, &img);
        assert_eq!(loads(&second), vec![2, 2, 2]);
        // Existing members only lose partitions, never swap them.
        for m in ["m1", "m2"] {
            assert!(second[m][&ids[0]].is_subset(&first[m][&ids[0]]));
        }
    }

    #[test]
    fn uniform_evens_out_a_large_topic_a_second_member_joins() {
        // 20,000 partitions all held by m1 when m2 joins: half of them move, and m1 keeps
        // its lowest. (The result was the same when each move rescanned a copy of the
        // owner map; that was only slow, which no test here times.)
        let (img, ids) = image(&[("big", 20_000)]);
        let mut members = BTreeMap::from([("m1".to_string(), spec(&["big"]))]);
        let first = Assignor::Uniform.assign(&members, &img);
        members.get_mut("m1").unwrap().current = first["m1"].clone();
        members.insert("m2".to_string(), spec(&["big"]));
        let second = Assignor::Uniform.assign(&members, &img);
        assert_eq!(loads(&second), vec![10_000, 10_000]);
        // m1 keeps its lowest partitions.
        assert_eq!(second["m1"][&ids[0]].iter().max(), Some(&9_999));
    }

    #[test]
    fn uniform_handles_different_subscriptions_and_missing_topics() {
        let (img, ids) = image(&[("a", 4), ("b", 2)]);
        let members = BTreeMap::from([
            ("m1".to_string(), spec(&["a"])),
            ("m2".to_string(), spec(&["a", "b", "nope"])),
        ]);
        let out = Assignor::Uniform.assign(&members, &img);
        assert!(!out["m1"].contains_key(&ids[1]));
        assert_eq!(count(&out["m1"]) + count(&out["m2"]), 6);
        assert_eq!(loads(&out), vec![3, 3]);
        let none = Assignor::Uniform.assign(&BTreeMap::new(), &img);
        assert!(none.is_empty());
    }
}
