//! Listeners as Kafka configures them: `listeners`, `advertised.listeners` and
//! `listener.security.protocol.map`, parsed and checked together, since each check needs
//! the others (an advertised listener must name a bound one; a listener's name must map
//! to a security protocol).
//!
//! Every protocol is served: `security/` builds each listener's TLS and SASL settings.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};

/// Kafka's `SecurityProtocol`: how a listener's connections are carried and authenticated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    /// The name Kafka's configs use.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<SecurityProtocol> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One bound listener: its name (as in `listeners`), address and security protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub bind: SocketAddr,
    pub security_protocol: SecurityProtocol,
}

impl Listener {
    #[must_use]
    pub fn plaintext(name: &str, bind: SocketAddr) -> Listener {
        Listener {
            name: name.to_string(),
            bind,
            security_protocol: SecurityProtocol::Plaintext,
        }
    }
}

/// `name://host:port` as written in `listeners` or `advertised.listeners` (host without
/// brackets; empty for "all interfaces").
pub type Endpoint = (String, String, u16);

/// A listener setting that cannot be used: the key, its value, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid value {value} for configuration {key}: {reason}")]
pub struct ListenerError {
    pub key: &'static str,
    pub value: String,
    pub reason: String,
}

fn bad(key: &'static str, value: &str, reason: impl Into<String>) -> ListenerError {
    ListenerError {
        key,
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// What the three listener keys configure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerSettings {
    pub listeners: Vec<Listener>,
    /// Empty when `advertised.listeners` is not set (then each bound address is advertised).
    pub advertised: Vec<Endpoint>,
}

/// Parse and check `listeners`, `advertised.listeners` and `listener.security.protocol.map`
/// from the broker's settings.
pub fn from_settings(
    settings: &BTreeMap<String, String>,
) -> Result<ListenerSettings, ListenerError> {
    let protocols = match settings.get("listener.security.protocol.map") {
        Some(value) => parse_protocol_map(value)?,
        None => default_protocol_map(),
    };
    let key = "listeners";
    let default =
        kafkalite_core::config::broker_key(key).and_then(kafkalite_core::config::default_value);
    let value = match settings.get(key) {
        Some(v) => v.as_str(),
        None => default
            .as_deref()
            .expect("the schema gives listeners a default"),
    };
    let endpoints = parse_endpoints(key, value)?;
    let mut ports = HashSet::new();
    let mut listeners = Vec::with_capacity(endpoints.len());
    for (name, host, port) in endpoints {
        let Some(&protocol) = protocols.get(&name) else {
            return Err(bad(
                key,
                value,
                format!("listener {name} has no entry in listener.security.protocol.map"),
            ));
        };
        // Port 0 asks for an ephemeral port, which never collides.
        if port != 0 && !ports.insert(port) {
            return Err(bad(key, value, "two listeners share a port"));
        }
        let bind = resolve(&host, port).map_err(|e| bad(key, value, e))?;
        listeners.push(Listener {
            name,
            bind,
            security_protocol: protocol,
        });
    }
    let advertised = match settings.get("advertised.listeners") {
        Some(value) => parse_advertised(value, &listeners)?,
        None => Vec::new(),
    };
    Ok(ListenerSettings {
        listeners,
        advertised,
    })
}

/// `NAME://host:port[,NAME://host:port]`; an empty host means all interfaces, an IPv6
/// host is written in brackets. Each name at most once.
pub fn parse_endpoints(key: &'static str, value: &str) -> Result<Vec<Endpoint>, ListenerError> {
    let mut out: Vec<Endpoint> = Vec::new();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let shape = || bad(key, value, format!("{part:?} is not NAME://host:port"));
        let (name, rest) = part.split_once("://").ok_or_else(shape)?;
        let (host, port) = rest.rsplit_once(':').ok_or_else(shape)?;
        let name_ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        let host = match host.strip_prefix('[') {
            Some(inner) => inner.strip_suffix(']').ok_or_else(shape)?,
            // An unbracketed host with a colon is an IPv6 address missing its brackets.
            None if host.contains(['[', ']', ':', '/']) => return Err(shape()),
            None => host,
        };
        if !name_ok || port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(shape());
        }
        let port: u16 = port
            .parse()
            .map_err(|_| bad(key, value, format!("port {port} is out of range")))?;
        if out.iter().any(|(seen, _, _)| seen == name) {
            return Err(bad(
                key,
                value,
                format!("listener name {name} appears twice"),
            ));
        }
        out.push((name.to_string(), host.to_string(), port));
    }
    if out.is_empty() {
        return Err(bad(key, value, "no listener given"));
    }
    Ok(out)
}

/// Kafka's default map: each security protocol's name maps to itself.
#[must_use]
pub fn default_protocol_map() -> BTreeMap<String, SecurityProtocol> {
    SecurityProtocol::ALL
        .into_iter()
        .map(|p| (p.name().to_string(), p))
        .collect()
}

/// `NAME:PROTOCOL[,NAME:PROTOCOL]`, on top of the default map (as the Python check this
/// replaces did; Kafka replaces the default instead, which accepts less).
pub fn parse_protocol_map(
    value: &str,
) -> Result<BTreeMap<String, SecurityProtocol>, ListenerError> {
    let key = "listener.security.protocol.map";
    let mut map = default_protocol_map();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let parsed = part.split_once(':').and_then(|(name, protocol)| {
            let name = name.trim();
            let protocol = SecurityProtocol::from_name(protocol.trim())?;
            (!name.is_empty()).then(|| (name.to_string(), protocol))
        });
        let Some((name, protocol)) = parsed else {
            return Err(bad(key, value, format!("{part:?} is not NAME:PROTOCOL")));
        };
        map.insert(name, protocol);
    }
    Ok(map)
}

/// `advertised.listeners`: each names a bound listener and an address a client can reach.
fn parse_advertised(value: &str, listeners: &[Listener]) -> Result<Vec<Endpoint>, ListenerError> {
    let key = "advertised.listeners";
    let endpoints = parse_endpoints(key, value)?;
    for (name, host, port) in &endpoints {
        if !listeners.iter().any(|l| &l.name == name) {
            return Err(bad(key, value, format!("{name} is not in listeners")));
        }
        if matches!(host.as_str(), "" | "0.0.0.0" | "::") {
            return Err(bad(
                key,
                value,
                "clients cannot connect to a wildcard address",
            ));
        }
        if *port == 0 {
            return Err(bad(key, value, "port 0 cannot be advertised"));
        }
    }
    Ok(endpoints)
}

/// The socket address to bind: an empty host binds all (IPv4) interfaces; a name is
/// resolved once, at startup.
fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("cannot resolve {host}: no address"))
}

#[cfg(test)]
#[path = "listeners_tests.rs"]
mod tests;
