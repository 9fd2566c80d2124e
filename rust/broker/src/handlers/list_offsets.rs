//! ListOffsets (v1–11).
//!
//! Per partition, by the requested timestamp:
//! - `-2` (EARLIEST) and `-4` (EARLIEST_LOCAL, KIP-405, v8+): the log start offset (every
//!   segment is local here);
//! - `-5` (LATEST_TIERED, KIP-1005, v9+) and `-6` (EARLIEST_PENDING_UPLOAD, KIP-1023,
//!   v11+): offset -1, leader epoch -1, as Kafka answers for a topic without remote
//!   storage (nothing is tiered, nothing waits for an upload);
//! - `-1` (LATEST): the partition's high watermark, or its last stable offset for
//!   READ_COMMITTED;
//! - `-3` (MAX_TIMESTAMP, v7+): the offset and timestamp of the record with the largest
//!   timestamp;
//! - any other value: the first offset whose record timestamp is >= it.
//!
//! Offsets found carry timestamp -1 for EARLIEST/LATEST (as Kafka) and the partition's
//! leader epoch (0, the single node's only epoch); nothing found is offset -1, timestamp -1, leader epoch -1.
//! A negative timestamp that is none of these, or one newer than the request's version,
//! is UNSUPPORTED_VERSION (35) for its partition, as Kafka answers.
//! Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION (3); a partition named twice in
//! one request: INVALID_REQUEST (42) for each occurrence, as Kafka does. A current leader
//! epoch (v4+) other than -1 must be the partition's: older (any other negative included)
//! is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH. An isolation level other than 0
//! and 1 fails every partition with UNKNOWN_SERVER_ERROR (-1): Kafka's parse of it
//! throws, and its generic error answer is that. v10's `timeout_ms` bounds remote-storage
//! lookups, which never happen here.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse, RequestHeader};
use kafka_protocol::protocol::Decodable;
use kafkalite_core::Error as CoreError;

use crate::cluster::check_leader;
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::BrokerState;

pub const LATEST_TIMESTAMP: i64 = -1;
pub const EARLIEST_TIMESTAMP: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;
pub const EARLIEST_LOCAL_TIMESTAMP: i64 = -4;
pub const LATEST_TIERED_TIMESTAMP: i64 = -5;
pub const EARLIEST_PENDING_UPLOAD_TIMESTAMP: i64 = -6;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = ListOffsetsRequest::decode(&mut body, version)?;
    let mut seen = HashSet::new();
    let mut duplicates = HashSet::new();
    for t in &request.topics {
        for p in &t.partitions {
            if !seen.insert((t.name.as_str(), p.partition_index)) {
                duplicates.insert((t.name.as_str(), p.partition_index));
            }
        }
    }
    // Kafka parses the level whatever the replica id says (seen with ids -8388609 and
    // 2147483647).
    let unknown_isolation = version >= 2 && !matches!(request.isolation_level, 0 | 1);
    let mut topics = Vec::with_capacity(request.topics.len());
    for t in &request.topics {
        let topic = state.topic(t.name.as_str());
        let allowed = authz::topic(state, ctx, authz::operation::DESCRIBE, &t.name);
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in &t.partitions {
            let mut out = ListOffsetsPartitionResponse::default();
            out.partition_index = p.partition_index;
            out.timestamp = -1;
            out.offset = -1;
            out.leader_epoch = -1;
            if unknown_isolation {
                out.error_code = codes::UNKNOWN_SERVER_ERROR;
                partitions.push(out);
                continue;
            }
            if duplicates.contains(&(t.name.as_str(), p.partition_index)) {
                out.error_code = codes::INVALID_REQUEST;
                partitions.push(out);
                continue;
            }
            if !allowed {
                out.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                partitions.push(out);
                continue;
            }
            if !timestamp_supported(p.timestamp, version) {
                out.error_code = codes::UNSUPPORTED_VERSION;
                partitions.push(out);
                continue;
            }
            let client_epoch = if version >= 4 {
                p.current_leader_epoch
            } else {
                -1
            };
            let found = topic
                .as_ref()
                .map_or(Err(codes::UNKNOWN_TOPIC_OR_PARTITION), |topic| {
                    topic.hosted_or_code(p.partition_index, state.config.node_id, client_epoch)
                });
            let partition = match found {
                Ok(partition) => partition,
                Err(code) => {
                    // Unknown, or replicated on other brokers only (cluster mode).
                    out.error_code = code;
                    partitions.push(out);
                    continue;
                }
            };
            // A leader epoch the client names (v4+, -1 = none) must be the leader's: a
            // newer one is unknown here, an older one (any other negative too) fenced
            // (Kafka's order of checks).
            let epoch = partition.leader_epoch();
            if version >= 4 && p.current_leader_epoch != -1 && p.current_leader_epoch != epoch {
                out.error_code = if p.current_leader_epoch > epoch {
                    codes::UNKNOWN_LEADER_EPOCH
                } else {
                    codes::FENCED_LEADER_EPOCH
                };
                partitions.push(out);
                continue;
            }
            // In cluster mode only the leader answers (the epoch was checked above).
            if state.cluster.is_some() {
                let replica = partition.replica_state();
                let code = check_leader(&replica, state.config.node_id, -1);
                if code != codes::NONE {
                    out.error_code = code;
                    partitions.push(out);
                    continue;
                }
            }
            let found = {
                let log = partition.log.lock().expect("lock");
                // READ_COMMITTED (isolation level 1, v2+) sees up to the LSO.
                let visible = if request.isolation_level == 1 {
                    partition.last_stable_offset()
                } else {
                    partition.high_watermark()
                };
                lookup(&log, visible, p.timestamp)
            };
            match found {
                // Nothing is tiered: no offset, and no epoch either (Kafka's answer).
                Ok(Some((-1, timestamp)))
                    if matches!(
                        p.timestamp,
                        LATEST_TIERED_TIMESTAMP | EARLIEST_PENDING_UPLOAD_TIMESTAMP
                    ) =>
                {
                    out.timestamp = timestamp;
                }
                Ok(Some((offset, timestamp))) => {
                    out.offset = offset;
                    out.timestamp = timestamp;
                    // The field exists from v4; the codec refuses non-default values before.
                    if version >= 4 {
                        out.leader_epoch = partition.leader_epoch();
                    }
                }
                Ok(None) => {}
                Err(CoreError::Closed) => out.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION,
                Err(e) => out.error_code = e.kafka_code(),
            }
            partitions.push(out);
        }
        let mut topic_out = ListOffsetsTopicResponse::default();
        topic_out.name = t.name.clone();
        topic_out.partitions = partitions;
        topics.push(topic_out);
    }
    let mut response = ListOffsetsResponse::default();
    response.topics = topics;
    Ok(Some(encode(&response, version)?))
}

