//! TLS connections through the broker's own acceptor and transport, against a real rustls
//! client on loopback, for every cipher suite kernel TLS can take: the client pipelines
//! its first request right behind the handshake; the broker answers with plain writes
//! around a `send_file` of a few MB; the client checks every byte, sends a 1 MB request
//! the broker checks, and both sides close cleanly with close_notify.
//!
//! On a kernel without kTLS this exercises the user-space fallback; with
//! `KAFKALITE_REQUIRE_KTLS=1` it fails unless every session really went to the kernel.
//! Each case prints a `ktls-case` line; the whole run one `ktls-result {json}` line
//! (read by `bench/ktls_qemu.py`).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;

use kafkalite_broker::net::acceptor;
use kafkalite_broker::net::transport::Transport;
use kafkalite_broker::security::{ListenerSecurity, Security};
use kafkalite_broker::BrokerConfig;
use kafkalite_core::storage::ReadSlice;
use rustls::crypto::ring::cipher_suite as suites;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, SupportedCipherSuite};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A test CA and a `localhost` certificate it signed (with its key), valid for a century.
const CA: &str = include_str!("fixtures/ktls/ca.pem");
const CERT: &str = include_str!("fixtures/ktls/cert.pem");
const KEY: &str = include_str!("fixtures/ktls/key.pem");

/// The file range the broker sends with `send_file`: a few MB at an odd offset.
const FILE_BYTES: usize = 4 * 1024 * 1024 + 123;
const SLICE_POSITION: usize = 7;
const SLICE_BYTES: usize = 3 * 1024 * 1024 + 4321;
/// The first request (pipelined behind the handshake) and the second (many records).
const FIRST_REQUEST_BYTES: usize = 20_000;
const SECOND_REQUEST_BYTES: usize = 1024 * 1024;
const TAIL_BYTES: usize = 1000;

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(31).wrapping_add(seed) % 251) as u8)
        .collect()
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// A broker config with one SSL listener, and that listener's security.
fn ssl_listener(
    ktls: Option<&str>,
) -> (
    BrokerConfig,
    Arc<ListenerSecurity>,
    Security,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut pairs = BTreeMap::new();
    for (k, v) in [
        ("listeners", "SSL://127.0.0.1:0"),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.certificate.chain", CERT),
        ("ssl.keystore.key", KEY),
        ("log.dirs", dir.path().to_str().unwrap()),
    ] {
        pairs.insert(k.to_string(), v.to_string());
    }
    if let Some(v) = ktls {
        pairs.insert("kafkalite.ssl.ktls.enable".to_string(), v.to_string());
    }
    let config = BrokerConfig::from_pairs(&pairs).unwrap();
    let security = Security::from_config(&config).unwrap();
    let listener = security.listener("SSL");
    (config, listener, security, dir)
}

fn client_config(suite: SupportedCipherSuite) -> Arc<ClientConfig> {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = vec![suite];
    let version = match suite {
        SupportedCipherSuite::Tls13(_) => &rustls::version::TLS13,
        SupportedCipherSuite::Tls12(_) => &rustls::version::TLS12,
    };
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(CA.as_bytes()).unwrap())
        .unwrap();
    Arc::new(
        ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(&[version])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// What one case saw.
struct Case {
    suite: String,
    path: &'static str,
    bytes_verified: usize,
}

/// The client side, on a blocking socket: returns the bytes it verified.
fn client(addr: SocketAddr, suite: SupportedCipherSuite, key_update: bool) -> usize {
    let mut sock = std::net::TcpStream::connect(addr).unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut conn = ClientConnection::new(client_config(suite), name).unwrap();
    // Written before the handshake: rustls sends it right behind its Finished, in the
    // same flight (TLS 1.3) — the pipelined first request.
    conn.writer()
        .write_all(&framed(&pattern(FIRST_REQUEST_BYTES, 1)))
        .unwrap();
    while conn.is_handshaking() {
        conn.complete_io(&mut sock).unwrap();
    }
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let mut response = vec![0u8; 4 + SLICE_BYTES + TAIL_BYTES];
    tls.read_exact(&mut response).unwrap();
    let file = pattern(FILE_BYTES, 2);
    assert_eq!(
        &response[..4],
        &((SLICE_BYTES + TAIL_BYTES) as u32).to_be_bytes()
    );
    assert!(
        response[4..4 + SLICE_BYTES] == file[SLICE_POSITION..SLICE_POSITION + SLICE_BYTES],
        "the file range arrived changed"
    );
    assert!(response[4 + SLICE_BYTES..] == pattern(TAIL_BYTES, 3));
    let mut verified = response.len();
    if key_update {
        tls.conn.refresh_traffic_keys().unwrap();
    }
    let second = framed(&pattern(SECOND_REQUEST_BYTES, 4));
    let mut ok = [0u8; 2];
    let answered = tls
        .write_all(&second)
        .and_then(|()| tls.flush())
        .and_then(|()| tls.read_exact(&mut ok));
    match answered {
        Ok(()) => {
            assert_eq!(&ok, b"ok");
            verified += ok.len();
        }
        // Only a kTLS broker stops at a KeyUpdate: it closes (close_notify, then the
        // unread request resets the connection, whichever the client sees first).
        Err(e) => {
            assert!(key_update, "{e}");
            assert!(
                matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::BrokenPipe
                ),
                "{e}"
            );
            return verified;
        }
    }
    tls.conn.send_close_notify();
    tls.flush().unwrap();
    let mut rest = Vec::new();
    // Ok only when the broker ended with close_notify (rustls calls a bare end an error).
    tls.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
    verified
}

