//! Fetch (v4–18).
//!
//! From v13 topics are named by id (KIP-516): the handler resolves ids to names first, and
//! a partition of an unknown id is answered UNKNOWN_TOPIC_ID (100), as Kafka does. From v15
//! a follower names itself in `replica_state` (KIP-903) rather than `replica_id`; v16 adds
//! `node_endpoints`: a partition refused NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
//! names its current leader and epoch, with the leader's endpoint (KIP-951,
//! `response::leader_hints`); v17 the
//! replica's directory id and v18 the follower's high watermark, both only for KRaft
//! followers and ignored here.
//!
//! High watermark and last stable offset come from the partition (`cluster::partition`):
//! READ_UNCOMMITTED reads up to the high watermark, READ_COMMITTED up to the LSO and gets
//! the aborted transactions (producer id, first offset) that overlap what it reads, from
//! the partition's `.txnindex` (null for READ_UNCOMMITTED, as Kafka sends). Control
//! batches go out like any batch; clients skip them.
//!
//! Fetch from follower (KIP-392, cluster mode): a consumer's Fetch v11+ (Kafka's client
//! metadata: `rack_id`) may be served by any replica of the partition, a follower reading
//! up to the high watermark (or, read_committed, the last stable offset) it learnt from
//! its leader; the client's leader epoch is checked against the epoch this broker knows
//! (FENCED/UNKNOWN_LEADER_EPOCH), a broker that is no replica answers
//! NOT_LEADER_OR_FOLLOWER, an offset past what it holds OFFSET_OUT_OF_RANGE, as Kafka's
//! `Partition.fetchRecords` does. Older versions read from the leader only. A leader
//! with `replica.selector.class` set names another replica for the client's rack
//! (`replication::read_replica`): that partition is answered with no error,
//! `preferred_read_replica`, the leader's high watermark, last stable offset and log
//! start, empty records and null aborted transactions, and the request is answered at
//! once, as Kafka skips the read. Record bytes sent to consumers count as bytes out,
//! those sent to followers as replication bytes out (Kafka's `BytesOutPerSec` and
//! `ReplicationBytesOutPerSec`).
//!
//! Sizes follow KIP-74: partitions are filled in request order, each up to
//! `partition_max_bytes` and to what is left of the response's `max_bytes` (itself capped
//! by the broker's `fetch.max.bytes`, KIP-541); the first
//! partition with data returns at least its first batch whole, later partitions whose first
//! batch does not fit are answered with empty records (and are still listed, as in Kafka).
//! An offset inside a batch returns the whole batch; clients skip the earlier records.
//!
//! Long poll: with fewer than `min_bytes` ready and `max_wait_ms > 0`, the request waits on
//! `BrokerState::data_arrived` (the `Notified` future is created before every re-check, so
//! an append between check and wait is not lost) until `min_bytes` are ready or the wait
//! expires. Errors answer at once, as Kafka does.
//!
//! Fetch sessions (KIP-227, v7+): none are created. Every full request (session epoch 0 or
//! -1) is answered in full with session id 0, which both the Java client ("session not
//! created", next request full again) and librdkafka (sessionless) accept; any other
//! epoch (an incremental request, or a negative one Kafka does not know) cannot refer to
//! a session of ours, so it gets
//! FETCH_SESSION_ID_NOT_FOUND (70) and the client falls back to a full fetch. Forgotten
//! topics are ignored.
//!
//! A follower's Fetch (cluster mode, `replica_id` >= 0) reads up to the log end rather
//! than the high watermark and tells the leader the follower's log end
//! (`replication::leader`); a replica id that is not a replica of the partition (not a
//! broker of the cluster, or not assigned it) gets NOT_LEADER_OR_FOLLOWER (6), as Kafka
//! refuses a fetch from a non-replica. On a single node any `replica_id` >= 0 names no
//! replica and gets the same answer; a client's `current_leader_epoch` other than 0
//! (negative: not given) is FENCED/UNKNOWN_LEADER_EPOCH there as in cluster mode.
//!
//! Records are never copied: the response is `ResponseBody::Pieces` (see `response::fetch`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{FetchRequest, RequestHeader, TopicName};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafkalite_core::Error as CoreError;