/// Whether `version` knows `timestamp`: a real time (>= 0), or a special value no newer
/// than the version that introduced it (MAX_TIMESTAMP v7, EARLIEST_LOCAL v8, LATEST_TIERED
/// v9, EARLIEST_PENDING_UPLOAD v11). Kafka 4.1.1 answers any other negative value UNSUPPORTED_VERSION for the
/// partition, before looking the topic up (the conformance fuzzer found kafkalite reading
/// it as a time before every record).
#[must_use]
pub fn timestamp_supported(timestamp: i64, version: i16) -> bool {
    match timestamp {
        0.. | LATEST_TIMESTAMP | EARLIEST_TIMESTAMP => true,
        MAX_TIMESTAMP => version >= 7,
        EARLIEST_LOCAL_TIMESTAMP => version >= 8,
        LATEST_TIERED_TIMESTAMP => version >= 9,
        EARLIEST_PENDING_UPLOAD_TIMESTAMP => version >= 11,
        _ => false,
    }
}

/// (offset, timestamp) for a ListOffsets timestamp, `None` when nothing matches. LATEST is
/// the high watermark (what a consumer may read up to).
pub fn lookup(
    log: &kafkalite_core::storage::PartitionLog,
    high_watermark: i64,
    timestamp: i64,
) -> kafkalite_core::Result<Option<(i64, i64)>> {
    if log.is_closed() {
        return Err(CoreError::Closed);
    }
    match timestamp {
        EARLIEST_TIMESTAMP | EARLIEST_LOCAL_TIMESTAMP => Ok(Some((log.log_start_offset(), -1))),
        LATEST_TIERED_TIMESTAMP | EARLIEST_PENDING_UPLOAD_TIMESTAMP => Ok(Some((-1, -1))),
        LATEST_TIMESTAMP => Ok(Some((high_watermark, -1))),
        MAX_TIMESTAMP => log.max_timestamp_offset(),
        ts => log.offset_for_timestamp(ts),
    }
}

#[cfg(test)]
mod tests {
    use super::timestamp_supported;

    #[test]
    fn special_timestamps_need_their_version() {
        assert!(
            timestamp_supported(0, 1) && timestamp_supported(-1, 1) && timestamp_supported(-2, 1)
        );
        assert!(!timestamp_supported(-3, 6) && timestamp_supported(-3, 7));
        assert!(!timestamp_supported(-4, 7) && timestamp_supported(-4, 8));
        assert!(!timestamp_supported(-5, 8) && timestamp_supported(-5, 9));
        assert!(!timestamp_supported(-6, 10) && timestamp_supported(-6, 11));
        for ts in [-7, -100, i64::MIN] {
            assert!(!timestamp_supported(ts, 11), "{ts}");
        }
    }
}
