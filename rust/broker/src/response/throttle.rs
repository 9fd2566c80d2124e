//! A throttle time written into a response already encoded. `request_percentage` is
//! measured over the handler's own work, so its throttle is known only once the response
//! is built; Kafka still reports it in `throttle_time_ms` (the larger of the byte-rate and
//! request throttles). Every response listed here starts with `throttle_time_ms` from the
//! version given; a test encodes each at every version to hold the table to the codec.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;

use super::{Piece, ResponseBody};

/// The first version of `key`'s response whose first field is `throttle_time_ms`; `None`
/// for responses without it in front (Produce has it after the partitions, ApiVersions
/// after the keys; the request quota exempts ApiVersions, and Produce reports its own).
#[must_use]
pub fn leading_from(key: ApiKey) -> Option<i16> {
    use ApiKey as K;
    Some(match key {
        K::Fetch | K::FindCoordinator | K::Heartbeat | K::LeaveGroup | K::SyncGroup => 1,
        K::DescribeGroups | K::ListGroups | K::DeleteTopics => 1,
        K::ListOffsets | K::JoinGroup | K::CreateTopics | K::OffsetForLeaderEpoch => 2,
        K::Metadata | K::OffsetCommit | K::OffsetFetch => 3,
        K::DeleteRecords
        | K::InitProducerId
        | K::AddPartitionsToTxn
        | K::AddOffsetsToTxn
        | K::EndTxn
        | K::TxnOffsetCommit
        | K::DescribeAcls
        | K::CreateAcls
        | K::DeleteAcls
        | K::DescribeConfigs
        | K::AlterConfigs
        | K::AlterReplicaLogDirs
        | K::DescribeLogDirs
        | K::CreatePartitions
        | K::DeleteGroups
        | K::ElectLeaders
        | K::IncrementalAlterConfigs
        | K::AlterPartitionReassignments
        | K::ListPartitionReassignments
        | K::DescribeClientQuotas
        | K::AlterClientQuotas
        | K::DescribeUserScramCredentials
        | K::AlterUserScramCredentials
        | K::DescribeCluster
        | K::DescribeProducers
        | K::DescribeTransactions
        | K::ListTransactions
        | K::DescribeTopicPartitions
        | K::UpdateFeatures => 0,
        _ => return None,
    })
}

