//! The settings of a client: its id, its bounds on response size and waiting.

use std::time::Duration;

/// How a [`Client`](crate::Client) talks to brokers.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Sent in every request header (Kafka's `client.id`).
    pub client_id: String,
    /// A response frame larger than this is a broken peer, not data: never allocated.
    pub response_bytes_max: usize,
    /// Bound on connecting and on each request (a Fetch adds its `max_wait_ms`).
    pub request_timeout: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            client_id: "kafkalite".to_string(),
            response_bytes_max: 512 << 20,
            request_timeout: Duration::from_secs(30),
        }
    }
}