use crate::cluster::{check_leader, BrokerNode};
use crate::errors::codes;
use crate::net::RequestContext;
use crate::replication::leader;
use crate::replication::read_replica::{self, ReplicaSelector};
use crate::response::fetch::{self as fetch_response, FetchResult, PartitionResult, TopicResult};
use crate::response::leader_hints::LeaderHints;
use crate::response::ResponseBody;
use crate::security::authz;
use crate::security::quotas::QuotaKind;
use crate::state::{BrokerState, Partition};

/// Longest wait honoured, whatever the client asks (Kafka has no cap; this only bounds how
/// long a connection's slot is held by a silly request).
const MAX_WAIT_CAP_MS: i32 = 5 * 60 * 1000;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let mut request = FetchRequest::decode(&mut body, version)?;
    if version >= 4 && !matches!(request.isolation_level, 0 | 1) {
        let result = unknown_isolation_level(&request, version);
        return Ok(Some(ResponseBody::Pieces(fetch_response::encode(
            result, version,
        )?)));
    }
    if version >= 15 {
        request.replica_id = request.replica_state.replica_id;
    }
    let unknown_ids = if version >= 13 {
        resolve_topic_ids(state, &mut request)
    } else {
        Vec::new()
    };
    let denied = authz::fetch_denied(state, ctx, &mut request);
    // Only 0 (open a session) and -1 (sessionless) stand alone; any other epoch names a
    // session of ours, and there are none.
    if version >= 7 && !matches!(request.session_epoch, 0 | -1) {
        let result = FetchResult {
            error_code: codes::FETCH_SESSION_ID_NOT_FOUND,
            ..FetchResult::default()
        };
        return Ok(Some(ResponseBody::Pieces(fetch_response::encode(
            result, version,
        )?)));
    }
    // KIP-541: the broker's `fetch.max.bytes` caps what anyone asks, followers included
    // (as Kafka's `KafkaApis` caps it); the first batch still goes out whole.
    request.max_bytes = request.max_bytes.min(state.config.fetch_max_bytes);
    request.min_bytes = request.min_bytes.min(request.max_bytes);
    // Clients' fetches count against consumer_byte_rate; replicas' never do.
    let client = !(state.cluster.is_some() && request.replica_id.0 >= 0);
    let (user, client_id) = (&ctx.principal().name, ctx.client_id);
    let quotas = &state.security.quotas;
    if client {
        // No more than the quota allows over its window in one response (Kafka's
        // `maxValueInQuotaWindow`), so one fetch cannot take many windows' worth.
        if let Some(max) = quotas.max_value_in_window(QuotaKind::Fetch, user, client_id) {
            let max = max.clamp(1.0, f64::from(i32::MAX)) as i32;
            request.max_bytes = request.max_bytes.min(max);
            request.min_bytes = request.min_bytes.min(request.max_bytes);
        }
    }
    // Kafka's client metadata: a consumer's Fetch v11+ may read from any replica.
    let rack_id = request.rack_id.to_string();
    let reader = Reader {
        client_rack: (version >= 11 && request.replica_id.0 < 0).then_some(rack_id.as_str()),
        listener: ctx.listener_name(),
    };
    // An unknown topic id is an error: answer at once rather than long-poll.
    let mut result = if unknown_ids.is_empty() {
        fetch(state, &request, &reader).await
    } else {
        gather(state, &request, &reader).0
    };
    for topic in &result.topics {
        let bytes = topic
            .partitions
            .iter()
            .filter_map(|p| p.records.as_ref())
            .map(|s| s.len);
        if client {
            state.metrics.topics.sent(&topic.name, bytes.sum());
        } else {
            state.metrics.topics.replicated(&topic.name, bytes.sum());
        }
    }
    result.topics.extend(denied);
    result.topics.extend(unknown_ids);
    if version >= 16 {
        name_current_leaders(state, ctx, &mut result);
    }
    let body = ResponseBody::Pieces(fetch_response::encode(result, version)?);
    if client {
        let size = body.len() as f64;
        let throttle_ms = quotas.record(QuotaKind::Fetch, user, client_id, size);
        if throttle_ms > 0 {
            // Kafka answers a throttled fetch empty and does not count it.
            quotas.unrecord(QuotaKind::Fetch, user, client_id, size);
            ctx.throttle.at_least(throttle_ms);
            let result = FetchResult {
                throttle_time_ms: throttle_ms,
                ..FetchResult::default()
            };
            return Ok(Some(ResponseBody::Pieces(fetch_response::encode(
                result, version,
            )?)));
        }
    }
    Ok(Some(body))
}

