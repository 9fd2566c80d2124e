//! Who is asking: what every handler knows about the connection and request it answers.
//!
//! A `ConnectionContext` is made once, when a connection is accepted (peer, listener,
//! security protocol, principal); a `RequestContext` borrows it for each request and adds
//! what the request header says. Authentication (SASL) will set the principal; an
//! authorizer will read it here.

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};

use kafka_protocol::messages::ApiKey;

use super::listeners::{Listener, SecurityProtocol};

/// Kafka's `KafkaPrincipal`: `type:name`, e.g. `User:alice`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KafkaPrincipal {
    pub principal_type: String,
    pub name: String,
}

impl KafkaPrincipal {
    pub const USER_TYPE: &'static str = "User";

    /// The principal of an unauthenticated connection (Kafka's `User:ANONYMOUS`).
    #[must_use]
    pub fn anonymous() -> KafkaPrincipal {
        KafkaPrincipal {
            principal_type: Self::USER_TYPE.to_string(),
            name: "ANONYMOUS".to_string(),
        }
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

/// One accepted connection, as long as it lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionContext {
    pub peer: SocketAddr,
    /// The name of the listener that accepted it (as in `listeners`).
    pub listener_name: String,
    pub security_protocol: SecurityProtocol,
    pub principal: KafkaPrincipal,
    /// The client software name and version its ApiVersions (v3+) gave, which client
    /// telemetry subscriptions may match on.
    pub software: std::sync::OnceLock<(String, String)>,
}

impl ConnectionContext {
    /// A connection just accepted on `listener`. Nobody is authenticated yet (no listener
    /// authenticates today; SASL will replace the principal once a handshake succeeds).
    #[must_use]
    pub fn accepted(peer: SocketAddr, listener: &Listener) -> ConnectionContext {
        ConnectionContext {
            peer,
            listener_name: listener.name.clone(),
            security_protocol: listener.security_protocol,
            principal: KafkaPrincipal::anonymous(),
            software: std::sync::OnceLock::new(),
        }
    }

    /// The client's address as Kafka shows it (`InetAddress.toString()`): "/127.0.0.1".
    #[must_use]
    pub fn client_host(&self) -> String {
        format!("/{}", self.peer.ip())
    }
}

/// The throttle time a request's quota checks decided (KIP-219): its response carries it,
/// and the connection reads nothing more for that long once the response is sent.
#[derive(Debug, Default)]
pub struct Throttle(AtomicI32);

impl Throttle {
    /// Keep the longest throttle asked for.
    pub fn at_least(&self, ms: i32) {
        self.0.fetch_max(ms, Ordering::Relaxed);
    }

    #[must_use]
    pub fn ms(&self) -> i32 {
        self.0.load(Ordering::Relaxed)
    }
}

/// One request on a connection.
#[derive(Clone, Copy, Debug)]
pub struct RequestContext<'a> {
    pub connection: &'a ConnectionContext,
    /// The header's client id ("" when the client sent none, as Kafka reads it).
    pub client_id: &'a str,
    pub api_key: ApiKey,
    pub api_version: i16,
    /// The request's size in bytes, header included (what `producer_byte_rate` counts).
    pub request_size: usize,
    pub throttle: &'a Throttle,
}

impl RequestContext<'_> {
    #[must_use]
    pub fn peer(&self) -> SocketAddr {
        self.connection.peer
    }

    #[must_use]
    pub fn listener_name(&self) -> &str {
        &self.connection.listener_name
    }

    #[must_use]
    pub fn principal(&self) -> &KafkaPrincipal {
        &self.connection.principal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plaintext_connection_is_anonymous() {
        let listener = Listener::plaintext("INTERNAL", "0.0.0.0:9094".parse().unwrap());
        let c = ConnectionContext::accepted("10.1.2.3:5555".parse().unwrap(), &listener);
        assert_eq!(c.principal.to_string(), "User:ANONYMOUS");
        assert_eq!(c.security_protocol, SecurityProtocol::Plaintext);
        assert_eq!(c.client_host(), "/10.1.2.3");
        let r = RequestContext {
            connection: &c,
            client_id: "app",
            api_key: ApiKey::Metadata,
            api_version: 12,
            request_size: 0,
            throttle: &Throttle::default(),
        };
        assert_eq!(r.listener_name(), "INTERNAL");
        assert_eq!(r.peer().port(), 5555);
        assert_eq!(r.principal().principal_type, "User");
    }

    #[test]
    fn an_ipv6_client_host_has_no_brackets() {
        let listener = Listener::plaintext("PLAINTEXT", "[::]:0".parse().unwrap());
        let c = ConnectionContext::accepted("[::1]:9".parse().unwrap(), &listener);
        assert_eq!(c.client_host(), "/::1");
    }
}
