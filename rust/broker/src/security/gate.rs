//! Authorization of the requests that name one resource, in one table keyed by API, so
//! handlers stay free of it: JoinGroup, SyncGroup, Heartbeat, LeaveGroup (READ group),
//! InitProducerId (WRITE transactional id, or IDEMPOTENT_WRITE cluster / WRITE on some
//! topic, KIP-679), DescribeCluster (DESCRIBE cluster), Describe/AlterUserScramCredentials (DESCRIBE /
//! ALTER cluster), the cluster operations (`gate_cluster`: ElectLeaders,
//! Alter/ListPartitionReassignments, WriteTxnMarkers) and the transactional id and group
//! of the transaction APIs (`gate_txn`: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
//! TxnOffsetCommit). A refused request is answered here with Kafka's error and never
//! reaches its handler. Requests naming many resources (FindCoordinator's keys among them)
//! check each in their handler (`authz`).

use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::DescribeUserScramCredentialsResult;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey, BrokerId,
    DescribeClusterResponse, DescribeUserScramCredentialsResponse, HeartbeatRequest,
    HeartbeatResponse, InitProducerIdRequest, InitProducerIdResponse, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse, OffsetFetchRequest,
    OffsetFetchResponse, ProducerId, SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use super::acl::{op, resource};
use super::refusal::Refusal;
use super::{authz, gate_cluster, gate_txn};
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

/// The refusal to send instead of handling the request, if the principal may not make it.
pub fn refuse(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    key: ApiKey,
    body: &Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    if !state.security.authorizer.enabled {
        return Ok(None);
    }
    let mut body = body.clone();
    let group = |name: &str| authz::group(state, ctx, op::READ, name);
    let denied_group = codes::GROUP_AUTHORIZATION_FAILED;
    let refusal = match key {
        ApiKey::JoinGroup => {
            let r = JoinGroupRequest::decode(&mut body, version)?;
            (!group(&r.group_id)).then(|| {
                encode(
                    &JoinGroupResponse::default()
                        .with_error_code(denied_group)
                        .with_generation_id(-1),
                    version,
                )
            })
        }
        ApiKey::SyncGroup => {
            let r = SyncGroupRequest::decode(&mut body, version)?;
            (!group(&r.group_id)).then(|| {
                encode(
                    &SyncGroupResponse::default().with_error_code(denied_group),
                    version,
                )
            })
        }
        ApiKey::Heartbeat => {
            let r = HeartbeatRequest::decode(&mut body, version)?;
            (!group(&r.group_id)).then(|| {
                encode(
                    &HeartbeatResponse::default().with_error_code(denied_group),
                    version,
                )
            })
        }
        ApiKey::LeaveGroup => {
            let r = LeaveGroupRequest::decode(&mut body, version)?;
            (!group(&r.group_id)).then(|| {
                encode(
                    &LeaveGroupResponse::default().with_error_code(denied_group),
                    version,
                )
            })
        }
        ApiKey::OffsetCommit => offset_commit(state, ctx, &mut body, version)?,
        ApiKey::OffsetFetch => offset_fetch(state, ctx, &mut body, version)?,
        ApiKey::OffsetDelete => {
            let r = OffsetDeleteRequest::decode(&mut body, version)?;
            (!authz::group(state, ctx, op::DELETE, &r.group_id)).then(|| {
                encode(
                    &OffsetDeleteResponse::default().with_error_code(denied_group),
                    version,
                )
            })
        }
        ApiKey::InitProducerId => {
            let r = InitProducerIdRequest::decode(&mut body, version)?;
            let code = match r.transactional_id.as_deref() {
                Some(id) if !id.is_empty() => (!authz::transactional_id(state, ctx, op::WRITE, id))
                    .then_some(codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
                _ => (!(authz::cluster(state, ctx, op::IDEMPOTENT_WRITE)
                    || state.security.authorizer.may_on_some(
                        ctx.principal(),
                        &ctx.peer().ip().to_string(),
                        op::WRITE,
                        resource::TOPIC,
                    )))
                .then_some(codes::CLUSTER_AUTHORIZATION_FAILED),
            };
            code.map(|code| {
                encode(
                    &InitProducerIdResponse::default()
                        .with_error_code(code)
                        .with_producer_id(ProducerId(-1))
                        .with_producer_epoch(-1),
                    version,
                )
            })
        }
        ApiKey::DescribeCluster => (!authz::cluster(state, ctx, op::DESCRIBE)).then(|| {
            encode(
                &DescribeClusterResponse::default()
                    .with_error_code(codes::CLUSTER_AUTHORIZATION_FAILED)
                    .with_controller_id(BrokerId(-1)),
                version,
            )
        }),
        ApiKey::DescribeUserScramCredentials => {
            (!authz::cluster(state, ctx, op::DESCRIBE)).then(|| {
                let r = kafka_protocol::messages::DescribeUserScramCredentialsRequest::decode(
                    &mut body, version,
                );
                let users = r.ok().and_then(|r| r.users).unwrap_or_default();
                encode(
                    &DescribeUserScramCredentialsResponse::default()
                        .with_error_code(codes::CLUSTER_AUTHORIZATION_FAILED)
                        .with_results(
                            users
                                .into_iter()
                                .map(|u| {
                                    DescribeUserScramCredentialsResult::default()
                                        .with_user(u.name)
                                        .with_error_code(codes::CLUSTER_AUTHORIZATION_FAILED)
                                })
                                .collect(),
                        ),
                    version,
                )
            })
        }
        ApiKey::AlterUserScramCredentials => {
            let r = AlterUserScramCredentialsRequest::decode(&mut body, version)?;
            (!authz::cluster(state, ctx, op::ALTER)).then(|| {
                let mut users: Vec<StrBytes> = Vec::new();
                for name in r
                    .deletions
                    .iter()
                    .map(|d| &d.name)
                    .chain(r.upsertions.iter().map(|u| &u.name))
                {
                    if !users.contains(name) {
                        users.push(name.clone());
                    }
                }
                encode(
                    &AlterUserScramCredentialsResponse::default().with_results(
                        users
                            .into_iter()
                            .map(|u| {
                                AlterUserScramCredentialsResult::default()
                                    .with_user(u)
                                    .with_error_code(codes::CLUSTER_AUTHORIZATION_FAILED)
                            })
                            .collect(),
                    ),
                    version,
                )
            })
        }
        ApiKey::ElectLeaders => gate_cluster::elect_leaders(state, ctx, &mut body, version)?,
        ApiKey::AlterPartitionReassignments => {
            gate_cluster::alter_reassignments(state, ctx, &mut body, version)?
        }
        ApiKey::ListPartitionReassignments => {
            gate_cluster::list_reassignments(state, ctx, &mut body, version)?
        }
        ApiKey::WriteTxnMarkers => gate_cluster::write_txn_markers(state, ctx, &mut body, version)?,
        ApiKey::AddPartitionsToTxn => gate_txn::add_partitions(state, ctx, &mut body, version)?,
        ApiKey::AddOffsetsToTxn => gate_txn::add_offsets(state, ctx, &mut body, version)?,
        ApiKey::EndTxn => gate_txn::end_txn(state, ctx, &mut body, version)?,
        ApiKey::TxnOffsetCommit => gate_txn::txn_offset_commit(state, ctx, &mut body, version)?,
        _ => None,
    };
    refusal.transpose()
}

/// OffsetCommit: READ on the group; refused, every partition says so.
fn offset_commit(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    body: &mut Bytes,
    version: i16,
) -> anyhow::Result<Refusal> {
    let r = OffsetCommitRequest::decode(body, version)?;
    if authz::group(state, ctx, op::READ, &r.group_id) {
        return Ok(None);
    }
    let topics = r
        .topics
        .iter()
        .map(|t| {
            OffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_topic_id(t.topic_id)
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            OffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(codes::GROUP_AUTHORIZATION_FAILED)
                        })
                        .collect(),
                )
        })
        .collect();
    Ok(Some(encode(
        &OffsetCommitResponse::default().with_topics(topics),
        version,
    )))
}

