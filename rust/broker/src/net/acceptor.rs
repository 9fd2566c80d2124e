//! Binding a listener and accepting its connections; each connection is served by its own
//! task, with a context that says which listener it came through.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;

use super::connection;
use super::context::{ConnectionContext, KafkaPrincipal};
use super::handshake_socket::HandshakeSocket;
use super::listeners::Listener;
use super::transport::Transport;
use crate::metrics::ConnectionGuard;
use crate::security::{ktls, principal, ListenerSecurity};
use crate::state::BrokerState;

/// Kafka's `socket.listen.backlog.size` default.
pub const LISTEN_BACKLOG_DEFAULT: u32 = 50;

/// Bind `listener`'s address and listen with a queue of `backlog` connections not yet
/// accepted (`socket.listen.backlog.size`; the kernel caps it at `net.core.somaxconn`);
/// the error names the listener.
pub async fn bind(listener: &Listener, backlog: u32) -> anyhow::Result<TcpListener> {
    let bound = || -> std::io::Result<TcpListener> {
        let socket = if listener.bind.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        // As std's and Kafka's listeners: a restarted broker rebinds past TIME_WAIT.
        socket.set_reuseaddr(true)?;
        socket.bind(listener.bind)?;
        socket.listen(backlog)
    };
    bound().map_err(|e| {
        anyhow::anyhow!(
            "cannot listen on {} ({}): {e}",
            listener.bind,
            listener.name
        )
    })
}

/// The transport and context of a connection just accepted on `listener`, before any
/// TLS handshake (`secure` runs that).
#[must_use]
pub fn open(
    stream: TcpStream,
    peer: SocketAddr,
    listener: &Listener,
) -> (Transport, ConnectionContext) {
    (
        Transport::plain(stream),
        ConnectionContext::accepted(peer, listener),
    )
}

/// How long a TLS handshake may take at most (a client that connects and says nothing
/// holds a task no longer than this, or `connections.max.idle.ms` if shorter).
const TLS_HANDSHAKE_MAX: Duration = Duration::from_secs(30);

/// Run the TLS handshake of a TLS listener's connection and take the principal from the
/// client certificate, if one was sent; then hand the session to the kernel (kTLS) where
/// the listener and the session allow (`security::ktls`). `None`: the connection is closed
/// (handshake failed: a plaintext client, garbage, an untrusted or missing certificate;
/// or the hand-over failed halfway), logged once.
pub async fn secure(
    transport: Transport,
    mut connection: ConnectionContext,
    security: &ListenerSecurity,
    idle_limit: Option<Duration>,
) -> Option<(Transport, ConnectionContext)> {
    let Some(acceptor) = &security.tls else {
        return Some((transport, connection));
    };
    let Transport::Plain(stream) = transport else {
        return Some((transport, connection));
    };
    let limit = idle_limit.map_or(TLS_HANDSHAKE_MAX, |l| l.min(TLS_HANDSHAKE_MAX));
    let failed = |why: String| {
        kafkalite_core::logging::log(
            kafkalite_core::logging::Level::Info,
            "kafkalite.security.Tls",
            &format!(
                "Failed authentication with {} (listener {}): SSL handshake failed: {why}",
                connection.client_host(),
                connection.listener_name
            ),
        );
    };
    // Paced when the session may go to the kernel: see `HandshakeSocket`.
    let socket = HandshakeSocket::new(stream, security.ktls);
    let tls = match tokio::time::timeout(limit, acceptor.accept(socket)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            failed(e.to_string());
            return None;
        }
        Err(_) => {
            failed(format!("not done within {limit:?}"));
            return None;
        }
    };
    if let Some(cert) = tls.get_ref().1.peer_certificates().and_then(|c| c.first()) {
        let mapped = principal::subject_rfc2253(cert)
            .ok_or_else(|| "cannot read the client certificate's subject".to_string())
            .and_then(|dn| security.principal_mapper.map(&dn));
        match mapped {
            Ok(name) => {
                connection.principal = KafkaPrincipal {
                    principal_type: KafkaPrincipal::USER_TYPE.to_string(),
                    name,
                }
            }
            Err(why) => {
                failed(why);
                return None;
            }
        }
    }
    let tls = Box::new(tls);
    if !security.ktls {
        return Some((Transport::Tls(tls), connection));
    }
    match ktls::offload(tls).await {
        Ok(transport) => Some((transport, connection)),
        Err(e) => {
            kafkalite_core::logging::log(
                kafkalite_core::logging::Level::Info,
                "kafkalite.security.Tls",
                &format!(
                    "Closing TLS connection from {} (listener {}): {e}",
                    connection.client_host(),
                    connection.listener_name
                ),
            );
            None
        }
    }
}

