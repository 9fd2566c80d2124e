//! ShareAcknowledge (v1-2, KIP-932): acknowledge records the member acquired (accept,
//! release, reject, and from v2 renew, `IsRenewAck`) within its share session, which the
//! request's epoch steps (0 is INVALID_SHARE_SESSION_EPOCH: a session is opened by
//! ShareFetch; -1 closes it, releasing what the member still holds). Each partition gets
//! its own error (INVALID_RECORD_STATE for records the member does not hold). v2 answers
//! with the acquisition lock duration.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::share_acknowledge_response::{
    PartitionData, ShareAcknowledgeTopicResponse,
};
use kafka_protocol::messages::{RequestHeader, ShareAcknowledgeRequest, ShareAcknowledgeResponse};
use kafka_protocol::protocol::{Decodable, StrBytes};
use uuid::Uuid;

use super::share_common::{self, PartitionAcks};
use crate::errors::{codes, ApiError};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::share::partition_state::AckBatch;
use crate::share::session::{Step, INITIAL_EPOCH};
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let r = ShareAcknowledgeRequest::decode(&mut body, version)?;
    let response = match answer(state, ctx, &r) {
        Ok(response) => response,
        Err(e) => ShareAcknowledgeResponse::default()
            .with_error_code(e.code)
            .with_error_message(Some(StrBytes::from_string(e.message))),
    };
    encode(&response, version).map(Some)
}

fn answer(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    r: &ShareAcknowledgeRequest,
) -> Result<ShareAcknowledgeResponse, ApiError> {
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
    if r.share_session_epoch == INITIAL_EPOCH {
        return Err(ApiError::new(
            codes::INVALID_SHARE_SESSION_EPOCH,
            "The share session epoch is invalid: a ShareAcknowledge cannot open a share session.",
        ));
    }
    let step = state
        .share
        .session_step(&group, &member, r.share_session_epoch, &[], &[])?;
    let acks: Vec<PartitionAcks> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| PartitionAcks {
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
            })
        })
        .collect();
    let readable = |id: Uuid| {
        state
            .topic_by_id(id)
            .is_none_or(|t| authz::topic(state, ctx, authz::operation::READ, &t.name))
    };
    let outcomes = share_common::apply(state, &group, &member, &acks, r.is_renew_ack, &readable);
    if step == Step::Closed {
        state.share.session_closed(&group, &member);
    }
    let mut topics: BTreeMap<Uuid, Vec<PartitionData>> = BTreeMap::new();
    for (topic_id, partition, outcome) in outcomes {
        let mut d = PartitionData::default().with_partition_index(partition);
        d.current_leader.leader_id = state.config.node_id;
        if let Some(e) = outcome {
            d = d
                .with_error_code(e.code)
                .with_error_message(Some(StrBytes::from_string(e.message)));
        }
        topics.entry(topic_id).or_default().push(d);
    }
    let lock_ms = state.share_settings_for(&group).record_lock_duration_ms;
    Ok(ShareAcknowledgeResponse::default()
        .with_acquisition_lock_timeout_ms(i32::try_from(lock_ms).unwrap_or(i32::MAX))
        .with_responses(
            topics
                .into_iter()
                .map(|(topic_id, partitions)| {
                    ShareAcknowledgeTopicResponse::default()
                        .with_topic_id(topic_id)
                        .with_partitions(partitions)
                })
                .collect(),
        ))
}
