//! ShareFetch (v1-2, KIP-932): within the member's share session, acknowledge what the
//! request piggybacks, then acquire records of the session's partitions for the member
//! (whole batches, about `max_records`), waiting up to `max_wait_ms` when there is none.
//! Each answered partition carries its record batches and the acquired offset ranges with
//! their delivery counts; the answer names the acquisition lock duration.
//!
//! Errors as Kafka's: a bad session epoch or unknown session at the top level
//! (INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_NOT_FOUND); acknowledgements on the
//! session-opening request are INVALID_REQUEST; READ on the group (else
//! GROUP_AUTHORIZATION_FAILED) and on each topic (else TOPIC_AUTHORIZATION_FAILED for its
//! partitions). A request at epoch -1 only acknowledges and closes the session (its
//! member's acquired records are released). v2's renew-only request (`IsRenewAck`) renews
//! the named records' locks and acquires nothing; its record-limit acquire mode
//! (`ShareAcquireMode` 1) acquires exactly up to `max_records`, cutting a batch.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::share_fetch_response::{
    AcquiredRecords, PartitionData, ShareFetchableTopicResponse,
};
use kafka_protocol::messages::{RequestHeader, ShareFetchRequest, ShareFetchResponse};
use kafka_protocol::protocol::{Decodable, StrBytes};
use uuid::Uuid;

use super::share_common::{self, PartitionAcks};
use crate::errors::{codes, ApiError};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::share::partition_state::AckBatch;
use crate::share::session::{Step, INITIAL_EPOCH};
use crate::share::FetchedPartition;
use crate::state::BrokerState;

/// The longest a share fetch waits for records, whatever it asks.
const MAX_WAIT_CAP_MS: i32 = 30_000;
/// ShareFetch v2's `ShareAcquireMode` asking for at most `max_records` exactly.
const RECORD_LIMIT_MODE: i8 = 1;
/// Records per fetch when the request asks for none (the Java client's `max.poll.records`).
const DEFAULT_MAX_RECORDS: i32 = 500;

fn top_level(code: i16, message: String) -> ShareFetchResponse {
    ShareFetchResponse::default()
        .with_error_code(code)
        .with_error_message(Some(StrBytes::from_string(message)))
}

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let r = ShareFetchRequest::decode(&mut body, version)?;
    let response = match answer(state, ctx, &r).await {
        Ok(response) => response,
        Err(e) => top_level(e.code, e.message),
    };
    encode(&response, version).map(Some)
}

async fn answer(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    r: &ShareFetchRequest,
) -> Result<ShareFetchResponse, ApiError> {
    let (group, member) = share_common::ids(
        r.group_id.as_ref().map(|g| g.0.as_str()),
        r.member_id.as_deref(),
    )?;
    if !authz::group(state, ctx, authz::operation::READ, &group) {
        return Err(ApiError::new(
            codes::GROUP_AUTHORIZATION_FAILED,
            format!("Not authorized to access group: {group}"),
        ));
    }
    let mut added = Vec::new();
    let mut acks = Vec::new();
    for t in &r.topics {
        for p in &t.partitions {
            added.push((t.topic_id, p.partition_index));
            if !p.acknowledgement_batches.is_empty() {
                acks.push(PartitionAcks {
                    topic_id: t.topic_id,
                    partition: p.partition_index,
                    batches: p
                        .acknowledgement_batches
                        .iter()
                        .map(|b| AckBatch {
                            first_offset: b.first_offset,
                            last_offset: b.last_offset,
                            types: b.acknowledge_types.clone(),
                        })
                        .collect(),
                });
            }
        }
    }
    let forgotten: Vec<(Uuid, i32)> = r
        .forgotten_topics_data
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p)))
        .collect();
    if r.share_session_epoch == INITIAL_EPOCH && !acks.is_empty() {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            "Acknowledge data present on initial fetch request",
        ));
    }
    let step =
        state
            .share
            .session_step(&group, &member, r.share_session_epoch, &added, &forgotten)?;
    let readable = |id: Uuid| {
        state
            .topic_by_id(id)
            .is_none_or(|t| authz::topic(state, ctx, authz::operation::READ, &t.name))
    };
    let acked = share_common::apply(state, &group, &member, &acks, r.is_renew_ack, &readable);
    let mut parts: BTreeMap<(Uuid, i32), PartitionData> = BTreeMap::new();
    for (topic_id, partition, outcome) in acked {
        let mut d = PartitionData::default().with_partition_index(partition);
        if let Some(e) = outcome {
            d = d
                .with_acknowledge_error_code(e.code)
                .with_acknowledge_error_message(Some(StrBytes::from_string(e.message)));
        }
        parts.insert((topic_id, partition), d);
    }
    if step == Step::Closed {
        state.share.session_closed(&group, &member);
    } else if !r.is_renew_ack {
        let session: Vec<(Uuid, i32)> = state.share.session_partitions(&group, &member);
        let denied: BTreeSet<Uuid> = session
            .iter()
            .map(|(t, _)| *t)
            .filter(|t| !readable(*t))
            .collect();
        let max_records = if r.max_records > 0 {
            r.max_records
        } else {
            DEFAULT_MAX_RECORDS
        };
        let max_bytes = u64::try_from(r.max_bytes.max(1)).unwrap_or(1);
        let strict = r.share_acquire_mode == RECORD_LIMIT_MODE;
        let fetched = acquire(
            state,
            strict,
            &group,
            &member,
            &session,
            &denied,
            max_records,
            max_bytes,
            r.max_wait_ms,
        )
        .await;
        for ((topic_id, partition), f) in fetched {
            let d = parts
                .remove(&(topic_id, partition))
                .unwrap_or_else(|| PartitionData::default().with_partition_index(partition));
            let d = fill(d, f, state.config.node_id);
            parts.insert((topic_id, partition), d);
        }
    }
    let mut topics: BTreeMap<Uuid, Vec<PartitionData>> = BTreeMap::new();
    for ((topic_id, _), d) in parts {
        topics.entry(topic_id).or_default().push(d);
    }
    let lock_ms = state.share_settings_for(&group).record_lock_duration_ms;
    Ok(ShareFetchResponse::default()
        .with_acquisition_lock_timeout_ms(i32::try_from(lock_ms).unwrap_or(i32::MAX))
        .with_responses(
            topics
                .into_iter()
                .map(|(topic_id, partitions)| {
                    ShareFetchableTopicResponse::default()
                        .with_topic_id(topic_id)
                        .with_partitions(partitions)
                })
                .collect(),
        ))
}

