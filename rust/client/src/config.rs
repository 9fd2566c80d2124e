//! The settings of a client: its id, its bounds on response size and waiting.

use std::time::Duration;

/// How a [`Client`](crate::Client) talks to brokers.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Sent in every request header (Kafka's `client.id`).
    pub client_id: String,
    /// A response frame larger than this is a broken peer, not data: never allocated.
    pub response_bytes_max: usize,
    /// Bound on each request (a Fetch adds its `max_wait_ms`), and on connecting unless
    /// `connect_timeout` says otherwise.
    pub request_timeout: Duration,
    /// Bound on opening a connection: the TCP connect and the TLS handshake (Kafka's
    /// `socket.connection.setup.timeout.ms`).
    pub connect_timeout: Option<Duration>,
    /// SO_RCVBUF of the connection's socket, set before it connects (Kafka's
    /// `receive.buffer.bytes`); `None`: the OS default (and its autotuning).
    pub receive_buffer_bytes: Option<u32>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            client_id: "kafkalite".to_string(),
            response_bytes_max: 512 << 20,
            request_timeout: Duration::from_secs(30),
            connect_timeout: None,
            receive_buffer_bytes: None,
        }
    }
}
