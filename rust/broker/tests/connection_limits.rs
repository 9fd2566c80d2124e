//! `connections.max.idle.ms` over real sockets: an idle connection is closed, a frame
//! trickled in byte by byte is cut, and long-poll fetches are not disturbed.

mod common;

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Client, TestBroker};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafkalite_broker::net::Listener;
use kafkalite_broker::{Broker, BrokerConfig};

const IDLE_MS: u64 = 500;

/// A broker whose settings are parsed as a user's would be (TestBroker only keeps them).
fn start(idle_ms: u64) -> TestBroker {
    let dir = tempfile::tempdir().unwrap();
    let settings: BTreeMap<String, String> =
        BTreeMap::from([("connections.max.idle.ms".into(), idle_ms.to_string())]);
    let config = BrokerConfig {
        listeners: vec![Listener::plaintext(
            "PLAINTEXT",
            "127.0.0.1:0".parse().unwrap(),
        )],
        log_dirs: vec![dir.path().to_path_buf()],
        ..BrokerConfig::from_pairs(&settings).unwrap()
    };
    let broker = Broker::start(config, 2).unwrap();
    TestBroker {
        broker,
        dir,
        settings,
    }
}

/// Wait up to `limit` for the broker to close `stream`; how long that took, if it did.
fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut buf = [0u8; 64];
    while start.elapsed() < limit {
        match stream.read(&mut buf) {
            Ok(0) => return Some(start.elapsed()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Some(start.elapsed()),
        }
    }
    None
}

#[test]
fn an_idle_connection_is_closed_after_the_idle_time() {
    let b = start(IDLE_MS);
    let mut idle = TcpStream::connect(b.addr()).unwrap();
    let took = closed_within(&mut idle, Duration::from_secs(10)).expect("never closed");
    assert!(took >= Duration::from_millis(IDLE_MS - 50), "{took:?}");
    // Without the setting (Kafka's 10 minutes) the same connection stays open.
    let b = start(600_000);
    let mut idle = TcpStream::connect(b.addr()).unwrap();
    assert_eq!(closed_within(&mut idle, Duration::from_millis(1500)), None);
}

#[test]
fn a_frame_trickled_in_slowly_is_cut() {
    let b = start(IDLE_MS);
    let mut slow = TcpStream::connect(b.addr()).unwrap();
    // Claims 100 MB (within socket.request.max.bytes), then sends a byte every 50 ms:
    // never idle for long, but the frame is far from whole when its time is up.
    slow.write_all(&100_000_000i32.to_be_bytes()).unwrap();
    let start = Instant::now();
    let mut closed = None;
    while start.elapsed() < Duration::from_secs(10) {
        if slow.write_all(&[0]).is_err() {
            closed = Some(start.elapsed());
            break;
        }
        if closed_within(&mut slow, Duration::from_millis(50)).is_some() {
            closed = Some(start.elapsed());
            break;
        }
    }
    let took = closed.expect("a slow frame was never cut");
    assert!(
        took >= Duration::from_millis(IDLE_MS - 50) && took < Duration::from_secs(5),
        "{took:?}"
    );
    // Other clients are served all along.
    let mut c = Client::connect(b.addr());
    assert_eq!(fetch(&mut c, "absent", 0).responses.len(), 1);
}

fn fetch(c: &mut Client, topic: &str, max_wait_ms: i32) -> FetchResponse {
    let request = FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_string(topic.into())))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    c.call(ApiKey::Fetch, 11, &request)
}

#[test]
fn long_poll_fetches_keep_their_connection() {
    let b = start(IDLE_MS);
    b.create_topic("quiet", 1);
    let mut c = b.client();
    let start = Instant::now();
    // Back-to-back polls shorter than the idle time, for three idle times in all.
    while start.elapsed() < Duration::from_millis(3 * IDLE_MS) {
        let r = fetch(&mut c, "quiet", (IDLE_MS / 2) as i32);
        assert_eq!(r.responses[0].partitions[0].error_code, 0);
    }
    // The time a fetch waits in the broker is not idle time either.
    let r = fetch(&mut c, "quiet", (IDLE_MS * 2) as i32);
    assert_eq!(r.responses[0].partitions[0].error_code, 0);
}
