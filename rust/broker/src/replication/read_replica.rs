//! Fetch from follower (KIP-392): which replica a consumer should read a partition from.
//!
//! Only a leader chooses, and only for a consumer's Fetch v11+ (which carries `rack_id`,
//! Kafka's client metadata). With `replica.selector.class` unset (Kafka's null) nothing
//! is chosen: consumers read from the leader. With Kafka's
//! `org.apache.kafka.common.replica.RackAwareReplicaSelector`, as Kafka's own:
//! - no rack given (null or empty): the leader;
//! - the leader in the client's rack: the leader;
//! - otherwise, of the replicas in the client's rack, the most caught up: largest log end,
//!   then the shortest time since it was last caught up, then the largest broker id;
//!   none in the rack: the leader.
//!
//! The candidates are what Kafka's `ReplicaManager.findPreferredReadReplica` offers the
//! selector: the leader, and each follower in the ISR whose log holds the fetch offset
//! (log start <= offset <= log end, as its own Fetches told the leader), with the rack
//! the broker registered, if it has an endpoint on the listener the request came in on.
//! A choice of the leader is no choice (`None`): the leader then reads as before. Nothing
//! is remembered between requests; the client keeps the answer (the Java consumer for
//! `metadata.max.age.ms`) and comes back to the leader on an error from the follower.

use std::cmp::Reverse;

use kafkalite_core::config::{BrokerSettings, RACK_AWARE_REPLICA_SELECTOR};

use crate::cluster::{BrokerNode, Partition, ReplicaState};

/// `replica.selector.class`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReplicaSelector {
    /// Unset: consumers read from the leader.
    #[default]
    LeaderOnly,
    /// Kafka's `RackAwareReplicaSelector`.
    RackAware,
}

impl ReplicaSelector {
    /// From the validated settings (the schema refuses any class but Kafka's rack-aware
    /// one, naming it, so the broker does not start on an unknown class, as Kafka).
    #[must_use]
    pub fn from_settings(s: &BrokerSettings) -> ReplicaSelector {
        match s.get("replica.selector.class") {
            Some(class) if class == RACK_AWARE_REPLICA_SELECTOR => ReplicaSelector::RackAware,
            _ => ReplicaSelector::LeaderOnly,
        }
    }
}

/// One replica as the selector sees it (Kafka's `ReplicaView`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaView<'a> {
    pub id: i32,
    /// The rack its broker registered (`broker.rack`); `None` without one, or when the
    /// broker has no endpoint on the client's listener.
    pub rack: Option<&'a str>,
    pub log_end: i64,
    pub since_caught_up_ms: i64,
}