async fn read_frame(transport: &mut Transport) -> std::io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match transport.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    transport.read_exact(&mut body).await?;
    Ok(Some(body))
}

/// The broker side of one connection: the path its session took and the request bytes
/// it verified.
async fn serve(
    socket: tokio::net::TcpListener,
    config: &BrokerConfig,
    security: &ListenerSecurity,
    slice: &ReadSlice,
    key_update: bool,
) -> (&'static str, usize) {
    let (stream, peer) = socket.accept().await.unwrap();
    let (transport, context) = acceptor::open(stream, peer, &config.listeners[0]);
    let (mut transport, _) = acceptor::secure(transport, context, security, None)
        .await
        .expect("handshake");
    let path = match transport {
        Transport::Ktls(_) => "ktls",
        Transport::Tls(_) => "user-space",
        Transport::Plain(_) => panic!("a TLS listener served plaintext"),
    };
    let first = read_frame(&mut transport).await.unwrap().unwrap();
    assert!(
        first == pattern(FIRST_REQUEST_BYTES, 1),
        "first request changed"
    );
    transport
        .write_all(&((SLICE_BYTES + TAIL_BYTES) as u32).to_be_bytes())
        .await
        .unwrap();
    transport.send_file(slice).await.unwrap();
    transport.write_all(&pattern(TAIL_BYTES, 3)).await.unwrap();
    transport.flush().await.unwrap();
    let mut verified = first.len();
    match read_frame(&mut transport).await.unwrap() {
        Some(second) => {
            verified += second.len();
            assert!(
                second == pattern(SECOND_REQUEST_BYTES, 4),
                "second request changed"
            );
            transport.write_all(b"ok").await.unwrap();
            transport.flush().await.unwrap();
            // The client's close_notify reads as the end of the stream.
            assert!(read_frame(&mut transport).await.unwrap().is_none());
        }
        None => {
            assert!(key_update && path == "ktls", "the stream ended early");
            let _ = transport.shutdown().await;
            return (path, verified);
        }
    }
    transport.shutdown().await.unwrap();
    (path, verified)
}

async fn run_case(
    suite: SupportedCipherSuite,
    ktls: Option<&str>,
    key_update: bool,
    slice: &ReadSlice,
) -> Case {
    let (config, security, _keep, _dir) = ssl_listener(ktls);
    let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    let client = std::thread::spawn(move || client(addr, suite, key_update));
    let (path, server_verified) = serve(socket, &config, &security, slice, key_update).await;
    let bytes_verified = client.join().expect("client failed") + server_verified;
    let suite = format!("{:?}", suite.suite());
    println!("ktls-case suite={suite} path={path} key_update={key_update} bytes_verified={bytes_verified}");
    Case {
        suite,
        path,
        bytes_verified,
    }
}

fn segment_file() -> ReadSlice {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&pattern(FILE_BYTES, 2)).unwrap();
    ReadSlice {
        file: Arc::new(file),
        position: SLICE_POSITION as u64,
        len: SLICE_BYTES as u64,
        first_offset: 0,
    }
}

const KERNEL_SUITES: [SupportedCipherSuite; 6] = [
    suites::TLS13_AES_128_GCM_SHA256,
    suites::TLS13_AES_256_GCM_SHA384,
    suites::TLS13_CHACHA20_POLY1305_SHA256,
    suites::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    suites::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    suites::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
];

fn require_ktls() -> bool {
    std::env::var("KAFKALITE_REQUIRE_KTLS").is_ok_and(|v| v == "1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kernel_suite_survives_pipelining_send_file_and_close() {
    let slice = segment_file();
    let mut cases = Vec::new();
    for suite in KERNEL_SUITES {
        cases.push(run_case(suite, None, false, &slice).await);
    }
    let kernel = kafkalite_broker::security::ktls::kernel_has_tls();
    let line = serde_json::json!({
        "kernel_release": kernel_release(),
        "kernel_tls": kernel.is_ok(),
        "cipher_suites": cases.iter().map(|c| &c.suite).collect::<Vec<_>>(),
        "paths": cases.iter().map(|c| c.path).collect::<Vec<_>>(),
        "bytes_verified": cases.iter().map(|c| c.bytes_verified).sum::<usize>(),
    });
    println!("ktls-result {line}");
    let expected = if kernel.is_ok() { "ktls" } else { "user-space" };
    for case in &cases {
        assert_eq!(case.path, expected, "{}", case.suite);
    }
    if require_ktls() {
        assert!(kernel.is_ok(), "KAFKALITE_REQUIRE_KTLS=1 but {kernel:?}");
    }
}

/// A TLS 1.3 KeyUpdate from the client: rustls follows it; a kTLS socket cannot, and the
/// broker closes the connection cleanly instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_key_update_is_followed_or_closes_cleanly() {
    let slice = segment_file();
    let case = run_case(suites::TLS13_AES_128_GCM_SHA256, None, true, &slice).await;
    if require_ktls() {
        assert_eq!(case.path, "ktls");
    }
}

