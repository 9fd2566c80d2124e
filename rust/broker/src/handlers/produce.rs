//! Produce (v3–13; v0–2 advertised, as Kafka 4 does, and refused).
//!
//! Kafka 4 advertises Produce from v0 so that older librdkafka keeps compression on, but a
//! v0–2 request (the old message format) closes the connection, as Kafka's does. From v13
//! topics are named by id (KIP-516): an id this broker does not know gets UNKNOWN_TOPIC_ID
//! (100) for each partition, and the response names topics by id.
//!
//! Per partition, in Kafka's order of checks:
//! - unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION (3). Produce never creates
//!   topics (Kafka auto-creates on Metadata only);
//! - records null or empty, not magic 2, or more than one batch: INVALID_RECORD (87), as
//!   Kafka's `ProduceRequest.validateRecords` rules for v3+; a batch that does not parse or
//!   overruns the field: CORRUPT_MESSAGE (2);
//! - zstd before v7: UNSUPPORTED_COMPRESSION_TYPE (76);
//! - a batch whose base offset is not 0: INVALID_RECORD (87), with the log start offset
//!   and no message, as Kafka's log answers;
//! - control batches from a client: INVALID_RECORD (87);
//! - transactional batches: the transaction coordinator verifies that the partition is
//!   part of the producer's ongoing transaction (KIP-890 part 1): INVALID_TXN_STATE (48)
//!   if not (TRANSACTION_ABORTABLE (120) for v11+), INVALID_PRODUCER_EPOCH (47) for a
//!   fenced epoch. v12 (transaction version 2) adds the partition to the transaction
//!   implicitly first. `transaction.partition.verification.enable=false` (dynamic) skips
//!   the check, as Kafka's log does;
//! - batch larger than the segment size: RECORD_LIST_TOO_LARGE (18);
//! - compacted topic and a record without key: INVALID_RECORD (87) with `record_errors`;
//! - idempotence (`producer_state`): duplicates acknowledged with their original offsets,
//!   INVALID_PRODUCER_EPOCH (47), OUT_OF_ORDER_SEQUENCE_NUMBER (45); a producer idle past
//!   `producer.id.expiration.ms` (dynamic) is unknown again;
//! - then the core's `append_shared` (size limit, CRC, layout, then every record walked as
//!   Kafka's LogValidator does, compressed batches inflated up to
//!   `kafkalite.batch.decompressed.max.bytes`), whose errors carry their codes:
//!   MESSAGE_TOO_LARGE (10), CORRUPT_MESSAGE (2: CRC, data invalid in its codec),
//!   INVALID_RECORD (87: records that do not parse, or inflate past the cap), ...
//!
//! v8+ responses carry the error message. v10+ partitions refused NOT_LEADER_OR_FOLLOWER
//! name their current leader and epoch, with its endpoint at the top (KIP-951,
//! `response::leader_hints`). An invalid `acks` fails every partition with
//! INVALID_REQUIRED_ACKS (21). acks=0 sends no response; if any partition failed, the
//! connection is closed instead (as Kafka does, so the client refreshes its metadata).
//! On a single node acks=1 and acks=-1 answer once the batch is in the log: the ISR is
//! this broker alone, which satisfies any `min.insync.replicas` <= 1. In cluster mode the
//! leader stamps its epoch in the batch; acks=-1 is refused with NOT_ENOUGH_REPLICAS
//! (19) before the append when the ISR is smaller than `min.insync.replicas`, and answered
//! once the high watermark passes the batch (`replication::acks`: NOT_ENOUGH_REPLICAS_AFTER_APPEND
//! (20) if the ISR shrank below it meanwhile, REQUEST_TIMED_OUT (7) after the request's
//! `timeout_ms`).
//!
//! The append runs on the tokio worker: the partition's `producers` lock is held across
//! the idempotence check, the append and the recording of the batch (atomic per
//! partition), `log` only for each look and for the append (`Partition::append`, which
//! also advances the high watermark and the leader-epoch cache); neither across an await.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
    TopicProduceResponse,
};
use kafka_protocol::messages::{
    BrokerId, ProduceRequest, ProduceResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafkalite_core::records::{BatchHeader, Compression, LOG_OVERHEAD};
use kafkalite_core::storage::clock::now_ms;
use kafkalite_core::storage::Verdict;
use kafkalite_core::Error as CoreError;

use crate::cluster::check_leader;
use crate::errors::{codes, ApiError};
use crate::net::RequestContext;
use crate::replication::{acks, leader};
use crate::response::leader_hints::LeaderHints;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::security::quotas::QuotaKind;
use crate::state::{BrokerState, Topic};

/// Byte offset of `magic` in every Kafka message format (v0/v1 message sets included).
const MAGIC_POSITION: usize = LOG_OVERHEAD + 4;

/// A partition's outcome.
struct Appended {
    base_offset: i64,
    last_offset: i64,
    log_append_time: i64,
    log_start_offset: i64,
    /// False for an acknowledged duplicate.
    wrote: bool,
    /// `min.insync.replicas` of the topic (cluster mode; 1 on a single node).
    min_insync: usize,
}

struct Failed {
    code: i16,
    message: String,
    record_errors: Vec<(i32, String)>,
    /// Raised by the log's own checks of an append: Kafka answers these with the
    /// partition's log start offset and no error message.
    from_log: bool,
}

impl Failed {
    fn new(code: i16, message: impl Into<String>) -> Failed {
        Failed {
            code,
            message: message.into(),
            record_errors: Vec::new(),
            from_log: false,
        }
    }
}

impl From<ApiError> for Failed {
    fn from(e: ApiError) -> Failed {
        Failed::new(e.code, e.message)
    }
}

/// Kafka's words for a keyless record on a compacted topic; the record's message ends
/// with its topic partition, put in place of `KEYLESS_AT` once it is known.
const KEYLESS: &str = "Compacted topic cannot accept message without key";
const KEYLESS_AT: &str = "\u{0}at";

/// Kafka's RecordValidationException message: the count and at most the first three.
fn kafkas_record_errors(errors: &[(i32, String)]) -> String {
    let shown: Vec<String> = errors
        .iter()
        .take(3)
        .map(|(i, m)| format!("RecordError(batchIndex={i}, message='{m}')"))
        .collect();
    format!(
        "One or more records have been rejected due to {} record errors in total, and only \
         showing the first three errors at most: [{}]",
        errors.len(),
        shown.join(", ")
    )
}

impl From<CoreError> for Failed {
    fn from(e: CoreError) -> Failed {
        match e {
            // The topic was deleted under us.
            CoreError::Closed => {
                Failed::new(codes::UNKNOWN_TOPIC_OR_PARTITION, "partition is gone")
            }
            // Kafka names each keyless record in record_errors.
            // The topic partition is filled in where the answer is built (KEYLESS_AT).
            CoreError::KeylessRecords { records } => Failed {
                code: codes::INVALID_RECORD,
                message: KEYLESS.into(),
                record_errors: records
                    .into_iter()
                    .map(|i| (i, format!("{KEYLESS}{KEYLESS_AT}")))
                    .collect(),
                from_log: false,
            },
            // Kafka names each record whose timestamp is out of range in record_errors.
            CoreError::TimestampsOutOfRange { records } => Failed {
                code: codes::INVALID_TIMESTAMP,
                message: "One or more records have been rejected due to invalid timestamp".into(),
                record_errors: records,
                from_log: false,
            },
            e => Failed::new(e.kafka_code(), e.to_string()),
        }
    }
}

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    // Kafka 4 answers a v0-2 request by closing the connection (message formats v0/v1).
    anyhow::ensure!(
        version >= 3,
        "Produce v{version} (message format v0/v1) is not served; closing as Kafka 4 does"
    );
    let request = ProduceRequest::decode(&mut body, version)?;
    let acks = request.acks;
    let now = now_ms();
    let mut failures = 0usize;
    let mut wrote = false;
    let mut responses = Vec::with_capacity(request.topic_data.len());
    // acks=all in cluster mode: (topic slot, partition slot) and what it waits for.
    let mut pending: Vec<((usize, usize), acks::Pending)> = Vec::new();
    let replicated = acks == -1 && state.cluster.is_some();
    // Kafka refuses a transactional producer's whole request without WRITE on its
    // transactional id, before looking at any topic.
    let txn_denied = request
        .transactional_id
        .as_deref()
        .is_some_and(|id| !authz::transactional_id(state, ctx, authz::operation::WRITE, id));
    for mut topic_data in request.topic_data {
        // v13+: the topic by id; an unknown id fails every partition of it.
        let by_id = version >= 13;
        let topic = if by_id {
            let t = state.topic_by_id(topic_data.topic_id);
            if let Some(t) = &t {
                topic_data.name = TopicName(StrBytes::from_string(t.name.clone()));
            }
            t
        } else {
            state.topic(topic_data.name.as_str())
        };
        let unknown_id = by_id && topic.is_none();
        let allowed =
            unknown_id || authz::topic(state, ctx, authz::operation::WRITE, &topic_data.name);
        let mut partitions = Vec::with_capacity(topic_data.partition_data.len());
        for data in topic_data.partition_data {
            let outcome = if txn_denied {
                Err(Failed::new(
                    codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    "not authorized for the transactional id",
                ))
            } else if unknown_id {
                Err(Failed::new(
                    codes::UNKNOWN_TOPIC_ID,
                    "This server does not host this topic ID.",
                ))
            } else if !allowed {
                Err(Failed::new(
                    codes::TOPIC_AUTHORIZATION_FAILED,
                    "not authorized",
                ))
            } else if matches!(acks, -1..=1) {
                produce_partition(
                    state,
                    topic.as_deref(),
                    data.index,
                    data.records,
                    version,
                    now,
                    acks,
                )
            } else {
                Err(Failed::new(
                    codes::INVALID_REQUIRED_ACKS,
                    format!("acks must be -1, 0 or 1, got {acks}"),
                ))
            };
            let mut out = PartitionProduceResponse::default();
            out.index = data.index;
            match outcome {
                Ok(a) => {
                    if replicated {
                        if let Some(partition) =
                            topic.as_ref().and_then(|t| t.partition(data.index))
                        {
                            pending.push((
                                (responses.len(), partitions.len()),
                                acks::Pending {
                                    partition,
                                    required: a.last_offset + 1,
                                    min_insync: a.min_insync,
                                },
                            ));
                        }
                    }
                    wrote |= a.wrote;
                    out.base_offset = a.base_offset;
                    out.log_append_time_ms = a.log_append_time;
                    out.log_start_offset = a.log_start_offset;
                }
                Err(f) => {
                    failures += 1;
                    out.error_code = f.code;
                    out.base_offset = -1;
                    // Kafka's RecordValidationException (records named in record_errors)
                    // still reports the partition's log start offset; other failures -1.
                    if !f.record_errors.is_empty() || f.from_log {
                        if let Some(p) = topic.as_ref().and_then(|t| t.partition(data.index)) {
                            out.log_start_offset = p.log.lock().expect("lock").log_start_offset();
                        }
                    }
                    if version >= 8 {
                        // Kafka sends a message only with a record its validator rejected
                        // (KIP-467: INVALID_RECORD, INVALID_TIMESTAMP); other errors carry none.
                        let validated =
                            f.code == codes::INVALID_RECORD || f.code == codes::INVALID_TIMESTAMP;
                        let record_errors: Vec<(i32, String)> = f
                            .record_errors
                            .into_iter()
                            .map(|(i, m)| {
                                let at = format!("{}-{}", topic_data.name.as_str(), data.index);
                                (
                                    i,
                                    m.replace(KEYLESS_AT, &format!(" in topic partition {at}")),
                                )
                            })
                            .collect();
                        let message = if f.message == KEYLESS {
                            kafkas_record_errors(&record_errors)
                        } else {
                            f.message
                        };
                        if validated && !f.from_log {
                            out.error_message = Some(StrBytes::from_string(message));
                        }
                        out.record_errors = record_errors
                            .into_iter()
                            .map(|(index, message)| {
                                let mut e = BatchIndexAndErrorMessage::default();
                                e.batch_index = index;
                                e.batch_index_error_message = Some(StrBytes::from_string(message));
                                e
                            })
                            .collect();
                    }
                }
            }
            partitions.push(out);
        }
        let mut topic_out = TopicProduceResponse::default();
        topic_out.name = topic_data.name;
        topic_out.topic_id = topic_data.topic_id;
        topic_out.partition_responses = partitions;
        responses.push(topic_out);
    }
    if wrote {
        state.data_arrived.notify_waiters();
    }
    if !pending.is_empty() {
        let timeout = u64::try_from(request.timeout_ms).unwrap_or(0);
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(timeout);
        for ((t, p), wait) in &pending {
            let code = acks::wait_committed(state.config.node_id, wait, deadline).await;
            if code != codes::NONE {
                responses[*t].partition_responses[*p].error_code = code;
            }
        }
    }
    let node_endpoints = if version >= 10 {
        name_current_leaders(state, ctx, &mut responses)
    } else {
        Vec::new()
    };
    // producer_byte_rate counts the whole request (Kafka's `request.sizeInBytes`).
    let throttle_ms = state.security.quotas.record(
        QuotaKind::Produce,
        &ctx.principal().name,
        ctx.client_id,
        ctx.request_size as f64,
    );
    ctx.throttle.at_least(throttle_ms);
    if acks == 0 {
        if failures > 0 {
            anyhow::bail!("acks=0 produce failed for {failures} partition(s); closing the connection as Kafka does");
        }
        return Ok(None);
    }
    let mut response = ProduceResponse::default();
    response.responses = responses;
    response.throttle_time_ms = throttle_ms;
    response.node_endpoints = node_endpoints;
    Ok(Some(encode(&response, version)?))
}

