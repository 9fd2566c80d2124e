//! Binding a listener and accepting its connections; each connection is served by its own
//! task, with a context that says which listener it came through.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::connection;
use super::context::ConnectionContext;
use super::listeners::Listener;
use super::transport::Transport;
use crate::state::BrokerState;

/// Bind `listener`'s address; the error names the listener.
pub async fn bind(listener: &Listener) -> anyhow::Result<TcpListener> {
    TcpListener::bind(listener.bind).await.map_err(|e| {
        anyhow::anyhow!(
            "cannot listen on {} ({}): {e}",
            listener.bind,
            listener.name
        )
    })
}

/// The transport and context of a connection just accepted on `listener` (a TLS
/// listener will run its handshake here, before the first request is read).
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

/// Accept connections on `socket` (bound for `listener`) until shutdown.
pub async fn accept_loop(
    socket: TcpListener,
    listener: Listener,
    state: Arc<BrokerState>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = socket.accept() => {
                match accepted {
                    Ok((stream, peer)) => {
                        let (transport, connection) = open(stream, peer, &listener);
                        let state = Arc::clone(&state);
                        let shutdown = shutdown.clone();
                        tokio::spawn(async move {
                            let _ = connection::serve(transport, connection, state, shutdown).await;
                        });
                    }
                    // Out of fds and the like: back off instead of spinning.
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::net::TcpSocket;

    use super::*;
    use crate::net::{KafkaPrincipal, SecurityProtocol};

    /// The context names the listener that accepted the connection and the client's own
    /// address (here a second loopback address the client bound to).
    #[tokio::test]
    async fn a_connection_knows_its_listener_and_peer() {
        let listener = Listener::plaintext("INTERNAL", "127.0.0.1:0".parse().unwrap());
        let socket = bind(&listener).await.unwrap();
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

    #[tokio::test]
    async fn a_busy_address_names_the_listener() {
        let first = Listener::plaintext("A", "127.0.0.1:0".parse().unwrap());
        let taken = bind(&first).await.unwrap();
        let second = Listener::plaintext("B", taken.local_addr().unwrap());
        let e = bind(&second).await.unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("cannot listen on {} (B): ", second.bind)),
            "{e}"
        );
    }
}