/// Accept connections on `socket` (bound for `listener`) until shutdown.
pub async fn accept_loop(
    socket: TcpListener,
    listener: Listener,
    state: Arc<BrokerState>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut refusals = AcceptFailures::default();
    loop {
        // At `max.connections` (or the listener's) or past a creation rate, accept nothing
        // until there is room: clients wait in the backlog, as Kafka's acceptor blocks.
        tokio::select! {
            () = state.security.connections.wait_to_accept(&listener.name) => {}
            _ = shutdown.changed() => return,
        }
        tokio::select! {
            accepted = socket.accept() => {
                match accepted {
                    Ok((stream, peer)) => {
                        let connections = &state.security.connections;
                        let admitted = connections.admit(&listener.name, peer.ip()).and_then(|slot| {
                            match state.security.quotas.store.ip_connection_rate(&peer.ip().to_string()) {
                                Some(rate) => connections.check_ip_rate(peer.ip(), rate).map(|()| slot),
                                None => Ok(slot),
                            }
                        });
                        let slot = match admitted {
                            Ok(slot) => slot,
                            // Past `max.connections.per.ip` or its ip's
                            // `connection_creation_rate`: closed at once.
                            Err(line) => {
                                if let Some(line) = line {
                                    kafkalite_core::logging::log(
                                        kafkalite_core::logging::Level::Info,
                                        "kafkalite.net.ConnectionQuotas",
                                        &line,
                                    );
                                }
                                drop(stream);
                                continue;
                            }
                        };
                        let (transport, connection) = open(stream, peer, &listener);
                        let state = Arc::clone(&state);
                        let shutdown = shutdown.clone();
                        let security = state.security.listener(&listener.name);
                        let name = listener.name.clone();
                        tokio::spawn(async move {
                            let _slot = slot;
                            let metrics = Arc::clone(&state);
                            let _open = ConnectionGuard::open(&metrics.metrics, &name);
                            let limit = state.config.connections_max_idle;
                            let Some((transport, connection)) =
                                secure(transport, connection, &security, limit).await
                            else {
                                return;
                            };
                            let (peer, name) = (connection.peer, connection.listener_name.clone());
                            if let Err(e) =
                                connection::serve(transport, connection, state, shutdown, security)
                                    .await
                            {
                                // One line per closed connection (a request that could not be
                                // answered, a frame over the limit, a client gone mid-response),
                                // at most one per peer address every 10 s.
                                kafkalite_core::logging::every(
                                    &format!("closed:{}", peer.ip()),
                                    Duration::from_secs(10),
                                    kafkalite_core::logging::Level::Info,
                                    "kafkalite.network.Processor",
                                    || format!("Closing connection from {peer} on listener {name}: {e:#}"),
                                );
                            }
                        });
                    }
                    // Out of fds and the like: say so (once in a while) and back off
                    // instead of spinning; the client waits in the backlog meanwhile.
                    Err(e) => {
                        if let Some(line) = refusals.refused(&e, &listener, Instant::now()) {
                            kafkalite_core::logging::error("kafkalite.net.Acceptor", &line);
                        }
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}

/// How often a failing accept is logged: once per interval, with how many failed since.
const ACCEPT_FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Counts failed accepts and decides when to log them, so a broker out of file
/// descriptors says so without writing a line per attempt (20 a second while it lasts).
#[derive(Default)]
struct AcceptFailures {
    last_logged: Option<Instant>,
    unlogged: u64,
}

impl AcceptFailures {
    /// The line to log for this failure, if one is due.
    fn refused(&mut self, e: &std::io::Error, listener: &Listener, now: Instant) -> Option<String> {
        self.unlogged += 1;
        if self
            .last_logged
            .is_some_and(|t| now.duration_since(t) < ACCEPT_FAILURE_LOG_INTERVAL)
        {
            return None;
        }
        let why = match e.raw_os_error() {
            Some(libc::EMFILE) => {
                " (the process is out of file descriptors: raise `ulimit -n` or close clients)"
            }
            Some(libc::ENFILE) => " (the system is out of file descriptors)",
            Some(libc::ENOBUFS | libc::ENOMEM) => " (out of memory for sockets)",
            _ => "",
        };
        let line = format!(
            "kafkalite: cannot accept connections on {} ({}): {e}{why}; {} failed accept(s) \
             since the last report, new clients wait",
            listener.bind, listener.name, self.unlogged
        );
        self.last_logged = Some(now);
        self.unlogged = 0;
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use tokio::net::TcpSocket;

    use super::*;
    use crate::net::SecurityProtocol;

    /// The context names the listener that accepted the connection and the client's own
    /// address (here a second loopback address the client bound to).
    #[tokio::test]
    async fn a_connection_knows_its_listener_and_peer() {
        let listener = Listener::plaintext("INTERNAL", "127.0.0.1:0".parse().unwrap());
        let socket = bind(&listener, LISTEN_BACKLOG_DEFAULT).await.unwrap();
        let client = TcpSocket::new_v4().unwrap();
        client.bind("127.0.0.3:0".parse().unwrap()).unwrap();
        let client = client.connect(socket.local_addr().unwrap()).await.unwrap();
        let (stream, peer) = socket.accept().await.unwrap();
        let (transport, context) = open(stream, peer, &listener);
        assert!(matches!(transport, Transport::Plain(_)));
        assert_eq!(context.peer, client.local_addr().unwrap());
        assert_eq!(context.client_host(), "/127.0.0.3");
        assert_eq!(context.listener_name, "INTERNAL");
        assert_eq!(context.security_protocol, SecurityProtocol::Plaintext);
        assert_eq!(context.principal, KafkaPrincipal::anonymous());
    }

    #[test]
    fn accept_failures_are_logged_once_per_interval_with_a_count() {
        let listener = Listener::plaintext("PLAINTEXT", "127.0.0.1:9092".parse().unwrap());
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE);
        let mut failures = AcceptFailures::default();
        let t0 = Instant::now();
        let first = failures.refused(&emfile, &listener, t0).unwrap();
        assert!(first.contains("out of file descriptors"), "{first}");
        assert!(first.contains("127.0.0.1:9092 (PLAINTEXT)"), "{first}");
        assert!(first.contains("1 failed accept(s)"), "{first}");
        for ms in [50, 100, 9_000] {
            assert_eq!(
                failures.refused(&emfile, &listener, t0 + Duration::from_millis(ms)),
                None
            );
        }
        let enfile = std::io::Error::from_raw_os_error(libc::ENFILE);
        let next = failures
            .refused(&enfile, &listener, t0 + ACCEPT_FAILURE_LOG_INTERVAL)
            .unwrap();
        assert!(next.contains("4 failed accept(s)"), "{next}");
        assert!(next.contains("system is out of file descriptors"), "{next}");
    }

    #[tokio::test]
    async fn a_busy_address_names_the_listener() {
        let first = Listener::plaintext("A", "127.0.0.1:0".parse().unwrap());
        let taken = bind(&first, LISTEN_BACKLOG_DEFAULT).await.unwrap();
        let second = Listener::plaintext("B", taken.local_addr().unwrap());
        let e = bind(&second, LISTEN_BACKLOG_DEFAULT).await.unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("cannot listen on {} (B): ", second.bind)),
            "{e}"
        );
    }
}