/// `kafkalite.ssl.ktls.enable=false` keeps every session in rustls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_switch_keeps_sessions_in_user_space() {
    let slice = segment_file();
    let case = run_case(
        suites::TLS13_AES_128_GCM_SHA256,
        Some("false"),
        false,
        &slice,
    )
    .await;
    assert_eq!(case.path, "user-space");
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Paced, the handshake socket stops at the client's Finished: a request the client
/// pipelined behind it stays in the kernel's socket buffer, nothing of it inside rustls —
/// what the hand-over to the kernel needs, checked here on any kernel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paced_handshake_leaves_the_pipelined_request_in_the_socket() {
    use kafkalite_broker::net::handshake_socket::HandshakeSocket;
    let (_config, security, _keep, _dir) = ssl_listener(None);
    let acceptor = security.tls.clone().unwrap();
    for suite in [
        suites::TLS13_AES_128_GCM_SHA256,
        suites::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ] {
        let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let client = std::thread::spawn(move || {
            let mut sock = std::net::TcpStream::connect(addr).unwrap();
            let name = ServerName::try_from("localhost").unwrap();
            let mut conn = ClientConnection::new(client_config(suite), name).unwrap();
            conn.writer()
                .write_all(&framed(&pattern(FIRST_REQUEST_BYTES, 1)))
                .unwrap();
            while conn.is_handshaking() || conn.wants_write() {
                conn.complete_io(&mut sock).unwrap();
            }
            // Keep the connection open until the server has looked.
            done_rx.recv().unwrap();
        });
        let (stream, _) = socket.accept().await.unwrap();
        let mut tls = acceptor
            .accept(HandshakeSocket::new(stream, true))
            .await
            .unwrap();
        // Give the request time to arrive whole.
        let mut waiting = [0u8; 64];
        let mut queued = 0;
        for _ in 0..200 {
            queued = tls.get_ref().0.get_ref().peek(&mut waiting).await.unwrap();
            if queued > 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let (socket, session) = tls.get_mut();
        assert!(!socket.mid_record(), "{suite:?}");
        let state = session.process_new_packets().unwrap();
        assert_eq!(state.plaintext_bytes_to_read(), 0, "{suite:?}");
        assert!(
            queued > 0,
            "{suite:?}: the pipelined request is not in the socket"
        );
        // Application data record, as every TLS 1.3 record after the handshake reads.
        assert_eq!(waiting[0], 23, "{suite:?}");
        // Unpaced, the session reads it through rustls as usual.
        socket.unpace();
        let mut len = [0u8; 4];
        tls.read_exact(&mut len).await.unwrap();
        assert_eq!(u32::from_be_bytes(len) as usize, FIRST_REQUEST_BYTES);
        done_tx.send(()).unwrap();
        client.join().unwrap();
    }
}

/// A request rustls has already decrypted cannot follow the keys into the kernel: the
/// session stays in user space and the request is read from rustls, not lost — checked
/// on any kernel (the check comes before anything touches the socket).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_rustls_already_holds_keeps_the_session_in_user_space() {
    use kafkalite_broker::net::handshake_socket::HandshakeSocket;
    use kafkalite_broker::security::ktls;
    use tokio::io::AsyncBufReadExt;
    let (_config, security, _keep, _dir) = ssl_listener(None);
    let acceptor = security.tls.clone().unwrap();
    let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    let client = std::thread::spawn(move || {
        let sock = std::net::TcpStream::connect(addr).unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let conn =
            ClientConnection::new(client_config(suites::TLS13_AES_128_GCM_SHA256), name).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, sock);
        tls.write_all(&framed(&pattern(FIRST_REQUEST_BYTES, 1)))
            .unwrap();
        tls.flush().unwrap();
        let mut ok = [0u8; 2];
        tls.read_exact(&mut ok).unwrap();
        assert_eq!(&ok, b"ok");
    });
    let (stream, _) = socket.accept().await.unwrap();
    let mut tls = acceptor
        .accept(HandshakeSocket::new(stream, false))
        .await
        .unwrap();
    // Make rustls read and decrypt the request without handing it out.
    assert!(!tls.fill_buf().await.unwrap().is_empty());
    let mut transport = ktls::offload(Box::new(tls)).await.unwrap();
    assert!(matches!(transport, Transport::Tls(_)));
    let request = read_frame(&mut transport).await.unwrap().unwrap();
    assert!(request == pattern(FIRST_REQUEST_BYTES, 1));
    transport.write_all(b"ok").await.unwrap();
    transport.flush().await.unwrap();
    client.join().unwrap();
}
