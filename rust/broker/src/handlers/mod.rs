//! One module per API family. `dispatch` decodes the request body at the negotiated version
//! and calls the handler; `SUPPORTED` is exactly what ApiVersions advertises. Every handler
//! gets the request's `RequestContext` (who is asking, through which listener).
//!
//! A handler returns `Ok(None)` when no response is due (Produce with acks=0) and `Err`
//! only for a request that cannot be answered at all, which closes the connection.

pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod alter_client_quotas;
pub mod alter_configs;
pub mod alter_replica_log_dirs;
pub mod alter_share_group_offsets;
pub mod alter_user_scram_credentials;
pub mod api_versions;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod create_acls;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_acls;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_share_group_offsets;
pub mod delete_topics;
pub mod describe_acls;
pub mod describe_client_quotas;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_quorum;
pub mod describe_share_group_offsets;
pub mod describe_topic_partitions;
pub mod describe_transactions;
pub mod describe_user_scram_credentials;
pub mod elect_leaders;
pub mod end_txn;
pub mod fetch;
pub mod find_coordinator;
pub mod get_telemetry_subscriptions;
pub mod heartbeat;
pub mod incremental_alter_configs;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_config_resources;
pub mod list_groups;
pub mod list_offsets;
pub mod list_transactions;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod partition_reassignments;
pub mod produce;
pub mod push_telemetry;
pub mod sasl;
pub mod share_acknowledge;
mod share_common;
pub mod share_fetch;
pub mod share_group_describe;
pub mod share_group_heartbeat;
pub mod share_group_state;
mod supported;
pub mod sync_group;
pub mod txn_offset_commit;
pub mod update_features;
pub mod write_txn_markers;

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader};

pub use supported::{supported_range, SUPPORTED};

use crate::net::RequestContext;
use crate::response::ResponseBody;
use crate::state::BrokerState;