fn fill(mut d: PartitionData, f: FetchedPartition, node: i32) -> PartitionData {
    if let Some(e) = f.error {
        d = d
            .with_error_code(e.code)
            .with_error_message(Some(StrBytes::from_string(e.message)));
    }
    d.current_leader.leader_id = node;
    d.current_leader.leader_epoch = 0;
    d.with_records(f.records).with_acquired_records(
        f.acquired
            .into_iter()
            .map(|(first, last, count)| {
                AcquiredRecords::default()
                    .with_first_offset(first)
                    .with_last_offset(last)
                    .with_delivery_count(count)
            })
            .collect(),
    )
}

/// Acquire across the session's partitions, long-polling until something is acquired,
/// a partition fails, or `max_wait_ms` passes.
#[allow(clippy::too_many_arguments)]
async fn acquire(
    state: &Arc<BrokerState>,
    strict: bool,
    group: &str,
    member: &str,
    session: &[(Uuid, i32)],
    denied: &BTreeSet<Uuid>,
    max_records: i32,
    max_bytes: u64,
    max_wait_ms: i32,
) -> Vec<((Uuid, i32), FetchedPartition)> {
    let wait =
        Duration::from_millis(u64::try_from(max_wait_ms.clamp(0, MAX_WAIT_CAP_MS)).unwrap_or(0));
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let notified = state.data_arrived.notified();
        let mut budget = usize::try_from(max_records).unwrap_or(0);
        let mut bytes_left = max_bytes;
        let mut out = Vec::new();
        let mut anything = false;
        for &(topic_id, partition) in session {
            let f = if denied.contains(&topic_id) {
                FetchedPartition {
                    error: Some(ApiError::new(
                        codes::TOPIC_AUTHORIZATION_FAILED,
                        "Not authorized to access topics: [Topic authorization failed.]",
                    )),
                    ..FetchedPartition::default()
                }
            } else if budget == 0 || bytes_left == 0 {
                FetchedPartition::default()
            } else {
                let state2 = Arc::clone(state);
                let (g, m) = (group.to_string(), member.to_string());
                crate::state::off_the_runtime(move || {
                    state2
                        .share
                        .acquire(&g, &m, topic_id, partition, budget, strict, bytes_left)
                })
            };
            let n: usize = f
                .acquired
                .iter()
                .map(|a| usize::try_from(a.1 - a.0 + 1).unwrap_or(0))
                .sum();
            budget = budget.saturating_sub(n);
            bytes_left =
                bytes_left.saturating_sub(f.records.as_ref().map_or(0, |b| b.len() as u64));
            anything |= n > 0 || f.error.is_some();
            out.push(((topic_id, partition), f));
        }
        if anything || tokio::time::Instant::now() >= deadline {
            // Partitions with nothing to say are left out of the answer.
            return out
                .into_iter()
                .filter(|(_, f)| f.error.is_some() || !f.acquired.is_empty())
                .collect();
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            continue;
        }
    }
}