/// KIP-951 (v16+): each partition refused NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
/// names its current leader; the leaders' endpoints go in the response, as Kafka answers
/// (a follower's fetch from a non-replica included).
fn name_current_leaders(state: &BrokerState, ctx: &RequestContext<'_>, result: &mut FetchResult) {
    let mut hints = LeaderHints::new(state, ctx.listener_name());
    for topic in &mut result.topics {
        for p in &mut topic.partitions {
            if matches!(
                p.error_code,
                codes::NOT_LEADER_OR_FOLLOWER | codes::FENCED_LEADER_EPOCH
            ) {
                p.current_leader = Some(hints.current_leader(&topic.name, p.partition_index));
            }
        }
    }
    result.node_endpoints = hints.endpoints();
}

/// An isolation level other than READ_UNCOMMITTED (0) and READ_COMMITTED (1): Kafka fails
/// the whole request with UNKNOWN_SERVER_ERROR (its `IsolationLevel.forId` throws), in its
/// generic error shape — below v13 every requested partition listed with the error, from
/// v13 the top-level code alone. Answered the same, so clients see what Kafka sends.
fn unknown_isolation_level(request: &FetchRequest, version: i16) -> FetchResult {
    let topics = if version < 13 {
        request
            .topics
            .iter()
            .map(|t| TopicResult {
                name: t.topic.0.to_string(),
                topic_id: t.topic_id,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| PartitionResult::error(p.partition, codes::UNKNOWN_SERVER_ERROR))
                    .collect(),
            })
            .collect()
    } else {
        Vec::new()
    };
    FetchResult {
        throttle_time_ms: 0,
        error_code: codes::UNKNOWN_SERVER_ERROR,
        session_id: request.session_id,
        topics,
        node_endpoints: Vec::new(),
    }
}

/// Name every topic of a v13+ request from its id; the topics whose id is unknown leave
/// the request and come back as answers (UNKNOWN_TOPIC_ID for each partition).
fn resolve_topic_ids(state: &BrokerState, request: &mut FetchRequest) -> Vec<TopicResult> {
    let mut unknown = Vec::new();
    request
        .topics
        .retain_mut(|t| match state.topic_by_id(t.topic_id) {
            Some(topic) => {
                t.topic = TopicName(StrBytes::from_string(topic.name.clone()));
                true
            }
            None => {
                unknown.push(TopicResult {
                    name: String::new(),
                    topic_id: t.topic_id,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| PartitionResult::error(p.partition, codes::UNKNOWN_TOPIC_ID))
                        .collect(),
                });
                false
            }
        });
    unknown
}

/// Who reads, beyond the request's replica id (Kafka's `FetchParams.clientMetadata`).
pub struct Reader<'a> {
    /// A consumer's Fetch v11+: its `rack_id` (empty when not given). It may read from a
    /// follower, and a leader may name it a replica to read from. `None`: older versions
    /// and followers, which read from the leader only.
    pub client_rack: Option<&'a str>,
    /// The listener the request came in on: the brokers a leader may name are those
    /// reachable on it.
    pub listener: &'a str,
}

/// Read what the request asks for, long-polling for `min_bytes` up to `max_wait_ms`.
pub async fn fetch(
    state: &Arc<BrokerState>,
    request: &FetchRequest,
    reader: &Reader<'_>,
) -> FetchResult {
    let wait_ms = request.max_wait_ms.clamp(0, MAX_WAIT_CAP_MS);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(wait_ms as u64);
    let min_bytes = u64::try_from(request.min_bytes).unwrap_or(0);
    loop {
        // Registered for notify_waiters() from creation: an append after gather() wakes it.
        let notified = state.data_arrived.notified();
        let (result, immediate) = gather(state, request, reader);
        if immediate
            || wait_ms == 0
            || result.record_bytes() >= min_bytes
            || tokio::time::Instant::now() >= deadline
        {
            return result;
        }
        // Slices hold files open; let them go while waiting.
        drop(result);
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return gather(state, request, reader).0;
        }
    }
}

