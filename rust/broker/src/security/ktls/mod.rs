//! Kernel TLS (kTLS): with the session's keys in the socket, sendfile keeps working under
//! TLS, so Fetch over SSL and SASL_SSL stays zero-copy.
//!
//! After rustls completes a handshake (`net::acceptor::secure`), `offload` hands the
//! session to the kernel when it can: the kernel has the `tls` upper-layer protocol, the
//! listener has `kafkalite.ssl.ktls.enable` (default true), the session is TLS 1.2 or 1.3
//! with AES-128-GCM, AES-256-GCM or ChaCha20-Poly1305, and rustls holds nothing the
//! kernel would miss (no queued records to send, no record received but not yet read:
//! `net::handshake_socket` keeps a pipelined first request in the socket). It then attaches
//! the ULP, takes the traffic secrets and sequence numbers out of rustls and installs both
//! directions (`crypto_info`, `sockopt`); the connection goes on as `Transport::Ktls`.
//! Otherwise the session stays in rustls (`Transport::Tls`), said at debug level.
//!
//! What the kernel does not do for us: a record other than application data arriving
//! (an alert, a TLS 1.3 KeyUpdate) fails the next read; the connection then closes as at
//! end of stream (a client that updates its keys reconnects). Session tickets are off
//! (`security::tls`), so no NewSessionTicket is queued at hand-over time.

mod crypto_info;
pub mod sockopt;

use std::io;
use std::os::fd::AsRawFd;
use std::sync::OnceLock;

use kafkalite_core::logging::{self, Level};
use rustls::{CipherSuite, ProtocolVersion};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use crate::net::handshake_socket::HandshakeSocket;
use crate::net::transport::Transport;
use sockopt::Direction;

/// The kafkalite-only key (Kafka has no kTLS) that turns kTLS off, broker-wide or for one
/// listener (`listener.name.<l>.kafkalite.ssl.ktls.enable`).
pub const ENABLE_KEY: &str = "kafkalite.ssl.ktls.enable";

const LOGGER: &str = "kafkalite.security.Tls";