/// The replica `selector` picks for a client in `client_rack` among `leader` and the
/// candidate `followers`; `None` when that is the leader (or the selector picks none).
#[must_use]
pub fn select(
    selector: ReplicaSelector,
    client_rack: Option<&str>,
    leader: &ReplicaView<'_>,
    followers: &[ReplicaView<'_>],
) -> Option<i32> {
    let rack = match (selector, client_rack) {
        (ReplicaSelector::RackAware, Some(rack)) if !rack.is_empty() => rack,
        _ => return None,
    };
    if leader.rack == Some(rack) {
        return None;
    }
    followers
        .iter()
        .filter(|f| f.rack == Some(rack) && f.id != leader.id)
        .max_by_key(|f| (f.log_end, Reverse(f.since_caught_up_ms), f.id))
        .map(|f| f.id)
}

/// What a leader answers as `preferred_read_replica` for a consumer fetching `partition`
/// (in `replica` state, led here) at `fetch_offset`: `None` to read here. `brokers` are
/// the live brokers as seen on the request's listener.
#[must_use]
pub fn preferred_read_replica(
    selector: ReplicaSelector,
    client_rack: Option<&str>,
    partition: &Partition,
    replica: &ReplicaState,
    brokers: &[BrokerNode],
    fetch_offset: i64,
    now_ms: i64,
) -> Option<i32> {
    if selector == ReplicaSelector::LeaderOnly || client_rack.is_none_or(str::is_empty) {
        return None;
    }
    let rack_of = |id: i32| {
        brokers
            .iter()
            .find(|b| b.node_id == id)
            .and_then(|b| b.rack.as_deref())
    };
    let leader = ReplicaView {
        id: replica.leader,
        rack: rack_of(replica.leader),
        log_end: partition.log_end_offset(),
        since_caught_up_ms: 0,
    };
    let followers: Vec<ReplicaView<'_>> = {
        let progress = partition.progress.lock().expect("lock");
        replica
            .isr
            .iter()
            .filter(|&&id| id != replica.leader)
            .filter_map(|&id| {
                let f = progress.follower(id)?;
                let holds = f.log_end >= fetch_offset && f.log_start <= fetch_offset;
                holds.then_some(ReplicaView {
                    id,
                    rack: rack_of(id),
                    log_end: f.log_end,
                    since_caught_up_ms: now_ms - f.last_caught_up_ms,
                })
            })
            .collect()
    };
    select(selector, client_rack, &leader, &followers)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn view(id: i32, rack: Option<&str>, log_end: i64, since: i64) -> ReplicaView<'_> {
        ReplicaView {
            id,
            rack,
            log_end,
            since_caught_up_ms: since,
        }
    }

    const RACK_AWARE: ReplicaSelector = ReplicaSelector::RackAware;

    #[test]
    fn the_class_key_picks_the_selector() {
        let settings = |pairs: &[(&str, &str)]| {
            let map: BTreeMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            BrokerSettings::validate(&map).unwrap()
        };
        assert_eq!(
            ReplicaSelector::from_settings(&settings(&[])),
            ReplicaSelector::LeaderOnly
        );
        assert_eq!(
            ReplicaSelector::from_settings(&settings(&[(
                "replica.selector.class",
                RACK_AWARE_REPLICA_SELECTOR
            )])),
            RACK_AWARE
        );
    }

    #[test]
    fn no_rack_or_no_selector_reads_from_the_leader() {
        let leader = view(1, Some("a"), 10, 0);
        let followers = [view(2, Some("b"), 10, 0)];
        assert_eq!(select(RACK_AWARE, None, &leader, &followers), None);
        assert_eq!(select(RACK_AWARE, Some(""), &leader, &followers), None);
        assert_eq!(
            select(ReplicaSelector::LeaderOnly, Some("b"), &leader, &followers),
            None
        );
        assert_eq!(select(RACK_AWARE, Some("b"), &leader, &followers), Some(2));
    }

    #[test]
    fn the_leader_in_the_clients_rack_wins_over_a_follower_there() {
        let leader = view(1, Some("a"), 10, 0);
        let followers = [view(2, Some("a"), 10, 0), view(3, Some("b"), 10, 0)];
        assert_eq!(select(RACK_AWARE, Some("a"), &leader, &followers), None);
        // No replica in the client's rack: the leader.
        assert_eq!(select(RACK_AWARE, Some("c"), &leader, &followers), None);
        // A broker without a rack is in no rack.
        let rackless = [view(2, None, 10, 0)];
        assert_eq!(select(RACK_AWARE, Some("b"), &leader, &rackless), None);
    }

    fn broker(id: i32, rack: &str) -> BrokerNode {
        BrokerNode {
            node_id: id,
            host: "127.0.0.1".into(),
            port: 9090 + id,
            rack: Some(rack.into()),
            endpoints: Vec::new(),
        }
    }

    #[test]
    fn only_isr_followers_holding_the_offset_are_candidates() {
        use kafkalite_core::records::{encode_batch, Compression, RecordInput};
        use kafkalite_core::storage::LogConfig;

        let dir = tempfile::tempdir().unwrap();
        let replica = ReplicaState {
            leader: 1,
            leader_epoch: 3,
            replicas: vec![1, 2, 3, 4],
            isr: vec![1, 2, 4],
        };
        let p = Partition::open(
            "t",
            0,
            dir.path().to_path_buf(),
            LogConfig::default(),
            replica.clone(),
        )
        .unwrap();
        let records: Vec<RecordInput> = (0..10)
            .map(|i| RecordInput {
                timestamp: 1_000,
                key: None,
                value: Some(vec![i; 8]),
                headers: Vec::new(),
            })
            .collect();
        p.append_in_epoch(
            &encode_batch(&records, Compression::None, 0).unwrap(),
            0,
            true,
        )
        .unwrap();
        // 2 and 3 in the client's rack b (3 out of the ISR), 4 in rack c.
        let brokers = [
            broker(1, "a"),
            broker(2, "b"),
            broker(3, "b"),
            broker(4, "c"),
        ];
        {
            let mut progress = p.progress.lock().unwrap();
            for id in [2, 3, 4] {
                progress.record_fetch(id, 8, 10, 1_000);
                progress.record_log_start(id, 4);
            }
        }
        let pick = |rack: &str, offset: i64| {
            preferred_read_replica(
                RACK_AWARE,
                Some(rack),
                &p,
                &replica,
                &brokers,
                offset,
                2_000,
            )
        };
        assert_eq!(pick("b", 6), Some(2));
        assert_eq!(pick("b", 8), Some(2), "its log end is still a valid offset");
        assert_eq!(pick("b", 9), None, "past the follower's log end");
        assert_eq!(pick("b", 3), None, "before the follower's log start");
        assert_eq!(pick("c", 6), Some(4));
        assert_eq!(pick("a", 6), None, "the leader's own rack");
        // Out of the ISR: never named, though caught up.
        let out_of_isr = ReplicaState {
            isr: vec![1, 4],
            ..replica.clone()
        };
        assert_eq!(
            preferred_read_replica(RACK_AWARE, Some("b"), &p, &out_of_isr, &brokers, 6, 2_000),
            None
        );
        // A broker not live on the client's listener is not named either.
        assert_eq!(
            preferred_read_replica(RACK_AWARE, Some("b"), &p, &replica, &brokers[..1], 6, 2_000),
            None
        );
    }

    #[test]
    fn the_most_caught_up_replica_of_the_rack_is_chosen_as_kafka_orders_them() {
        let leader = view(1, Some("a"), 20, 0);
        // Largest log end first.
        let followers = [view(2, Some("b"), 18, 0), view(3, Some("b"), 20, 500)];
        assert_eq!(select(RACK_AWARE, Some("b"), &leader, &followers), Some(3));
        // Equal log ends: the one caught up most recently.
        let followers = [view(2, Some("b"), 20, 100), view(3, Some("b"), 20, 500)];
        assert_eq!(select(RACK_AWARE, Some("b"), &leader, &followers), Some(2));
        // All equal: the largest broker id.
        let followers = [view(4, Some("b"), 20, 100), view(3, Some("b"), 20, 100)];
        assert_eq!(select(RACK_AWARE, Some("b"), &leader, &followers), Some(4));
    }
}