/// One pass over the requested partitions. Returns the result and whether it must be sent
/// at once (an error in some partition, or nothing requested).
fn gather(state: &BrokerState, request: &FetchRequest, reader: &Reader<'_>) -> (FetchResult, bool) {
    let read_committed = request.isolation_level == 1;
    // A leader may name another replica only to a consumer with a rack, and only with a
    // selector: then the live brokers on the client's listener are looked up once.
    let selector = state
        .fetchers
        .as_ref()
        .map_or(ReplicaSelector::LeaderOnly, |f| f.config.replica_selector);
    let client_rack = reader.client_rack.filter(|r| !r.is_empty());
    let brokers: Vec<BrokerNode> = match (selector, client_rack) {
        (ReplicaSelector::RackAware, Some(_)) => state.live_brokers_on(reader.listener),
        _ => Vec::new(),
    };
    let now_ms = kafkalite_core::storage::clock::monotonic_ms();
    let mut remaining = u64::try_from(request.max_bytes).unwrap_or(0);
    let mut have_data = false;
    let mut immediate = request.topics.iter().all(|t| t.partitions.is_empty());
    let mut topics = Vec::with_capacity(request.topics.len());
    // A follower's fetch: only brokers of the cluster replicate.
    let follower =
        (state.cluster.is_some() && request.replica_id.0 >= 0).then_some(request.replica_id.0);
    let known_broker =
        follower.is_some_and(|id| state.live_brokers().iter().any(|b| b.node_id == id));
    let mut hw_moved = false;
    for topic in &request.topics {
        let name = topic.topic.as_str();
        let t = state.topic(name);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for fp in &topic.partitions {
            // Kafka's Fetch reads every negative epoch as "not given".
            let client_epoch = fp.current_leader_epoch.max(-1);
            let found = t
                .as_ref()
                .map_or(Err(codes::UNKNOWN_TOPIC_OR_PARTITION), |t| {
                    t.hosted_or_code(fp.partition, state.config.node_id, client_epoch)
                });
            let partition = match found {
                Ok(partition) => partition,
                Err(codes::UNKNOWN_TOPIC_OR_PARTITION) => {
                    immediate = true;
                    let code = codes::UNKNOWN_TOPIC_OR_PARTITION;
                    partitions.push(PartitionResult::error(fp.partition, code));
                    continue;
                }
                Err(code) => {
                    // Replicated on other brokers only (cluster mode).
                    immediate = true;
                    partitions.push(PartitionResult::read_error(fp.partition, code));
                    continue;
                }
            };
            // The client's leader epoch is checked on a single node too (its partitions
            // lead in epoch 0), as Kafka does. A consumer with client metadata may read
            // from any replica (KIP-392); everyone else only from the leader.
            let replica = partition.replica_state();
            let code = match check_leader(&replica, state.config.node_id, client_epoch) {
                codes::NOT_LEADER_OR_FOLLOWER
                    if reader.client_rack.is_some()
                        && replica.replicas.contains(&state.config.node_id) =>
                {
                    codes::NONE
                }
                code => code,
            };
            if code != codes::NONE {
                immediate = true;
                partitions.push(PartitionResult::read_error(fp.partition, code));
                continue;
            }
            // A fetch naming a replica id must come from a replica of the partition: on a
            // single node there is none but this broker.
            let no_replica = match follower {
                Some(id) => {
                    !known_broker || id == state.config.node_id || !replica.replicas.contains(&id)
                }
                None => state.cluster.is_none() && request.replica_id.0 >= 0,
            };
            if no_replica {
                immediate = true;
                partitions.push(PartitionResult::read_error(
                    fp.partition,
                    codes::NOT_LEADER_OR_FOLLOWER,
                ));
                continue;
            }
            // The leader names another replica for the client's rack: no read here.
            let preferred = if replica.leader == state.config.node_id {
                read_replica::preferred_read_replica(
                    selector,
                    client_rack,
                    &partition,
                    &replica,
                    &brokers,
                    fp.fetch_offset,
                    now_ms,
                )
            } else {
                None
            };
            if let Some(id) = preferred {
                immediate = true;
                partitions.push(redirect(&partition, fp.partition, id));
                continue;
            }
            let partition_max = u64::try_from(fp.partition_max_bytes).unwrap_or(0);
            let limit = partition_max.min(remaining);
            let log = partition.log.lock().expect("lock");
            let end = log.log_end_offset();
            // Read under the log lock, the high watermark is consistent with `end`.
            let high_watermark = partition.high_watermark();
            let last_stable_offset = partition.last_stable_offset();
            // read_committed fetchers stop at the LSO (KIP-98).
            let upper = if read_committed {
                last_stable_offset
            } else {
                high_watermark
            };
            let mut out = PartitionResult {
                partition_index: fp.partition,
                error_code: codes::NONE,
                high_watermark,
                last_stable_offset,
                log_start_offset: log.log_start_offset(),
                aborted_transactions: read_committed.then(Vec::new),
                preferred_read_replica: -1,
                records: None,
                current_leader: None,
            };
            let skip = have_data
                && limit == 0
                && fp.fetch_offset >= out.log_start_offset
                && fp.fetch_offset <= end;
            let read = if skip {
                Ok(None)
            } else {
                // Followers copy up to the log end; consumers see only what is committed
                // (read_committed ones: what is stable).
                log.read(fp.fetch_offset, limit, follower.is_none().then_some(upper))
            };
            drop(log);
            if let (Some(id), Ok(_)) = (follower, &read) {
                hw_moved |=
                    leader::on_follower_fetch(state, name, &partition, id, fp.fetch_offset, end);
                partition
                    .progress
                    .lock()
                    .expect("lock")
                    .record_log_start(id, fp.log_start_offset);
                out.high_watermark = partition.high_watermark();
                out.last_stable_offset = out.high_watermark;
            }
            if read_committed {
                if let Ok(Some(_)) = &read {
                    // The aborted transactions whose data this answer may hold: the client
                    // drops their records itself, so the bytes stay zero-copy.
                    out.aborted_transactions =
                        Some(partition.aborted_between(fp.fetch_offset, upper));
                }
            }
            match read {
                Ok(Some(slice)) => {
                    // Only the first partition with data may exceed its limit (KIP-74).
                    if !have_data || slice.len <= limit {
                        remaining = remaining.saturating_sub(slice.len);
                        have_data = true;
                        out.records = Some(slice);
                    }
                }
                Ok(None) => {}
                Err(CoreError::OffsetOutOfRange { .. }) => {
                    immediate = true;
                    // Kafka's answer carries no offsets (-1), and its aborted list as read.
                    out.error_code = codes::OFFSET_OUT_OF_RANGE;
                    out.high_watermark = -1;
                    out.last_stable_offset = -1;
                    out.log_start_offset = -1;
                }
                Err(CoreError::Closed) => {
                    immediate = true;
                    out = PartitionResult::error(fp.partition, codes::UNKNOWN_TOPIC_OR_PARTITION);
                }
                Err(e) => {
                    immediate = true;
                    out = PartitionResult::error(fp.partition, e.kafka_code());
                }
            }
            partitions.push(out);
        }
        topics.push(TopicResult {
            name: name.to_string(),
            topic_id: topic.topic_id,
            partitions,
        });
    }
    if hw_moved {
        // Consumers long-polling this leader may now read more.
        state.data_arrived.notify_waiters();
    }
    (
        FetchResult {
            throttle_time_ms: 0,
            error_code: codes::NONE,
            session_id: 0,
            topics,
            node_endpoints: Vec::new(),
        },
        immediate,
    )
}

/// A leader's answer naming `replica` as the one to read from (Kafka's `readFromLog` when
/// the selector chose a replica): no error, the leader's offsets, no records, a null list
/// of aborted transactions.
fn redirect(partition: &Partition, index: i32, replica: i32) -> PartitionResult {
    let log = partition.log.lock().expect("lock");
    PartitionResult {
        partition_index: index,
        error_code: codes::NONE,
        high_watermark: partition.high_watermark(),
        last_stable_offset: partition.last_stable_offset(),
        log_start_offset: log.log_start_offset(),
        aborted_transactions: None,
        preferred_read_replica: replica,
        records: None,
        current_leader: None,
    }
}
