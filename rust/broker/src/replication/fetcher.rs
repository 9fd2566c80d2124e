//! One follower fetcher: copies its partitions from one leader broker over one
//! connection (the client crate's `Connection`, the same codec the broker serves).
//!
//! Each round: partitions new to the fetcher (or with a new leader epoch) first ask the
//! leader, with OffsetForLeaderEpoch, where this follower's latest epoch ends there and
//! truncate to it (KIP-101/279), so a divergent tail left by a previous leader is gone
//! before anything is fetched; then one Fetch with this broker's id as replica id, from
//! each partition's log end, whose record bytes are appended as they came (whole batches
//! only: a trailing partial batch is asked for again). Errors back off
//! `replica.fetch.backoff.ms`, per partition for partition errors, for the whole fetcher
//! when the connection fails.
//!
//! The connection is Kafka's replica fetcher's: SO_RCVBUF
//! `replica.socket.receive.buffer.bytes`, each request bounded by
//! `replica.socket.timeout.ms`, each Fetch asking for
//! `replica.fetch.min.bytes` within `replica.fetch.wait.max.ms`; connecting is bounded by
//! `socket.connection.setup.timeout.ms`, doubled by each failure in a row up to
//! `socket.connection.setup.timeout.max.ms`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest, TopicName,
};
use kafka_protocol::protocol::{StrBytes, VersionRange};
use kafkalite_client::{Address, ClientConfig, ClientSecurity, Connection};
use kafkalite_core::storage::clock::now_ms;
use kafkalite_core::storage::log::follower::complete_batches_len;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::ReplicationConfig;
use crate::cluster::Partition;
use crate::errors::codes;

type TopicPartition = (String, i32);

/// A partition this fetcher copies.
pub struct Followed {
    pub partition: Arc<Partition>,
    pub leader_epoch: i32,
    /// Truncated by epoch since the fetcher took it (or since its last divergence).
    pub truncated: bool,
    /// Backing off after an error until then.
    pub retry_at: Option<Instant>,
}

impl Followed {
    #[must_use]
    pub fn new(partition: Arc<Partition>, leader_epoch: i32) -> Followed {
        Followed {
            partition,
            leader_epoch,
            truncated: false,
            retry_at: None,
        }
    }
}

/// What `Fetchers::sync` and the fetcher's loop share.
pub struct FetcherShared {
    pub partitions: Mutex<BTreeMap<TopicPartition, Followed>>,
    /// Woken when the partitions change.
    pub changed: Notify,
    /// The broker's `data_arrived`, woken when a high watermark here moves.
    pub data_arrived: Arc<Notify>,
}

#[derive(Clone)]
struct Work {
    tp: TopicPartition,
    partition: Arc<Partition>,
    epoch: i32,
    truncated: bool,
}

const OFFSET_FOR_LEADER_EPOCH: VersionRange = VersionRange { min: 2, max: 4 };
const FETCH: VersionRange = VersionRange { min: 4, max: 12 };
const LIST_OFFSETS: VersionRange = VersionRange { min: 1, max: 7 };

pub async fn run(
    node: i32,
    leader: Address,
    config: ReplicationConfig,
    security: ClientSecurity,
    shared: Arc<FetcherShared>,
) {
    let mut client_config = ClientConfig {
        client_id: format!("kafkalite-replica-fetcher-{node}"),
        response_bytes_max: usize::try_from(config.fetch_response_max_bytes)
            .unwrap_or(0)
            .saturating_add(64 << 20),
        request_timeout: config.socket_timeout,
        connect_timeout: Some(config.setup_timeout.base),
        receive_buffer_bytes: config.receive_buffer_bytes,
    };
    let backoff = Duration::from_millis(config.fetch_backoff_ms.max(10));
    let mut conn: Option<Connection> = None;
    // Failed connection attempts in a row (each doubles the next one's setup bound).
    let mut failed_connects = 0u32;
    loop {
        let now = Instant::now();
        let (work, next_retry) = {
            let followed = shared.partitions.lock().expect("lock");
            let mut next_retry: Option<Instant> = None;
            let mut work = Vec::new();
            for (tp, f) in followed.iter() {
                match f.retry_at {
                    Some(at) if at > now => {
                        next_retry = Some(next_retry.map_or(at, |n| n.min(at)));
                    }
                    _ => work.push(Work {
                        tp: tp.clone(),
                        partition: Arc::clone(&f.partition),
                        epoch: f.leader_epoch,
                        truncated: f.truncated,
                    }),
                }
            }
            (work, next_retry)
        };
        if work.is_empty() {
            let changed = shared.changed.notified();
            match next_retry {
                Some(at) => {
                    let _ = tokio::time::timeout_at(at, changed).await;
                }
                None => changed.await,
            }
            continue;
        }
        if conn.is_none() {
            client_config.connect_timeout = Some(config.setup_timeout.after(failed_connects));
            match Connection::open_secured(&leader, &client_config, &security).await {
                Ok(c) => {
                    conn = Some(c);
                    failed_connects = 0;
                }
                Err(e) => {
                    failed_connects = failed_connects.saturating_add(1);
                    kafkalite_core::logging::warn(
                        "kafkalite.replication.ReplicaFetcher",
                        &format!("cannot connect to leader {leader}: {e}"),
                    );
                    tokio::time::sleep(backoff).await;
                    continue;
                }
            }
        }
        let c = conn.as_mut().expect("just opened");
        match round(node, c, &config, &shared, work, backoff).await {
            Ok(true) => {}
            Ok(false) => tokio::time::sleep(backoff).await,
            Err(_) => {
                conn = None;
                tokio::time::sleep(backoff).await;
            }
        }
    }
}

