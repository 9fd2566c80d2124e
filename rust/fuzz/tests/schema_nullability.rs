//! Fields Kafka's schemas make nullable only from some version on. Kafka's generated
//! readers refuse a null before that version (and close the connection); the vendored
//! codec (rust/vendor/kafka-protocol, lines marked `kafkalite:`) refuses it the same way.
//! Found by the conformance fuzzer: an OffsetFetch v1 with null topics was answered with
//! every committed offset where Kafka closed the connection.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{MetadataRequest, OffsetFetchRequest};
use kafka_protocol::protocol::Decodable;

fn string(buf: &mut BytesMut, s: &str) {
    buf.put_i16(i16::try_from(s.len()).expect("short string"));
    buf.put_slice(s.as_bytes());
}

/// OffsetFetch v1–v5 body: group id, then the topics array (`-1` is null).
fn offset_fetch_body(topics_len: i32) -> Bytes {
    let mut b = BytesMut::new();
    string(&mut b, "g");
    b.put_i32(topics_len);
    b.freeze()
}

#[test]
fn offset_fetch_null_topics_is_refused_in_v1_and_means_all_topics_after() {
    for version in 1..2 {
        let err = OffsetFetchRequest::decode(&mut offset_fetch_body(-1), version)
            .expect_err("null topics must not decode before v2");
        assert!(err.to_string().contains("topics"), "{err}");
    }
    for version in 2..6 {
        let req = OffsetFetchRequest::decode(&mut offset_fetch_body(-1), version)
            .expect("null topics from v2");
        assert!(req.topics.is_none());
    }
    let req = OffsetFetchRequest::decode(&mut offset_fetch_body(0), 1).expect("empty array");
    assert_eq!(req.topics.map(|t| t.len()), Some(0));
}

#[test]
fn metadata_null_topics_is_refused_in_v0_only() {
    let mut null_topics = BytesMut::new();
    null_topics.put_i32(-1);
    let err = MetadataRequest::decode(&mut null_topics.clone().freeze(), 0)
        .expect_err("null topics must not decode in v0");
    assert!(err.to_string().contains("topics"), "{err}");
    let req = MetadataRequest::decode(&mut null_topics.freeze(), 1).expect("null topics in v1");
    assert!(req.topics.is_none());
}

#[test]
fn metadata_null_topic_name_is_refused_before_v10() {
    // v1: one topic whose name is the null string (length -1).
    let mut v1 = BytesMut::new();
    v1.put_i32(1);
    v1.put_i16(-1);
    let err = MetadataRequest::decode(&mut v1.freeze(), 1)
        .expect_err("a null topic name must not decode before v10");
    assert!(err.to_string().contains("name"), "{err}");

    // v10 (flexible): topics compact array of one, a topic id, a null compact name, no
    // tagged fields; then allow_auto_topic_creation, include_topic_authorized_operations
    // and the request's own empty tagged fields.
    let mut v10 = BytesMut::new();
    v10.put_u8(2);
    v10.put_slice(&[7u8; 16]);
    v10.put_u8(0);
    v10.put_u8(0);
    v10.put_u8(0);
    v10.put_u8(0);
    v10.put_u8(0);
    v10.put_u8(0);
    let req = MetadataRequest::decode(&mut v10.freeze(), 10).expect("a topic by id from v10");
    let topics = req.topics.expect("one topic");
    assert_eq!(topics.len(), 1);
    assert!(topics[0].name.is_none());
}