/// KIP-951 (v10+): each partition refused with NOT_LEADER_OR_FOLLOWER names its current
/// leader; the leaders' endpoints go in the response, as Kafka answers.
fn name_current_leaders(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    responses: &mut [TopicProduceResponse],
) -> Vec<NodeEndpoint> {
    let mut hints = LeaderHints::new(state, ctx.listener_name());
    for topic in responses.iter_mut() {
        for p in &mut topic.partition_responses {
            if p.error_code == codes::NOT_LEADER_OR_FOLLOWER {
                let (leader, epoch) = hints.current_leader(topic.name.as_str(), p.index);
                p.current_leader = LeaderIdAndEpoch::default()
                    .with_leader_id(BrokerId(leader))
                    .with_leader_epoch(epoch);
            }
        }
    }
    hints
        .endpoints()
        .into_iter()
        .map(|b| {
            NodeEndpoint::default()
                .with_node_id(BrokerId(b.node_id))
                .with_host(StrBytes::from_string(b.host))
                .with_port(b.port)
                .with_rack(b.rack.map(StrBytes::from_string))
        })
        .collect()
}

fn produce_partition(
    state: &BrokerState,
    topic: Option<&Topic>,
    index: i32,
    records: Option<Bytes>,
    version: i16,
    now: i64,
    acks: i16,
) -> Result<Appended, Failed> {
    if let Some(t) = topic.filter(|t| t.is_internal()) {
        // Its records are replayed as coordinator state at startup: only the coordinator
        // writes.
        return Err(Failed::new(
            codes::INVALID_TOPIC_EXCEPTION,
            format!("clients may not produce to the internal topic {}", t.name),
        ));
    }
    let node = state.config.node_id;
    let partition = match topic.map(|t| t.hosted_or_code(index, node, -1)) {
        Some(Ok(partition)) => partition,
        Some(Err(code)) if code != codes::UNKNOWN_TOPIC_OR_PARTITION => {
            // A replica on other brokers only (cluster mode).
            return Err(Failed::new(code, "this broker does not lead the partition"));
        }
        _ => {
            return Err(Failed::new(
                codes::UNKNOWN_TOPIC_OR_PARTITION,
                "this server does not host this topic-partition",
            ))
        }
    };
    let mut min_insync = 1;
    if state.cluster.is_some() {
        let replica = partition.replica_state();
        let code = check_leader(&replica, state.config.node_id, -1);
        if code != codes::NONE {
            return Err(Failed::new(code, "this broker does not lead the partition"));
        }
        min_insync = topic.map_or(1, |t| leader::min_insync_replicas(state, t));
        if acks == -1 && replica.isr.len() < min_insync {
            return Err(Failed::new(
                codes::NOT_ENOUGH_REPLICAS,
                format!(
                    "the in-sync replicas {:?} are fewer than min.insync.replicas={min_insync}",
                    replica.isr
                ),
            ));
        }
    }
    let records = records.unwrap_or_default();
    let header = check_single_batch(&records, version)?;
    let cluster = state.cluster.is_some();
    // Kafka's log refuses a client's batch whose base offset is not 0 (the offsets are the
    // broker's to assign); the conformance fuzzer found kafkalite accepting it.
    if header.base_offset != 0 {
        return Err(Failed {
            from_log: true,
            ..Failed::new(
                codes::INVALID_RECORD,
                format!(
                    "the base offset of a client's record batch must be 0, not {}",
                    header.base_offset
                ),
            )
        });
    }
    if header.is_control() {
        return Err(Failed::new(
            codes::INVALID_RECORD,
            "clients are not allowed to write control records",
        ));
    }
    let mut producers = partition.producers.lock().expect("lock");
    // The dynamic keys an idempotent or transactional batch is checked with.
    let live = (header.producer_id >= 0).then(|| state.dynamic.live());
    if let Some(live) = &live {
        producers.set_expiration_ms(live.producer_id_expiration_ms);
    }
    let verify = live.as_ref().is_some_and(|l| l.transaction_verification);
    if header.is_transactional() {
        // Under the producer lock: a marker cannot slip between this check and the append.
        if version >= 12 {
            state
                .transactions
                .add_partition_implicitly(
                    header.producer_id,
                    header.producer_epoch,
                    &partition.topic,
                    partition.index,
                )
                .map_err(|(code, message)| Failed::new(code, message))?;
        }
        // `transaction.partition.verification.enable=false`: Kafka appends the batch
        // unchecked (v12's implicit add above still puts the partition in the transaction).
        if verify {
            state
                .transactions
                .verify_produce(
                    header.producer_id,
                    header.producer_epoch,
                    &partition.topic,
                    partition.index,
                    state.cluster.is_none(),
                )
                .map_err(|(code, message)| {
                    // v11+ clients know TRANSACTION_ABORTABLE (KIP-890): abort and go on.
                    let code = if code == codes::INVALID_TXN_STATE && version >= 11 {
                        codes::TRANSACTION_ABORTABLE
                    } else {
                        code
                    };
                    Failed::new(code, message)
                })?;
        }
    }
    let verdict = producers.check(&header, now)?;
    if let Verdict::Duplicate(batch) = verdict {
        return Ok(Appended {
            base_offset: batch.first_offset,
            last_offset: batch.last_offset,
            min_insync,
            log_append_time: batch.log_append_time,
            log_start_offset: partition.log.lock().expect("lock").log_start_offset(),
            wrote: false,
        });
    }
    let segment_bytes = partition.log.lock().expect("lock").config().segment_bytes;
    if records.len() as u64 > segment_bytes {
        return Err(Failed::new(
            codes::RECORD_LIST_TOO_LARGE,
            format!(
                "batch of {} bytes exceeds the segment size {segment_bytes}",
                records.len()
            ),
        ));
    }
    let info = partition.append_in_epoch(&records, now, cluster)?;
    let messages = u64::try_from(info.record_count).unwrap_or(0);
    (state.metrics.topics).appended(&partition.topic, records.len() as u64, messages);
    if cluster {
        // With the ISR down to this leader (or a sole replica) the batch is committed now.
        partition.advance_leader_high_watermark();
    }
    let log_start_offset = partition.log.lock().expect("lock").log_start_offset();
    producers.record(
        &header,
        info.first_offset,
        info.last_offset,
        info.log_append_time,
        now,
    );
    Ok(Appended {
        base_offset: info.first_offset,
        last_offset: info.last_offset,
        min_insync,
        log_append_time: info.log_append_time,
        log_start_offset,
        wrote: true,
    })
}

