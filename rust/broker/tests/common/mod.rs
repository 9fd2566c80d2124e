//! What the broker's socket tests share: a broker on a loopback port with its own data
//! dir (`TestBroker`), and a raw Kafka client: one connection, requests encoded with
//! `kafka-protocol`, responses checked for their correlation id and decoded whole. Each
//! test file adds its own helpers in `impl TestBroker` / `impl Client` blocks.

#![allow(dead_code)] // Not every test file uses every helper.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafkalite_broker::net::Listener;
use kafkalite_broker::{Broker, BrokerConfig};

/// A broker listening on 127.0.0.1 (any port) with a temporary data dir; `settings` are
/// broker properties, kept across `restart` (and changeable before one).
pub struct TestBroker {
    pub broker: Broker,
    pub dir: tempfile::TempDir,
    pub settings: BTreeMap<String, String>,
}

impl TestBroker {
    pub fn start(settings: &[(&str, &str)]) -> TestBroker {
        Self::start_listening(settings, &["PLAINTEXT"])
    }

    /// With one listener of each name, each on its own loopback port.
    pub fn start_listening(settings: &[(&str, &str)], listeners: &[&str]) -> TestBroker {
        let dir = tempfile::tempdir().unwrap();
        let settings = settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let listeners = listeners
            .iter()
            .map(|name| Listener::plaintext(name, "127.0.0.1:0".parse().unwrap()))
            .collect();
        let config = BrokerConfig {
            listeners,
            ..config_for(dir.path(), &settings)
        };
        let broker = Broker::start(config, 2).unwrap();
        TestBroker {
            broker,
            dir,
            settings,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.broker.addresses()[0].1
    }

    pub fn client(&self) -> Client {
        Client::connect(self.addr())
    }

    /// The bound address of the listener called `name`.
    pub fn listener_addr(&self, name: &str) -> SocketAddr {
        let (_, addr) = self
            .broker
            .addresses()
            .iter()
            .find(|(n, _)| n == name)
            .unwrap();
        *addr
    }

    pub fn create_topic(&self, name: &str, partitions: i32) {
        self.broker
            .state()
            .create_topic(name, partitions, BTreeMap::new(), false)
            .unwrap();
    }

    /// Shut down cleanly and start again on the same data dir.
    pub fn restart(self) -> TestBroker {
        let TestBroker {
            mut broker,
            dir,
            settings,
        } = self;
        broker.shutdown().unwrap();
        drop(broker);
        let broker = Broker::start(config_for(dir.path(), &settings), 2).unwrap();
        TestBroker {
            broker,
            dir,
            settings,
        }
    }
}

fn config_for(dir: &std::path::Path, settings: &BTreeMap<String, String>) -> BrokerConfig {
    BrokerConfig {
        listeners: vec![Listener::plaintext(
            "PLAINTEXT",
            "127.0.0.1:0".parse().unwrap(),
        )],
        log_dirs: vec![dir.to_path_buf()],
        raw: settings.clone(),
        ..BrokerConfig::default()
    }
}

pub struct Client {
    pub stream: TcpStream,
    pub correlation: i32,
    /// Sent in every request header.
    pub client_id: &'static str,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        Self::with_stream(TcpStream::connect(addr).unwrap())
    }

    /// Connect from `local_ip` (any loopback address works on Linux), so the broker sees a
    /// peer other than 127.0.0.1.
    pub fn connect_from(addr: SocketAddr, local_ip: &str) -> Client {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let stream = runtime.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket
                .bind(SocketAddr::new(local_ip.parse().unwrap(), 0))
                .unwrap();
            socket.connect(addr).await.unwrap()
        });
        let stream = stream.into_std().unwrap();
        stream.set_nonblocking(false).unwrap();
        Self::with_stream(stream)
    }

    fn with_stream(stream: TcpStream) -> Client {
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Client {
            stream,
            correlation: 0,
            client_id: "kafkalite-broker-test",
        }
    }

    /// Send one request; returns its correlation id.
    pub fn send_raw<R: Encodable>(&mut self, key: ApiKey, version: i16, request: &R) -> i32 {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str(self.client_id)));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, key.request_header_version(version))
            .unwrap();
        request.encode(&mut body, version).unwrap();
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        self.stream.write_all(&frame).unwrap();
        self.correlation
    }

    /// The body of the next response, which must answer `correlation`.
    pub fn receive(&mut self, key: ApiKey, version: i16, correlation: i32) -> Bytes {
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).unwrap();
        let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
        self.stream.read_exact(&mut frame).unwrap();
        let mut frame = Bytes::from(frame);
        let header =
            ResponseHeader::decode(&mut frame, key.response_header_version(version)).unwrap();
        assert_eq!(header.correlation_id, correlation);
        frame
    }

    /// Send and decode the answer, which must use every byte of its body.
    pub fn call<R: Encodable, S: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &R,
    ) -> S {
        let id = self.send_raw(key, version, request);
        let mut body = self.receive(key, version, id);
        let decoded = S::decode(&mut body, version).unwrap();
        assert!(
            body.is_empty(),
            "{key:?} v{version}: {} bytes left after decoding",
            body.len()
        );
        decoded
    }
}
