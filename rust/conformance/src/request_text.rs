//! A request frame as the codec reads it, for fuzz reports and triage: the decoded header
//! and body, or why they do not decode.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::Decodable;

/// The request in `frame` (header and body, no size) as the codec reads it at the
/// header's own key and version, or why it cannot.
#[must_use]
pub fn request_debug(frame: &[u8]) -> String {
    let (api, version, header, mut bytes) = match split(frame) {
        Ok(parts) => parts,
        Err(why) => return why,
    };
    let left = bytes.len();
    let body = match body_debug(api, &mut bytes, version) {
        Some(Ok(text)) if bytes.is_empty() => text,
        Some(Ok(text)) => format!("{text} (+{} trailing bytes)", bytes.len()),
        Some(Err(e)) => format!("body ({left} bytes) does not decode: {e}"),
        None => format!("body of {left} bytes (no request decoder listed)"),
    };
    format!("{api:?} v{version} corr {} {body}", header.correlation_id)
}

/// The frame's api, version, decoded header and the body after it, or why it has none.
fn split(frame: &[u8]) -> Result<(ApiKey, i16, RequestHeader, bytes::Bytes), String> {
    if frame.len() < 4 {
        return Err(format!(
            "{} bytes: shorter than api key and version",
            frame.len()
        ));
    }
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let api = ApiKey::try_from(key).map_err(|()| format!("unknown api key {key}"))?;
    let mut bytes = bytes::Bytes::copy_from_slice(frame);
    let header = RequestHeader::decode(&mut bytes, api.request_header_version(version))
        .map_err(|e| format!("{api:?} v{version}: header does not decode: {e}"))?;
    Ok((api, version, header, bytes))
}

fn body_debug(
    api: ApiKey,
    bytes: &mut bytes::Bytes,
    version: i16,
) -> Option<Result<String, String>> {
    fn render<T: Decodable + std::fmt::Debug>(
        bytes: &mut bytes::Bytes,
        version: i16,
    ) -> Option<Result<String, String>> {
        Some(
            T::decode(bytes, version)
                .map(|r| format!("{r:?}"))
                .map_err(|e| e.to_string()),
        )
    }
    match api {
        ApiKey::Produce => render::<ProduceRequest>(bytes, version),
        ApiKey::Fetch => render::<FetchRequest>(bytes, version),
        ApiKey::ListOffsets => render::<ListOffsetsRequest>(bytes, version),
        ApiKey::Metadata => render::<MetadataRequest>(bytes, version),
        ApiKey::OffsetCommit => render::<OffsetCommitRequest>(bytes, version),
        ApiKey::OffsetFetch => render::<OffsetFetchRequest>(bytes, version),
        ApiKey::FindCoordinator => render::<FindCoordinatorRequest>(bytes, version),
        ApiKey::JoinGroup => render::<JoinGroupRequest>(bytes, version),
        ApiKey::Heartbeat => render::<HeartbeatRequest>(bytes, version),
        ApiKey::LeaveGroup => render::<LeaveGroupRequest>(bytes, version),
        ApiKey::SyncGroup => render::<SyncGroupRequest>(bytes, version),
        ApiKey::DescribeGroups => render::<DescribeGroupsRequest>(bytes, version),
        ApiKey::ListGroups => render::<ListGroupsRequest>(bytes, version),
        ApiKey::ApiVersions => render::<ApiVersionsRequest>(bytes, version),
        ApiKey::CreateTopics => render::<CreateTopicsRequest>(bytes, version),
        ApiKey::DeleteTopics => render::<DeleteTopicsRequest>(bytes, version),
        ApiKey::DeleteRecords => render::<DeleteRecordsRequest>(bytes, version),
        ApiKey::InitProducerId => render::<InitProducerIdRequest>(bytes, version),
        ApiKey::OffsetForLeaderEpoch => render::<OffsetForLeaderEpochRequest>(bytes, version),
        ApiKey::DescribeConfigs => render::<DescribeConfigsRequest>(bytes, version),
        ApiKey::AlterConfigs => render::<AlterConfigsRequest>(bytes, version),
        ApiKey::CreatePartitions => render::<CreatePartitionsRequest>(bytes, version),
        ApiKey::IncrementalAlterConfigs => render::<IncrementalAlterConfigsRequest>(bytes, version),
        ApiKey::DescribeCluster => render::<DescribeClusterRequest>(bytes, version),
        ApiKey::DeleteGroups => render::<DeleteGroupsRequest>(bytes, version),
        ApiKey::OffsetDelete => render::<OffsetDeleteRequest>(bytes, version),
        ApiKey::DescribeProducers => render::<DescribeProducersRequest>(bytes, version),
        ApiKey::DescribeLogDirs => render::<DescribeLogDirsRequest>(bytes, version),
        ApiKey::DescribeTopicPartitions => render::<DescribeTopicPartitionsRequest>(bytes, version),
        _ => None,
    }
}

/// How many partitions `frame` asks a broker to create: a CreateTopics' topics (their
/// assignments where given, else `num_partitions`) or a CreatePartitions' new totals; 0 for
/// any other request or one that does not decode.
#[must_use]
pub fn partitions_asked(frame: &[u8]) -> u64 {
    let Ok((api, version, _, mut bytes)) = split(frame) else {
        return 0;
    };
    let count = |n: i32| u64::try_from(n).unwrap_or(0);
    match api {
        ApiKey::CreateTopics => CreateTopicsRequest::decode(&mut bytes, version)
            .map(|r| {
                r.topics
                    .iter()
                    .map(|t| {
                        if t.assignments.is_empty() {
                            count(t.num_partitions)
                        } else {
                            t.assignments.len() as u64
                        }
                    })
                    .sum()
            })
            .unwrap_or(0),
        ApiKey::CreatePartitions => CreatePartitionsRequest::decode(&mut bytes, version)
            .map(|r| r.topics.iter().map(|t| count(t.count)).sum())
            .unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::protocol::{Encodable, StrBytes};

    use super::*;

    fn frame<R: Encodable>(key: ApiKey, version: i16, request: &R) -> Vec<u8> {
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(1);
        let mut out = bytes::BytesMut::new();
        header
            .encode(&mut out, key.request_header_version(version))
            .unwrap();
        request.encode(&mut out, version).unwrap();
        out.to_vec()
    }

    #[test]
    fn partitions_asked_counts_create_topics_and_create_partitions() {
        let name = |n: &str| TopicName(StrBytes::from_string(n.into()));
        let topics = CreateTopicsRequest::default().with_topics(vec![
            CreatableTopic::default()
                .with_name(name("a"))
                .with_num_partitions(8193),
            CreatableTopic::default()
                .with_name(name("b"))
                .with_num_partitions(-1),
        ]);
        assert_eq!(
            partitions_asked(&frame(ApiKey::CreateTopics, 5, &topics)),
            8193
        );
        let grow =
            CreatePartitionsRequest::default().with_topics(vec![CreatePartitionsTopic::default()
                .with_name(name("a"))
                .with_count(768)]);
        assert_eq!(
            partitions_asked(&frame(ApiKey::CreatePartitions, 3, &grow)),
            768
        );
        assert_eq!(partitions_asked(&[0, 3]), 0);
    }
}
