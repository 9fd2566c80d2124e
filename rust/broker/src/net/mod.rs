//! Connections: everything between a socket and a handler.
//!
//! - `listeners`: the `listeners` / `advertised.listeners` / protocol-map settings;
//! - `acceptor`: binding a listener and accepting its connections;
//! - `transport`: the byte stream (plain TCP today; TLS joins as a variant);
//! - `framing`: size-bounded frames, request headers, response framing;
//! - `context`: what a handler knows of its connection and request (`RequestContext`);
//! - `connection`: one connection's request loop;
//! - `request_memory`: the bytes of requests read and not yet answered, bounded.

pub mod acceptor;
pub mod connection;
pub mod context;
pub mod framing;
pub mod handshake_socket;
pub mod limits;
pub mod listeners;
pub mod request_memory;
pub mod transport;

pub use context::{ConnectionContext, KafkaPrincipal, RequestContext, Throttle};
pub use listeners::{Listener, SecurityProtocol};