/// Decode and handle one request whose header has been read (`body` is what follows it).
pub async fn dispatch(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    header: &RequestHeader,
    key: ApiKey,
    body: Bytes,
) -> anyhow::Result<Option<ResponseBody>> {
    let version = header.request_api_version;
    if let Some(refusal) = crate::security::gate::refuse(state, ctx, key, &body, version)? {
        return Ok(Some(refusal));
    }
    match key {
        ApiKey::ApiVersions => api_versions::handle(state, ctx, header, body, version).map(Some),
        ApiKey::Metadata => metadata::handle(state, ctx, header, body, version).await,
        ApiKey::CreateTopics => create_topics::handle(state, ctx, header, body, version).await,
        ApiKey::DeleteTopics => delete_topics::handle(state, ctx, header, body, version).await,
        ApiKey::CreatePartitions => {
            create_partitions::handle(state, ctx, header, body, version).await
        }
        ApiKey::DescribeConfigs => {
            describe_configs::handle(state, ctx, header, body, version).await
        }
        ApiKey::AlterConfigs => alter_configs::handle(state, ctx, header, body, version).await,
        ApiKey::IncrementalAlterConfigs => {
            incremental_alter_configs::handle(state, ctx, header, body, version).await
        }
        ApiKey::DescribeCluster => {
            describe_cluster::handle(state, ctx, header, body, version).await
        }
        ApiKey::Produce => produce::handle(state, ctx, header, body, version).await,
        ApiKey::UpdateFeatures => update_features::handle(state, ctx, header, body, version).await,
        ApiKey::DescribeTopicPartitions => {
            describe_topic_partitions::handle(state, ctx, header, body, version).await
        }
        ApiKey::DescribeQuorum => describe_quorum::handle(state, ctx, header, body, version).await,
        ApiKey::Fetch => fetch::handle(state, ctx, header, body, version).await,
        ApiKey::ListOffsets => list_offsets::handle(state, ctx, header, body, version).await,
        ApiKey::InitProducerId => init_producer_id::handle(state, ctx, header, body, version).await,
        ApiKey::FindCoordinator => {
            find_coordinator::handle(state, ctx, header, body, version).await
        }
        ApiKey::OffsetCommit => offset_commit::handle(state, ctx, header, body, version).await,
        ApiKey::OffsetFetch => offset_fetch::handle(state, ctx, header, body, version).await,
        ApiKey::OffsetForLeaderEpoch => {
            offset_for_leader_epoch::handle(state, ctx, header, body, version).await
        }
        ApiKey::JoinGroup => join_group::handle(state, ctx, header, body, version).await,
        ApiKey::SyncGroup => sync_group::handle(state, ctx, header, body, version).await,
        ApiKey::Heartbeat => heartbeat::handle(state, ctx, header, body, version).await,
        ApiKey::LeaveGroup => leave_group::handle(state, ctx, header, body, version).await,
        ApiKey::DescribeGroups => describe_groups::handle(state, ctx, header, body, version).await,
        ApiKey::ListGroups => list_groups::handle(state, ctx, header, body, version).await,
        ApiKey::DeleteGroups => delete_groups::handle(state, ctx, header, body, version).await,
        ApiKey::ConsumerGroupHeartbeat => {
            consumer_group_heartbeat::handle(state, ctx, header, body, version).await
        }
        ApiKey::ConsumerGroupDescribe => {
            consumer_group_describe::handle(state, ctx, header, body, version).await
        }
        ApiKey::OffsetDelete => offset_delete::handle(state, ctx, header, body, version).await,
        ApiKey::AlterReplicaLogDirs => {
            alter_replica_log_dirs::handle(state, ctx, header, body, version).await
        }
        ApiKey::DescribeLogDirs => {
            describe_log_dirs::handle(state, ctx, header, body, version).await
        }
        ApiKey::ElectLeaders => elect_leaders::handle(state, ctx, header, body, version).await,
        ApiKey::AlterPartitionReassignments => {
            partition_reassignments::alter(state, ctx, header, body, version).await
        }
        ApiKey::ListPartitionReassignments => {
            partition_reassignments::list(state, ctx, header, body, version).await
        }
        ApiKey::DescribeUserScramCredentials => {
            describe_user_scram_credentials::handle(state, ctx, header, body, version).await
        }
        ApiKey::AlterUserScramCredentials => {
            alter_user_scram_credentials::handle(state, ctx, header, body, version).await
        }
        ApiKey::CreateAcls => create_acls::handle(state, ctx, header, body, version).await,
        ApiKey::DescribeAcls => describe_acls::handle(state, ctx, header, body, version).await,
        ApiKey::DeleteAcls => delete_acls::handle(state, ctx, header, body, version).await,
        ApiKey::SaslHandshake | ApiKey::SaslAuthenticate => {
            sasl::out_of_place(key, version).map(Some)
        }
        ApiKey::DeleteRecords => delete_records::handle(state, ctx, header, body, version).await,
        ApiKey::AddPartitionsToTxn => {
            add_partitions_to_txn::handle(state, ctx, header, body, version).await
        }
        ApiKey::AddOffsetsToTxn => {
            add_offsets_to_txn::handle(state, ctx, header, body, version).await
        }
        ApiKey::EndTxn => end_txn::handle(state, ctx, header, body, version).await,
        ApiKey::WriteTxnMarkers => {
            write_txn_markers::handle(state, ctx, header, body, version).await
        }
        ApiKey::TxnOffsetCommit => {
            txn_offset_commit::handle(state, ctx, header, body, version).await
        }
        ApiKey::DescribeProducers => {
            describe_producers::handle(state, ctx, header, body, version).await
        }
        ApiKey::DescribeTransactions => {
            describe_transactions::handle(state, ctx, header, body, version).await
        }
        ApiKey::ListTransactions => {
            list_transactions::handle(state, ctx, header, body, version).await
        }
        ApiKey::DescribeClientQuotas => {
            describe_client_quotas::handle(state, ctx, header, body, version).await
        }
        ApiKey::AlterClientQuotas => {
            alter_client_quotas::handle(state, ctx, header, body, version).await
        }
        ApiKey::GetTelemetrySubscriptions => {
            get_telemetry_subscriptions::handle(state, ctx, header, body, version).await
        }
        ApiKey::PushTelemetry => push_telemetry::handle(state, ctx, header, body, version).await,
        ApiKey::ListConfigResources => {
            list_config_resources::handle(state, ctx, header, body, version).await
        }
        ApiKey::ShareGroupHeartbeat => {
            share_group_heartbeat::handle(state, ctx, header, body, version).await
        }
        ApiKey::ShareGroupDescribe => {
            share_group_describe::handle(state, ctx, header, body, version).await
        }
        ApiKey::AlterShareGroupOffsets => {
            alter_share_group_offsets::handle(state, ctx, header, body, version).await
        }
        ApiKey::DeleteShareGroupOffsets => {
            delete_share_group_offsets::handle(state, ctx, header, body, version).await
        }
        ApiKey::DescribeShareGroupOffsets => {
            describe_share_group_offsets::handle(state, ctx, header, body, version).await
        }
        ApiKey::InitializeShareGroupState
        | ApiKey::ReadShareGroupState
        | ApiKey::WriteShareGroupState
        | ApiKey::DeleteShareGroupState
        | ApiKey::ReadShareGroupStateSummary => {
            share_group_state::handle(state, ctx, header, body, version).await
        }
        ApiKey::ShareFetch => share_fetch::handle(state, ctx, header, body, version).await,
        ApiKey::ShareAcknowledge => {
            share_acknowledge::handle(state, ctx, header, body, version).await
        }
        other => anyhow::bail!("no handler for {other:?}"),
    }
}