/// Update the shared entry of `w` if it is still the same partition in the same epoch.
fn update(shared: &FetcherShared, w: &Work, change: impl FnOnce(&mut Followed)) {
    let mut followed = shared.partitions.lock().expect("lock");
    if let Some(f) = followed.get_mut(&w.tp) {
        if f.leader_epoch == w.epoch && Arc::ptr_eq(&f.partition, &w.partition) {
            change(f);
        }
    }
}

fn back_off(shared: &FetcherShared, w: &Work, backoff: Duration, retruncate: bool) {
    update(shared, w, |f| {
        f.retry_at = Some(Instant::now() + backoff);
        if retruncate {
            f.truncated = false;
        }
    });
}

/// One truncation pass (if needed) and one Fetch. Ok(false) when no partition made
/// progress (the caller backs off); Err when the connection is no longer usable.
async fn round(
    node: i32,
    c: &mut Connection,
    config: &ReplicationConfig,
    shared: &FetcherShared,
    mut work: Vec<Work>,
    backoff: Duration,
) -> kafkalite_client::Result<bool> {
    let untruncated: Vec<Work> = work.iter().filter(|w| !w.truncated).cloned().collect();
    if !untruncated.is_empty() {
        truncate_by_epoch(node, c, shared, &untruncated, backoff).await?;
        let done: Vec<TopicPartition> = {
            let followed = shared.partitions.lock().expect("lock");
            work.iter()
                .filter(|w| {
                    followed
                        .get(&w.tp)
                        .is_some_and(|f| f.truncated && f.retry_at.is_none())
                })
                .map(|w| w.tp.clone())
                .collect()
        };
        work.retain(|w| done.contains(&w.tp));
        if work.is_empty() {
            return Ok(false);
        }
    }
    fetch(node, c, config, shared, &work, backoff).await
}

async fn truncate_by_epoch(
    node: i32,
    c: &mut Connection,
    shared: &FetcherShared,
    work: &[Work],
    backoff: Duration,
) -> kafkalite_client::Result<()> {
    let version = c.version(ApiKey::OffsetForLeaderEpoch, OFFSET_FOR_LEADER_EPOCH)?;
    let mut by_topic: BTreeMap<&str, Vec<OffsetForLeaderPartition>> = BTreeMap::new();
    for w in work {
        let mut p = OffsetForLeaderPartition::default();
        p.partition = w.tp.1;
        p.current_leader_epoch = w.epoch;
        p.leader_epoch = w.partition.latest_epoch().unwrap_or(-1);
        by_topic.entry(w.tp.0.as_str()).or_default().push(p);
    }
    let mut request = OffsetForLeaderEpochRequest::default();
    request.replica_id = BrokerId(node);
    request.topics = by_topic
        .into_iter()
        .map(|(name, partitions)| {
            let mut t = OffsetForLeaderTopic::default();
            t.topic = TopicName(StrBytes::from_string(name.to_string()));
            t.partitions = partitions;
            t
        })
        .collect();
    let response = c.call(&request, version, Duration::ZERO).await?;
    for topic in response.topics {
        for r in topic.partitions {
            let tp = (topic.topic.0.to_string(), r.partition);
            let Some(w) = work.iter().find(|w| w.tp == tp) else {
                continue;
            };
            if r.error_code != codes::NONE {
                back_off(shared, w, backoff, true);
                continue;
            }
            let p = &w.partition;
            let ours = p.latest_epoch();
            let end = p.log_end_offset();
            let target = match ours {
                // Nothing to compare: an empty log needs nothing; otherwise keep only
                // what is known committed (Kafka's fallback to the high watermark).
                None if end == 0 => end,
                None => p.high_watermark(),
                Some(_) if r.end_offset < 0 => p.high_watermark(),
                Some(epoch) if r.leader_epoch == epoch => r.end_offset.min(end),
                // The leader knows only an older epoch: ours ends where that one ends here.
                Some(_) => r.end_offset.min(p.end_offset_for(r.leader_epoch).1.max(0)),
            };
            let outcome = if target < end {
                p.truncate_to(target)
            } else {
                Ok(())
            };
            match outcome {
                Ok(()) => update(shared, w, |f| {
                    f.truncated = true;
                    f.retry_at = None;
                }),
                Err(_) => back_off(shared, w, backoff, true),
            }
        }
    }
    Ok(())
}

