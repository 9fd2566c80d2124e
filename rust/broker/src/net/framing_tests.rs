use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{Encodable, StrBytes};
use tokio::io::AsyncWriteExt;

use super::*;

fn frame(key: ApiKey, version: i16, client_id: Option<&'static str>) -> Bytes {
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(42)
        .with_client_id(client_id.map(StrBytes::from_static_str));
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, key.request_header_version(version))
        .unwrap();
    buf.put_slice(b"body");
    buf.freeze()
}

#[test]
fn frame_sizes_are_bounded_before_reading() {
    assert_eq!(check_frame_size(4, 100).unwrap(), 4);
    assert_eq!(check_frame_size(100, 100).unwrap(), 100);
    for size in [-1, 0, 3, 101, i32::MAX] {
        let e = check_frame_size(size, 100).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("frame of {size} bytes is outside [4, 100]")
        );
    }
}

#[tokio::test]
async fn read_frame_takes_exactly_one_frame_as_it_trickles_in() {
    let (mut client, mut server) = tokio::io::duplex(64);
    let sender = tokio::spawn(async move {
        let payload: Vec<u8> = (0..3000u32).map(|i| (i % 256) as u8).collect();
        for chunk in payload.chunks(100) {
            client.write_all(chunk).await.unwrap();
            tokio::task::yield_now().await;
        }
        client.write_all(b"next").await.unwrap();
        client
    });
    let first = read_frame(&mut server, 3000).await.unwrap();
    assert_eq!(first.len(), 3000);
    assert!(first.iter().enumerate().all(|(i, b)| *b == (i % 256) as u8));
    // The next frame's bytes were left in the stream.
    let next = read_frame(&mut server, 4).await.unwrap();
    assert_eq!(&next[..], b"next");
    drop(sender.await.unwrap());
}

#[tokio::test]
async fn read_frame_fails_when_the_peer_stops_early() {
    let (mut client, mut server) = tokio::io::duplex(64);
    client.write_all(b"abc").await.unwrap();
    drop(client);
    let e = read_frame(&mut server, 10).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
}

#[test]
fn parse_request_reads_the_header_and_leaves_the_body() {
    let Parsed::Request(r) = parse_request(frame(ApiKey::Metadata, 12, Some("app"))).unwrap()
    else {
        panic!("expected a request");
    };
    assert_eq!(r.key, ApiKey::Metadata);
    assert_eq!(r.header.correlation_id, 42);
    assert_eq!(r.header.client_id.as_deref(), Some("app"));
    assert_eq!(&r.body[..], b"body");
    assert_eq!(r.response_header_version(), 1);
}

#[test]
fn an_unknown_api_versions_version_gets_the_v0_fallback() {
    match parse_request(frame(ApiKey::ApiVersions, 3, None)).unwrap() {
        Parsed::Request(r) => assert_eq!(r.header.request_api_version, 3),
        Parsed::ApiVersionsFallback { .. } => panic!("v3 is supported"),
    }
    let mut raw = BytesMut::new();
    raw.put_i16(ApiKey::ApiVersions as i16);
    raw.put_i16(99);
    raw.put_i32(7);
    match parse_request(raw.freeze()).unwrap() {
        Parsed::ApiVersionsFallback { correlation_id } => assert_eq!(correlation_id, 7),
        Parsed::Request(_) => panic!("v99 is not supported"),
    }
}

#[test]
fn unknown_apis_versions_and_short_headers_are_errors() {
    let e = parse_request(Bytes::from_static(&[0, 0, 0])).unwrap_err();
    assert_eq!(e.to_string(), "request shorter than a header");
    let e = parse_request(Bytes::from_static(&[0x7f, 0, 0, 0, 0, 0, 0, 1])).unwrap_err();
    assert!(e.to_string().starts_with("unknown api key"), "{e}");
    // Past the highest version served (Produce v0-2 are advertised, as Kafka 4 does, and
    // refused by the handler instead).
    let e = parse_request(frame(ApiKey::Produce, 14, None)).unwrap_err();
    assert_eq!(e.to_string(), "unsupported version 14 of Produce");
}
