//! The Kafka 4.4.0 versions added by hand to the vendored codec (rust/vendor/kafka-protocol,
//! README.kafkalite.md): each new field sits where Kafka 4.4.0's schema puts it, bodies
//! written byte by byte from the schema decode, and what the codec encodes decodes back.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_log_dirs_response::DescribeLogDirsResult;
use kafka_protocol::messages::offset_commit_request::OffsetCommitRequestTopic;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequestTopic;
use kafka_protocol::messages::txn_offset_commit_response::TxnOffsetCommitResponseTopic;
use kafka_protocol::messages::write_txn_markers_request::WritableTxnMarker;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, DeleteGroupsResponse, DescribeLogDirsResponse, ListOffsetsRequest,
    OffsetCommitRequest, OffsetFetchRequest, TopicName, TxnOffsetCommitRequest,
    TxnOffsetCommitResponse, WriteTxnMarkersRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable, Message, StrBytes};
use uuid::Uuid;

const ID: Uuid = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);

fn encoded<T: Encodable>(m: &T, version: i16) -> Bytes {
    let mut b = BytesMut::new();
    m.encode(&mut b, version).expect("encodes");
    assert_eq!(
        b.len(),
        m.compute_size(version).expect("sized"),
        "size of v{version}"
    );
    b.freeze()
}

fn compact(b: &mut BytesMut, s: &str) {
    b.put_u8(u8::try_from(s.len() + 1).expect("short"));
    b.put_slice(s.as_bytes());
}

#[test]
fn the_new_versions_are_kafka_4_4s() {
    for (key, max) in [
        (ApiKey::ApiVersions, 5),
        (ApiKey::DeleteGroups, 3),
        (ApiKey::DescribeLogDirs, 5),
        (ApiKey::ListOffsets, 11),
        (ApiKey::OffsetCommit, 10),
        (ApiKey::OffsetFetch, 10),
        (ApiKey::TxnOffsetCommit, 6),
        (ApiKey::WriteTxnMarkers, 2),
    ] {
        assert_eq!(key.valid_versions().max, max, "{key:?}");
    }
    assert_eq!(ApiVersionsRequest::VERSIONS.max, 5);
    assert_eq!(ListOffsetsRequest::VERSIONS.max, 11);
    assert_eq!(WriteTxnMarkersRequest::VERSIONS.min, 1);
}

#[test]
fn api_versions_v5_carries_the_cluster_and_node_after_the_software() {
    let mut b = BytesMut::new();
    compact(&mut b, "java");
    compact(&mut b, "4.4.0");
    compact(&mut b, "abc");
    b.put_i32(7);
    b.put_u8(0); // no tagged fields
    let r = ApiVersionsRequest::decode(&mut b.clone().freeze(), 5).expect("v5 decodes");
    assert_eq!(r.cluster_id.as_deref(), Some("abc"));
    assert_eq!(r.node_id, 7);
    assert_eq!(encoded(&r, 5), b.freeze());
    // Below v5 neither is on the wire, and they read as Kafka's defaults.
    let v4 = encoded(&r, 4);
    let back = ApiVersionsRequest::decode(&mut v4.clone(), 4).expect("v4 decodes");
    assert_eq!((back.cluster_id, back.node_id), (None, -1));
    // A null cluster id is a compact string of length 0.
    let null = ApiVersionsRequest::default();
    assert_eq!(&encoded(&null, 5)[2..], &[0, 0xff, 0xff, 0xff, 0xff, 0][..]);
}

#[test]
fn offset_commit_and_fetch_v10_name_topics_by_id() {
    let topic = || {
        OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_topic_id(ID)
    };
    let r = OffsetCommitRequest::default().with_topics(vec![topic()]);
    let v10 = encoded(&r, 10);
    let back = OffsetCommitRequest::decode(&mut v10.clone(), 10).expect("v10");
    assert_eq!(back.topics[0].topic_id, ID);
    assert_eq!(back.topics[0].name.as_str(), "", "v10 has no topic name");
    // The id replaces the name: 16 bytes where v9 wrote the compact name "t" (2 bytes).
    assert_eq!(v10.len(), encoded(&r, 9).len() + 14);
    let v9 = OffsetCommitRequest::decode(&mut encoded(&r, 9), 9).expect("v9");
    assert_eq!(
        (v9.topics[0].name.as_str(), v9.topics[0].topic_id),
        ("t", Uuid::nil())
    );

    let fetch = OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
        .with_topics(Some(vec![OffsetFetchRequestTopics::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_topic_id(ID)
            .with_partition_indexes(vec![0, 1])]))]);
    let back = OffsetFetchRequest::decode(&mut encoded(&fetch, 10), 10).expect("v10");
    let t = &back.groups[0].topics.as_ref().expect("topics")[0];
    assert_eq!(
        (t.name.as_str(), t.topic_id, t.partition_indexes.clone()),
        ("", ID, vec![0, 1])
    );
    let back = OffsetFetchRequest::decode(&mut encoded(&fetch, 9), 9).expect("v9");
    let t = &back.groups[0].topics.as_ref().expect("topics")[0];
    assert_eq!((t.name.as_str(), t.topic_id), ("t", Uuid::nil()));
}