/// OffsetFetch: DESCRIBE on the group (v8 asks for several: refused when all are).
fn offset_fetch(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    body: &mut Bytes,
    version: i16,
) -> anyhow::Result<Refusal> {
    let r = OffsetFetchRequest::decode(body, version)?;
    let denied = |g: &str| !authz::group(state, ctx, op::DESCRIBE, g);
    let code = codes::GROUP_AUTHORIZATION_FAILED;
    let response = if version >= 8 {
        if r.groups.is_empty() || !r.groups.iter().all(|g| denied(&g.group_id)) {
            return Ok(None);
        }
        OffsetFetchResponse::default().with_groups(
            r.groups
                .iter()
                .map(|g| {
                    OffsetFetchResponseGroup::default()
                        .with_group_id(g.group_id.clone())
                        .with_error_code(code)
                })
                .collect(),
        )
    } else if !denied(&r.group_id) {
        return Ok(None);
    } else if version >= 2 {
        OffsetFetchResponse::default().with_error_code(code)
    } else {
        // v1 has no top-level error: each requested partition carries it.
        let topics = r.topics.iter().flatten().map(|t| {
            OffsetFetchResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partition_indexes
                        .iter()
                        .map(|&p| {
                            OffsetFetchResponsePartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(-1)
                                .with_error_code(code)
                        })
                        .collect(),
                )
        });
        OffsetFetchResponse::default().with_topics(topics.collect())
    };
    Ok(Some(encode(&response, version)))
}