/// Whether `setsockopt(TCP_ULP, "tls")` works on a loopback connection (the kernel has
/// the `tls` module). Checked once.
pub fn kernel_has_tls() -> Result<(), String> {
    static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();
    CHECKED.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let client = std::net::TcpStream::connect(listener.local_addr().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let (_server, _) = listener.accept().map_err(|e| e.to_string())?;
    sockopt::attach_tls_ulp(client.as_raw_fd()).map_err(|e| e.to_string())
}

/// Whether a listener's connections should be readied for kTLS: enabled and possible.
#[must_use]
pub fn wanted(enabled: bool) -> bool {
    enabled && kernel_has_tls().is_ok()
}

/// Log, once per broker start with a TLS listener, how Fetch sends record bytes on TLS.
/// `listeners`: each TLS listener's name and whether it has kTLS enabled.
pub fn log_choice(listeners: &[(String, bool)]) {
    logging::log(Level::Info, LOGGER, &choice(listeners, kernel_has_tls()));
}

fn choice(listeners: &[(String, bool)], kernel: Result<(), String>) -> String {
    let off: Vec<&str> = listeners
        .iter()
        .filter(|(_, on)| !on)
        .map(|(name, _)| name.as_str())
        .collect();
    if off.len() == listeners.len() {
        return format!(
            "Fetch over TLS uses user-space encryption (rustls), not sendfile ({ENABLE_KEY}=false)"
        );
    }
    if let Err(e) = kernel {
        return format!(
            "Fetch over TLS uses user-space encryption (rustls), not sendfile (kernel TLS \
             unavailable: setsockopt(TCP_ULP, \"tls\"): {e})"
        );
    }
    let mut line = "Fetch over TLS uses kernel TLS (kTLS): rustls hands each session's keys \
                    to the kernel and sendfile keeps working (TLS 1.2/1.3 with AES-GCM or \
                    ChaCha20-Poly1305; other suites stay in user space)"
        .to_string();
    if !off.is_empty() {
        line += &format!(
            "; user-space encryption on listener(s) {} ({ENABLE_KEY}=false)",
            off.join(", ")
        );
    }
    line
}

/// Why a session cannot go to the kernel, if it cannot (checked before anything changes).
fn refusal(tls: &mut TlsStream<HandshakeSocket>) -> Option<String> {
    let (socket, session) = tls.get_mut();
    let version = session.protocol_version();
    if !matches!(
        version,
        Some(ProtocolVersion::TLSv1_2 | ProtocolVersion::TLSv1_3)
    ) {
        return Some(format!("protocol {version:?}"));
    }
    let suite = session.negotiated_cipher_suite().map(|s| s.suite());
    let kernel_cipher = matches!(
        suite,
        Some(
            CipherSuite::TLS13_AES_128_GCM_SHA256
                | CipherSuite::TLS13_AES_256_GCM_SHA384
                | CipherSuite::TLS13_CHACHA20_POLY1305_SHA256
                | CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
                | CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
                | CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
                | CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
                | CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
                | CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
        )
    );
    if !kernel_cipher {
        return Some(format!("cipher suite {suite:?} has no kernel TLS"));
    }
    if socket.mid_record() {
        return Some("rustls holds part of a record read past the handshake".to_string());
    }
    match session.process_new_packets() {
        Ok(state) if state.plaintext_bytes_to_read() > 0 => Some(format!(
            "rustls holds {} bytes already received and decrypted",
            state.plaintext_bytes_to_read()
        )),
        Ok(state) if state.peer_has_closed() => Some("the client already closed".to_string()),
        Ok(_) => None,
        Err(e) => Some(format!("rustls: {e}")),
    }
}

/// Hand a just-completed TLS session to the kernel if it can go (see the module doc), or
/// keep it in rustls. An error means the connection is lost (keys half-installed, or
/// the socket failed while rustls flushed) and must close.
pub async fn offload(mut tls: Box<TlsStream<HandshakeSocket>>) -> io::Result<Transport> {
    if let Some(why) = refusal(&mut tls) {
        return Ok(keep_in_user_space(tls, &why));
    }
    // Records rustls queued (none with session tickets off) go out under its keys.
    tls.flush().await?;
    let (socket, session) = tls.get_ref();
    if session.wants_write() {
        return Ok(keep_in_user_space(
            tls,
            "rustls could not flush its records",
        ));
    }
    if let Err(e) = sockopt::attach_tls_ulp(socket.get_ref().as_raw_fd()) {
        return Ok(keep_in_user_space(
            tls,
            &format!("setsockopt(TCP_ULP, \"tls\"): {e}"),
        ));
    }
    let (socket, session) = tls.into_inner();
    let version = session
        .protocol_version()
        .unwrap_or(ProtocolVersion::TLSv1_3);
    let secrets = session
        .dangerous_extract_secrets()
        .map_err(|e| lost(format!("extracting the session's secrets: {e}")))?;
    let stream: TcpStream = socket.into_inner();
    let fd = stream.as_raw_fd();
    for (direction, (seq, secrets)) in [
        (Direction::Transmit, &secrets.tx),
        (Direction::Receive, &secrets.rx),
    ] {
        let info = crypto_info::build(version, *seq, secrets).map_err(lost)?;
        sockopt::install(fd, direction, &info)
            .map_err(|e| lost(format!("setsockopt(SOL_TLS, {direction:?}): {e}")))?;
    }
    Ok(Transport::Ktls(stream))
}

fn lost(why: String) -> io::Error {
    io::Error::other(format!(
        "handing the TLS session to the kernel failed: {why}"
    ))
}

fn keep_in_user_space(mut tls: Box<TlsStream<HandshakeSocket>>, why: &str) -> Transport {
    logging::log(
        Level::Debug,
        LOGGER,
        &format!("TLS connection stays in user space (rustls), not kTLS: {why}"),
    );
    tls.get_mut().0.unpace();
    Transport::Tls(tls)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listeners(on: &[(&str, bool)]) -> Vec<(String, bool)> {
        on.iter().map(|(n, b)| ((*n).to_string(), *b)).collect()
    }

    #[test]
    fn the_start_line_says_which_path_and_why() {
        let both = listeners(&[("SSL", true), ("SASL_SSL", false)]);
        let line = choice(&both, Ok(()));
        assert!(
            line.starts_with("Fetch over TLS uses kernel TLS (kTLS)"),
            "{line}"
        );
        assert!(
            line.contains("listener(s) SASL_SSL (kafkalite.ssl.ktls.enable=false)"),
            "{line}"
        );
        let off = listeners(&[("SSL", false)]);
        assert!(choice(&off, Ok(())).contains(
            "user-space encryption (rustls), not sendfile (kafkalite.ssl.ktls.enable=false)"
        ));
        let line = choice(&both, Err("Unknown error 524".to_string()));
        assert!(line.contains("kernel TLS unavailable"), "{line}");
    }
}