/// Kafka's Produce v3+ rule: exactly one RecordBatch v2 per partition.
fn check_single_batch(records: &[u8], version: i16) -> Result<BatchHeader, Failed> {
    if records.is_empty() {
        return Err(Failed::new(
            codes::INVALID_RECORD,
            format!("Produce requests with version {version} must have at least one record batch per partition"),
        ));
    }
    if records.len() > MAGIC_POSITION && records[MAGIC_POSITION] != 2 {
        return Err(Failed::new(
            codes::INVALID_RECORD,
            format!("Produce requests with version {version} are only allowed to contain record batches with magic version 2"),
        ));
    }
    let header = BatchHeader::parse(records)?;
    let size = header.total_size();
    if size < records.len() {
        return Err(Failed::new(
            codes::INVALID_RECORD,
            format!("Produce requests with version {version} are only allowed to contain exactly one record batch per partition"),
        ));
    }
    if size > records.len() {
        return Err(Failed::new(
            codes::CORRUPT_MESSAGE,
            format!(
                "batch of {size} bytes overruns the {} bytes of records sent",
                records.len()
            ),
        ));
    }
    if version < 7 && header.compression().ok() == Some(Compression::Zstd) {
        return Err(Failed::new(
            codes::UNSUPPORTED_COMPRESSION_TYPE,
            format!("Produce requests with version {version} may not use zstd (needs v7+)"),
        ));
    }
    Ok(header)
}