/// Raise the `throttle_time_ms` of `body` (a `key` response at `version`) to at least
/// `ms`; responses without the field in front are left as they are.
pub fn raise(body: &mut ResponseBody, key: ApiKey, version: i16, ms: i32) {
    if ms <= 0 || leading_from(key).is_none_or(|from| version < from) {
        return;
    }
    let raised = |head: &[u8]| -> Option<[u8; 4]> {
        let current = i32::from_be_bytes(head.get(..4)?.try_into().ok()?);
        (ms > current).then(|| ms.to_be_bytes())
    };
    match body {
        ResponseBody::Encoded(buf) => {
            if let Some(bytes) = raised(buf) {
                buf[..4].copy_from_slice(&bytes);
            }
        }
        ResponseBody::Pieces(pieces) => {
            if let Some(Piece::Bytes(first)) = pieces.first_mut() {
                if let Some(bytes) = raised(first) {
                    let mut copy = BytesMut::from(&first[..]);
                    copy[..4].copy_from_slice(&bytes);
                    *first = Bytes::from(copy);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::{Encodable, Message};

    const MARK: i32 = 0x1234_5678;

    /// Whether `key`'s response at each version the codec knows starts with the throttle
    /// time exactly when the table says so.
    macro_rules! check {
        ($($key:ident => $response:ty),* $(,)?) => {$(
            for version in <$response>::VERSIONS.min..=<$response>::VERSIONS.max {
                let mut message = <$response>::default();
                message.throttle_time_ms = MARK;
                let mut buf = BytesMut::new();
                message.encode(&mut buf, version).unwrap();
                let leading = buf.len() >= 4 && buf[..4] == MARK.to_be_bytes();
                let listed = leading_from(ApiKey::$key).is_some_and(|from| version >= from);
                assert_eq!(leading, listed, "{:?} v{version}", ApiKey::$key);
                let mut body = ResponseBody::Encoded(buf);
                raise(&mut body, ApiKey::$key, version, MARK + 1);
                let ResponseBody::Encoded(buf) = body else { unreachable!() };
                let raised = buf.len() >= 4 && buf[..4] == (MARK + 1).to_be_bytes();
                assert_eq!(raised, listed, "{:?} v{version}", ApiKey::$key);
            }
        )*};
    }

    #[test]
    fn the_table_matches_the_codec() {
        check!(
            Produce => ProduceResponse,
            Fetch => FetchResponse,
            ListOffsets => ListOffsetsResponse,
            Metadata => MetadataResponse,
            OffsetCommit => OffsetCommitResponse,
            OffsetFetch => OffsetFetchResponse,
            FindCoordinator => FindCoordinatorResponse,
            JoinGroup => JoinGroupResponse,
            Heartbeat => HeartbeatResponse,
            LeaveGroup => LeaveGroupResponse,
            SyncGroup => SyncGroupResponse,
            DescribeGroups => DescribeGroupsResponse,
            ListGroups => ListGroupsResponse,
            ApiVersions => ApiVersionsResponse,
            CreateTopics => CreateTopicsResponse,
            DeleteTopics => DeleteTopicsResponse,
            DeleteRecords => DeleteRecordsResponse,
            InitProducerId => InitProducerIdResponse,
            OffsetForLeaderEpoch => OffsetForLeaderEpochResponse,
            AddPartitionsToTxn => AddPartitionsToTxnResponse,
            AddOffsetsToTxn => AddOffsetsToTxnResponse,
            EndTxn => EndTxnResponse,
            TxnOffsetCommit => TxnOffsetCommitResponse,
            DescribeAcls => DescribeAclsResponse,
            CreateAcls => CreateAclsResponse,
            DeleteAcls => DeleteAclsResponse,
            DescribeConfigs => DescribeConfigsResponse,
            AlterConfigs => AlterConfigsResponse,
            AlterReplicaLogDirs => AlterReplicaLogDirsResponse,
            DescribeLogDirs => DescribeLogDirsResponse,
            CreatePartitions => CreatePartitionsResponse,
            DeleteGroups => DeleteGroupsResponse,
            ElectLeaders => ElectLeadersResponse,
            IncrementalAlterConfigs => IncrementalAlterConfigsResponse,
            AlterPartitionReassignments => AlterPartitionReassignmentsResponse,
            ListPartitionReassignments => ListPartitionReassignmentsResponse,
            OffsetDelete => OffsetDeleteResponse,
            DescribeClientQuotas => DescribeClientQuotasResponse,
            AlterClientQuotas => AlterClientQuotasResponse,
            DescribeUserScramCredentials => DescribeUserScramCredentialsResponse,
            AlterUserScramCredentials => AlterUserScramCredentialsResponse,
            DescribeCluster => DescribeClusterResponse,
            DescribeProducers => DescribeProducersResponse,
            DescribeTransactions => DescribeTransactionsResponse,
            ListTransactions => ListTransactionsResponse,
            DescribeTopicPartitions => DescribeTopicPartitionsResponse,
            UpdateFeatures => UpdateFeaturesResponse,
        );
    }

    #[test]
    fn a_smaller_throttle_is_kept_and_zero_changes_nothing() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&500_i32.to_be_bytes());
        let mut body = ResponseBody::Encoded(buf);
        raise(&mut body, ApiKey::Metadata, 12, 200);
        raise(&mut body, ApiKey::Metadata, 12, 0);
        let ResponseBody::Encoded(buf) = body else {
            unreachable!()
        };
        assert_eq!(buf[..4], 500_i32.to_be_bytes());
    }
}
