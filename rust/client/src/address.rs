//! Broker addresses and `bootstrap.servers` parsing (`host:port,host:port`, IPv6 in
//! brackets).

use std::fmt;

use crate::error::{Error, Result};

/// A broker's `host:port` as Metadata or `bootstrap.servers` name it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address {
    pub host: String,
    pub port: u16,
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// The addresses of a `bootstrap.servers` list; at least one.
pub fn parse_bootstrap(servers: &str) -> Result<Vec<Address>> {
    let mut out = Vec::new();
    for item in servers.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || Error::InvalidBootstrap(format!("{item:?} is not host:port (in {servers:?})"));
        let (host, port) = item.rsplit_once(':').ok_or_else(bad)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = port.parse::<u16>().map_err(|_| bad())?;
        if host.is_empty() {
            return Err(bad());
        }
        out.push(Address {
            host: host.to_string(),
            port,
        });
    }
    if out.is_empty() {
        return Err(Error::InvalidBootstrap(format!(
            "no host:port in {servers:?}"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_lists_parse_with_ipv6_brackets_and_reject_garbage() {
        let parsed = parse_bootstrap(" a:1, [::1]:9092 ,").unwrap();
        assert_eq!(parsed[0].to_string(), "a:1");
        assert_eq!(parsed[1].host, "::1");
        assert_eq!(parsed[1].to_string(), "[::1]:9092");
        for bad in ["", "a", "a:x", ":1", "a:70000"] {
            assert!(parse_bootstrap(bad).is_err(), "{bad:?}");
        }
    }
}
