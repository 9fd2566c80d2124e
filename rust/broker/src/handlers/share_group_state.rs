//! The share-state APIs (KIP-932), through which a partition leader's share-partitions
//! read and write their state at the share coordinator of `__share_group_state`:
//! InitializeShareGroupState v0, ReadShareGroupState v0, WriteShareGroupState v0-1,
//! DeleteShareGroupState v0 and ReadShareGroupStateSummary v0-1. Inter-broker APIs, so
//! CLUSTER_ACTION on the cluster is required (CLUSTER_AUTHORIZATION_FAILED for every
//! partition otherwise), as Kafka checks them. A share-partition with no state reads as
//! start offset -1 (uninitialized). On a single node the broker's own share-partitions
//! use the coordinator directly; these serve other brokers and tools.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{
    delete_share_group_state_response as del, initialize_share_group_state_response as init,
    read_share_group_state_response as read, read_share_group_state_summary_response as summary,
    write_share_group_state_response as write, ApiKey, DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse, InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse, ReadShareGroupStateRequest, ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse, RequestHeader,
    WriteShareGroupStateRequest, WriteShareGroupStateResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use uuid::Uuid;

use crate::errors::{codes, ApiError};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::share::records::SharePartitionKey;
use crate::state::BrokerState;

fn key(group: &StrBytes, topic_id: Uuid, partition: i32) -> SharePartitionKey {
    SharePartitionKey {
        group_id: group.to_string(),
        topic_id,
        partition,
    }
}

fn denied() -> ApiError {
    ApiError::new(
        codes::CLUSTER_AUTHORIZATION_FAILED,
        "Cluster authorization failed.",
    )
}

