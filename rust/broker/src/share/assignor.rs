//! Kafka's simple share assignor (`SimpleAssignor`, the only one of share groups): every
//! subscribed partition goes to at least one member and, unlike a consumer group, a
//! partition may go to several members at once (its records are shared by acquisition).
//!
//! With at least as many partitions as members, the partitions are dealt round-robin, each
//! to one member; with more members than partitions, each member gets one partition and
//! each partition is shared by about members / partitions of them. Members subscribed to
//! different topics only get partitions of their own topics. Deterministic: members in
//! id order, partitions in (topic, index) order.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

/// A member's assignment: topic id -> partitions.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// `members`: member id -> subscribed topic names; `topics`: name -> (id, partitions).
#[must_use]
pub fn assign(
    members: &BTreeMap<String, BTreeSet<String>>,
    topics: &BTreeMap<String, (Uuid, i32)>,
) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = members
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    // Group members by identical subscriptions; each such set shares its topics alone.
    let mut by_subscription: BTreeMap<&BTreeSet<String>, Vec<&String>> = BTreeMap::new();
    for (member, subscribed) in members {
        by_subscription.entry(subscribed).or_default().push(member);
    }
    for (subscribed, ids) in by_subscription {
        let partitions: Vec<(Uuid, i32)> = subscribed
            .iter()
            .filter_map(|name| topics.get(name))
            .flat_map(|&(id, count)| (0..count).map(move |p| (id, p)))
            .collect();
        if partitions.is_empty() {
            continue;
        }
        if partitions.len() >= ids.len() {
            for (i, (topic, p)) in partitions.iter().enumerate() {
                let member = ids[i % ids.len()];
                out.get_mut(member)
                    .expect("member")
                    .entry(*topic)
                    .or_default()
                    .insert(*p);
            }
        } else {
            for (i, member) in ids.iter().enumerate() {
                let (topic, p) = partitions[i % partitions.len()];
                out.get_mut(*member)
                    .expect("member")
                    .entry(topic)
                    .or_default()
                    .insert(p);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(n: usize, topic: &str) -> BTreeMap<String, BTreeSet<String>> {
        (0..n)
            .map(|i| (format!("m{i}"), BTreeSet::from([topic.to_string()])))
            .collect()
    }

    #[test]
    fn one_partition_is_shared_by_every_member() {
        let topics = BTreeMap::from([("t".to_string(), (Uuid::from_u128(7), 1))]);
        let a = assign(&members(3, "t"), &topics);
        for m in a.values() {
            assert_eq!(m.get(&Uuid::from_u128(7)), Some(&BTreeSet::from([0])));
        }
    }

    #[test]
    fn more_partitions_than_members_are_dealt_once_each() {
        let id = Uuid::from_u128(1);
        let topics = BTreeMap::from([("t".to_string(), (id, 5))]);
        let a = assign(&members(2, "t"), &topics);
        let mut all: Vec<i32> = a.values().flat_map(|m| m[&id].iter().copied()).collect();
        all.sort_unstable();
        assert_eq!(all, vec![0, 1, 2, 3, 4]);
        assert_eq!(a["m0"][&id].len(), 3);
        let none = assign(&members(2, "missing"), &topics);
        assert!(none.values().all(BTreeMap::is_empty));
    }
}