async fn fetch(
    node: i32,
    c: &mut Connection,
    config: &ReplicationConfig,
    shared: &FetcherShared,
    work: &[Work],
    backoff: Duration,
) -> kafkalite_client::Result<bool> {
    let version = c.version(ApiKey::Fetch, FETCH)?;
    let mut by_topic: BTreeMap<&str, Vec<FetchPartition>> = BTreeMap::new();
    for w in work {
        let mut p = FetchPartition::default();
        p.partition = w.tp.1;
        p.current_leader_epoch = w.epoch;
        p.fetch_offset = w.partition.log_end_offset();
        p.last_fetched_epoch = -1;
        // The leader sends consumers here only at offsets this log holds (KIP-392).
        p.log_start_offset = w.partition.log.lock().expect("lock").log_start_offset();
        p.partition_max_bytes = config.fetch_max_bytes;
        by_topic.entry(w.tp.0.as_str()).or_default().push(p);
    }
    let mut request = FetchRequest::default();
    request.replica_id = BrokerId(node);
    request.max_wait_ms = config.fetch_wait_max_ms;
    request.min_bytes = config.fetch_min_bytes;
    request.max_bytes = config.fetch_response_max_bytes;
    request.isolation_level = 0;
    request.session_id = 0;
    request.session_epoch = -1;
    request.topics = by_topic
        .into_iter()
        .map(|(name, partitions)| {
            let mut t = FetchTopic::default();
            t.topic = TopicName(StrBytes::from_string(name.to_string()));
            t.partitions = partitions;
            t
        })
        .collect();
    let wait = Duration::from_millis(u64::try_from(config.fetch_wait_max_ms).unwrap_or(0));
    let response = c.call(&request, version, wait).await?;
    if response.error_code != codes::NONE {
        return Ok(false);
    }
    let mut progressed = false;
    let mut hw_moved = false;
    for topic in response.responses {
        for r in topic.partitions {
            let tp = (topic.topic.0.to_string(), r.partition_index);
            let Some(w) = work.iter().find(|w| w.tp == tp) else {
                continue;
            };
            match r.error_code {
                codes::NONE => {
                    let records = r.records.unwrap_or_default();
                    let whole = complete_batches_len(&records);
                    // Not where the leader's batches continue: truncate again.
                    if whole > 0
                        && w.partition
                            .append_as_follower(&records[..whole], now_ms())
                            .is_err()
                    {
                        back_off(shared, w, backoff, true);
                        continue;
                    }
                    hw_moved |= w.partition.follow_high_watermark(r.high_watermark);
                    progressed = true;
                }
                codes::OFFSET_OUT_OF_RANGE => match out_of_range(node, c, w).await {
                    Ok(true) => progressed = true,
                    Ok(false) => back_off(shared, w, backoff, true),
                    Err(e) => return Err(e),
                },
                _ => back_off(shared, w, backoff, true),
            }
        }
    }
    if hw_moved {
        // Consumers long-polling this follower may read more.
        shared.data_arrived.notify_waiters();
    }
    Ok(progressed)
}

/// The leader no longer has this follower's fetch offset: behind its log start, start
/// over there; past its end (only after an unclean election), keep what it has committed.
async fn out_of_range(node: i32, c: &mut Connection, w: &Work) -> kafkalite_client::Result<bool> {
    let Some(earliest) = list_offset(node, c, w, -2).await? else {
        return Ok(false);
    };
    let end = w.partition.log_end_offset();
    if end < earliest {
        return Ok(w.partition.truncate_fully_and_start_at(earliest).is_ok());
    }
    let Some(latest) = list_offset(node, c, w, -1).await? else {
        return Ok(false);
    };
    if end > latest {
        return Ok(w.partition.truncate_to(latest).is_ok());
    }
    Ok(false)
}

async fn list_offset(
    node: i32,
    c: &mut Connection,
    w: &Work,
    timestamp: i64,
) -> kafkalite_client::Result<Option<i64>> {
    let version = c.version(ApiKey::ListOffsets, LIST_OFFSETS)?;
    let mut p = ListOffsetsPartition::default();
    p.partition_index = w.tp.1;
    p.current_leader_epoch = w.epoch;
    p.timestamp = timestamp;
    let mut t = ListOffsetsTopic::default();
    t.name = TopicName(StrBytes::from_string(w.tp.0.clone()));
    t.partitions = vec![p];
    let mut request = ListOffsetsRequest::default();
    request.replica_id = BrokerId(node);
    request.topics = vec![t];
    let response = c.call(&request, version, Duration::ZERO).await?;
    Ok(response
        .topics
        .into_iter()
        .flat_map(|t| t.partitions)
        .find(|p| p.partition_index == w.tp.1 && p.error_code == codes::NONE)
        .map(|p| p.offset))
}