#[test]
fn txn_offset_commit_v6_names_topics_by_id() {
    let r =
        TxnOffsetCommitRequest::default().with_topics(vec![TxnOffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_topic_id(ID)]);
    let back = TxnOffsetCommitRequest::decode(&mut encoded(&r, 6), 6).expect("v6");
    assert_eq!(
        (back.topics[0].name.as_str(), back.topics[0].topic_id),
        ("", ID)
    );
    let back = TxnOffsetCommitRequest::decode(&mut encoded(&r, 5), 5).expect("v5");
    assert_eq!(
        (back.topics[0].name.as_str(), back.topics[0].topic_id),
        ("t", Uuid::nil())
    );
    let back = TxnOffsetCommitRequest::decode(&mut encoded(&r, 2), 2).expect("v2");
    assert_eq!(back.topics[0].name.as_str(), "t");

    let answer = TxnOffsetCommitResponse::default().with_topics(vec![
        TxnOffsetCommitResponseTopic::default().with_topic_id(ID),
    ]);
    let back = TxnOffsetCommitResponse::decode(&mut encoded(&answer, 6), 6).expect("v6");
    assert_eq!(back.topics[0].topic_id, ID);
}

#[test]
fn write_txn_markers_v2_ends_a_marker_with_its_transaction_version() {
    let r = WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
        .with_producer_epoch(3)
        .with_coordinator_epoch(9)
        .with_transaction_version(2)]);
    let v2 = encoded(&r, 2);
    // markers (compact array of 1), producer id, epoch, result, topics (empty), coordinator
    // epoch, then the transaction version, then the marker's and the request's tags.
    let mut want = BytesMut::new();
    want.put_u8(2);
    want.put_i64(0);
    want.put_i16(3);
    want.put_u8(0);
    want.put_u8(1);
    want.put_i32(9);
    want.put_i8(2);
    want.put_u8(0);
    want.put_u8(0);
    assert_eq!(v2, want.freeze());
    let back = WriteTxnMarkersRequest::decode(&mut v2.clone(), 2).expect("v2");
    assert_eq!(back.markers[0].transaction_version, 2);
    let v1 = WriteTxnMarkersRequest::decode(&mut encoded(&r, 1), 1).expect("v1");
    assert_eq!(v1.markers[0].transaction_version, 0);
}

#[test]
fn delete_groups_v3_and_describe_log_dirs_v5_answer_their_new_fields() {
    let r = DeleteGroupsResponse::default().with_results(vec![DeletableGroupResult::default()
        .with_error_code(69)
        .with_error_message(Some(StrBytes::from_static_str("gone")))]);
    let back = DeleteGroupsResponse::decode(&mut encoded(&r, 3), 3).expect("v3");
    assert_eq!(back.results[0].error_message.as_deref(), Some("gone"));
    let back = DeleteGroupsResponse::decode(&mut encoded(&r, 2), 2).expect("v2");
    assert_eq!(back.results[0].error_message, None);

    let r = DescribeLogDirsResponse::default()
        .with_results(vec![DescribeLogDirsResult::default().with_is_cordoned(true)]);
    let v5 = encoded(&r, 5);
    assert_eq!(v5.len(), encoded(&r, 4).len() + 1, "one boolean more");
    let back = DescribeLogDirsResponse::decode(&mut v5.clone(), 5).expect("v5");
    assert!(back.results[0].is_cordoned);
    let back = DescribeLogDirsResponse::decode(&mut encoded(&r, 4), 4).expect("v4");
    assert!(!back.results[0].is_cordoned);
}