fn message(e: &ApiError) -> Option<StrBytes> {
    Some(StrBytes::from_string(e.message.clone()))
}

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let allowed = authz::cluster(state, ctx, authz::operation::CLUSTER_ACTION);
    let coordinator = &state.share.coordinator;
    let check = |f: &dyn Fn() -> Result<(), ApiError>| if allowed { f() } else { Err(denied()) };
    let key_of = ApiKey::try_from(header.request_api_key).ok();
    match key_of {
        Some(ApiKey::InitializeShareGroupState) => {
            let r = InitializeShareGroupStateRequest::decode(&mut body, version)?;
            let results = r
                .topics
                .iter()
                .map(|t| {
                    let partitions = t
                        .partitions
                        .iter()
                        .map(|p| {
                            let k = key(&r.group_id, t.topic_id, p.partition);
                            let out = check(&|| {
                                coordinator.initialize(&k, p.state_epoch, p.start_offset)
                            });
                            let d = init::PartitionResult::default().with_partition(p.partition);
                            match out {
                                Ok(()) => d,
                                Err(e) => d.with_error_code(e.code).with_error_message(message(&e)),
                            }
                        })
                        .collect();
                    init::InitializeStateResult::default()
                        .with_topic_id(t.topic_id)
                        .with_partitions(partitions)
                })
                .collect();
            encode(
                &InitializeShareGroupStateResponse::default().with_results(results),
                version,
            )
            .map(Some)
        }
        Some(ApiKey::ReadShareGroupState) => {
            let r = ReadShareGroupStateRequest::decode(&mut body, version)?;
            let results = r
                .topics
                .iter()
                .map(|t| {
                    let partitions = t
                        .partitions
                        .iter()
                        .map(|p| {
                            let k = key(&r.group_id, t.topic_id, p.partition);
                            let d = read::PartitionResult::default().with_partition(p.partition);
                            let found = if allowed {
                                coordinator.read(&k)
                            } else {
                                Err(denied())
                            };
                            match found {
                                Ok(Some(s)) => d
                                    .with_state_epoch(s.state_epoch)
                                    .with_start_offset(s.start_offset)
                                    .with_state_batches(
                                        s.batches
                                            .iter()
                                            .map(|&(first, last, st, count)| {
                                                read::StateBatch::default()
                                                    .with_first_offset(first)
                                                    .with_last_offset(last)
                                                    .with_delivery_state(st)
                                                    .with_delivery_count(count)
                                            })
                                            .collect(),
                                    ),
                                Ok(None) => d.with_start_offset(-1),
                                Err(e) => d.with_error_code(e.code).with_error_message(message(&e)),
                            }
                        })
                        .collect();
                    read::ReadStateResult::default()
                        .with_topic_id(t.topic_id)
                        .with_partitions(partitions)
                })
                .collect();
            encode(
                &ReadShareGroupStateResponse::default().with_results(results),
                version,
            )
            .map(Some)
        }
        Some(ApiKey::WriteShareGroupState) => {
            let r = WriteShareGroupStateRequest::decode(&mut body, version)?;
            let results = r
                .topics
                .iter()
                .map(|t| {
                    let partitions = t
                        .partitions
                        .iter()
                        .map(|p| {
                            let k = key(&r.group_id, t.topic_id, p.partition);
                            let batches: Vec<_> = p
                                .state_batches
                                .iter()
                                .map(|b| {
                                    (
                                        b.first_offset,
                                        b.last_offset,
                                        b.delivery_state,
                                        b.delivery_count,
                                    )
                                })
                                .collect();
                            let out = check(&|| {
                                coordinator.apply_write(
                                    &k,
                                    p.state_epoch,
                                    p.leader_epoch,
                                    p.start_offset,
                                    p.delivery_complete_count,
                                    &batches,
                                )
                            });
                            let d = write::PartitionResult::default().with_partition(p.partition);
                            match out {
                                Ok(()) => d,
                                Err(e) => d.with_error_code(e.code).with_error_message(message(&e)),
                            }
                        })
                        .collect();
                    write::WriteStateResult::default()
                        .with_topic_id(t.topic_id)
                        .with_partitions(partitions)
                })
                .collect();
            encode(
                &WriteShareGroupStateResponse::default().with_results(results),
                version,
            )
            .map(Some)
        }
        Some(ApiKey::DeleteShareGroupState) => {
            let r = DeleteShareGroupStateRequest::decode(&mut body, version)?;
            let results = r
                .topics
                .iter()
                .map(|t| {
                    let partitions = t
                        .partitions
                        .iter()
                        .map(|p| {
                            let k = key(&r.group_id, t.topic_id, p.partition);
                            let out = check(&|| coordinator.write(&k, None));
                            let d = del::PartitionResult::default().with_partition(p.partition);
                            match out {
                                Ok(()) => d,
                                Err(e) => d.with_error_code(e.code).with_error_message(message(&e)),
                            }
                        })
                        .collect();
                    del::DeleteStateResult::default()
                        .with_topic_id(t.topic_id)
                        .with_partitions(partitions)
                })
                .collect();
            encode(
                &DeleteShareGroupStateResponse::default().with_results(results),
                version,
            )
            .map(Some)
        }
        Some(ApiKey::ReadShareGroupStateSummary) => {
            let r = ReadShareGroupStateSummaryRequest::decode(&mut body, version)?;
            let results = r
                .topics
                .iter()
                .map(|t| {
                    let partitions = t
                        .partitions
                        .iter()
                        .map(|p| {
                            let k = key(&r.group_id, t.topic_id, p.partition);
                            let d = summary::PartitionResult::default().with_partition(p.partition);
                            let found = if allowed {
                                coordinator.read(&k)
                            } else {
                                Err(denied())
                            };
                            match found {
                                Ok(Some(s)) => d
                                    .with_state_epoch(s.state_epoch)
                                    .with_leader_epoch(s.leader_epoch)
                                    .with_start_offset(s.start_offset)
                                    .with_delivery_complete_count(s.delivery_complete_count),
                                Ok(None) => d.with_start_offset(-1).with_leader_epoch(-1),
                                Err(e) => d.with_error_code(e.code).with_error_message(message(&e)),
                            }
                        })
                        .collect();
                    summary::ReadStateSummaryResult::default()
                        .with_topic_id(t.topic_id)
                        .with_partitions(partitions)
                })
                .collect();
            encode(
                &ReadShareGroupStateSummaryResponse::default().with_results(results),
                version,
            )
            .map(Some)
        }
        other => anyhow::bail!("not a share-state API: {other:?}"),
    }
}
