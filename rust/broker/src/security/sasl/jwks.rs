//! Where OAUTHBEARER's JWKS comes from: a `file:` URL read once, or an `https:` URL
//! kept fresh as Kafka's `RefreshingHttpsJwks` keeps it: fetched at start-up (a failure
//! stops the broker, naming the URL), again every
//! `sasl.oauthbearer.jwks.endpoint.refresh.ms`, and sooner when a token names a key id
//! the set lacks (that token fails; the client's retry finds the new key), such early
//! fetches spaced by `sasl.oauthbearer.jwks.endpoint.retry.backoff.ms`, doubled after
//! each failure up to `...retry.backoff.max.ms`.
//!
//! The https client is rustls over a blocking socket on a thread of its own: one GET of
//! a small document now and then needs no HTTP library. The server is checked against
//! the `ssl.truststore.*` options of the OAUTHBEARER JAAS entry, where Kafka reads them,
//! else the listener's truststore.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::Value;

/// (kid, modulus, exponent) of a JWKS RSA key.
pub type RsaKey = (Option<String>, Vec<u8>, Vec<u8>);

/// A body larger than this is not a JWKS (and not read into memory).
const BODY_BYTES_MAX: usize = 1 << 20;
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The keys tokens are checked against.
#[derive(Debug, Default)]
pub struct KeySet {
    keys: RwLock<Vec<RsaKey>>,
    /// Set for an https set: wakes the refresher early.
    wake: Option<(Mutex<bool>, Condvar)>,
}

impl KeySet {
    #[must_use]
    pub fn fixed(keys: Vec<RsaKey>) -> Arc<KeySet> {
        Arc::new(KeySet {
            keys: RwLock::new(keys),
            wake: None,
        })
    }

    #[must_use]
    pub fn current(&self) -> Vec<RsaKey> {
        self.keys.read().map(|k| k.clone()).unwrap_or_default()
    }

    /// A token named key id `kid`, which the set lacks: fetch the set again soon.
    pub fn missing(&self, _kid: &str) {
        if let Some((flag, cv)) = &self.wake {
            if let Ok(mut f) = flag.lock() {
                *f = true;
                cv.notify_one();
            }
        }
    }
}

/// The RSA keys of a JWKS document.
pub fn parse(text: &str) -> Result<Vec<RsaKey>, String> {
    let doc: Value =
        serde_json::from_str(text).map_err(|e| format!("the JWKS is not JSON: {e}"))?;
    let keys = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("the JWKS has no \"keys\" array")?;
    let mut out = Vec::new();
    for k in keys {
        if k.get("kty").and_then(Value::as_str) != Some("RSA") {
            continue;
        }
        let field = |name: &str| -> Result<Vec<u8>, String> {
            let v = k.get(name).and_then(Value::as_str);
            let v = v.ok_or(format!("an RSA key has no {name}"))?;
            URL_SAFE_NO_PAD
                .decode(v.trim_end_matches('='))
                .map_err(|_| format!("the JWKS {name} is not base64url"))
        };
        let kid = k.get("kid").and_then(Value::as_str).map(String::from);
        out.push((kid, field("n")?, field("e")?));
    }
    if out.is_empty() {
        return Err("the JWKS has no RSA key".into());
    }
    Ok(out)
}

/// Where the https set is and how often to fetch it.
pub struct Endpoint {
    pub url: String,
    pub tls: Arc<ClientConfig>,
    pub refresh: Duration,
    pub backoff: Duration,
    pub backoff_max: Duration,
}

/// (host, port, path) of an https URL.
fn split_url(url: &str) -> Result<(String, u16, String), String> {
    let rest = url.strip_prefix("https://").ok_or("not an https URL")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || p.is_empty() => (
            h,
            p.parse()
                .map_err(|_| format!("bad port {p:?} in the URL"))?,
        ),
        _ => (authority, 443),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err("no host in the URL".into());
    }
    Ok((host.to_string(), port, path.to_string()))
}

/// The body of an HTTP/1.1 response (Content-Length, chunked, or read to the close).
fn response_body(raw: &[u8]) -> Result<Vec<u8>, String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no HTTP header in the answer")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let body = &raw[split + 4..];
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(format!("the server answered {status:?}"));
    }
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut out = Vec::new();
        let mut rest = body;
        loop {
            let line_end = rest
                .windows(2)
                .position(|w| w == b"\r\n")
                .ok_or("truncated chunked body")?;
            let size_text = String::from_utf8_lossy(&rest[..line_end]).to_string();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| "bad chunk size")?;
            rest = &rest[line_end + 2..];
            if size == 0 {
                return Ok(out);
            }
            if rest.len() < size {
                return Err("truncated chunk".into());
            }
            out.extend_from_slice(&rest[..size]);
            rest = rest.get(size + 2..).ok_or("truncated chunk")?;
        }
    }
    if let Some(len) = header("content-length") {
        let len: usize = len.parse().map_err(|_| "bad Content-Length")?;
        return body
            .get(..len)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| "truncated body".into());
    }
    Ok(body.to_vec())
}

/// GET the JWKS document at `endpoint.url` and parse its RSA keys.
pub fn fetch(endpoint: &Endpoint) -> Result<Vec<RsaKey>, String> {
    let (host, port, path) = split_url(&endpoint.url)?;
    let name = ServerName::try_from(host.clone()).map_err(|e| format!("bad host: {e}"))?;
    let conn = rustls::ClientConnection::new(Arc::clone(&endpoint.tls), name)
        .map_err(|e| e.to_string())?;
    let sock = TcpStream::connect((host.as_str(), port))
        .map_err(|e| format!("cannot connect to {host}:{port}: {e}"))?;
    sock.set_read_timeout(Some(IO_TIMEOUT)).ok();
    sock.set_write_timeout(Some(IO_TIMEOUT)).ok();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n\
         User-Agent: kafkalite\r\nConnection: close\r\n\r\n"
    );
    tls.write_all(request.as_bytes())
        .map_err(|e| format!("https request failed: {e}"))?;
    let mut raw = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match tls.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
            // A server closing without close_notify after a whole answer is common.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(format!("https answer failed: {e}")),
        }
        if raw.len() > BODY_BYTES_MAX {
            return Err(format!("the answer exceeds {BODY_BYTES_MAX} bytes"));
        }
    }
    let body = response_body(&raw)?;
    parse(&String::from_utf8_lossy(&body))
}

/// The set at `endpoint`, fetched now, and a thread keeping it fresh for the life of the
/// process (it holds only a weak reference: a dropped set ends it).
pub fn refreshing(endpoint: Endpoint) -> Result<Arc<KeySet>, String> {
    let keys = fetch(&endpoint)?;
    let set = Arc::new(KeySet {
        keys: RwLock::new(keys),
        wake: Some((Mutex::new(false), Condvar::new())),
    });
    let weak = Arc::downgrade(&set);
    std::thread::Builder::new()
        .name("jwks-refresh".into())
        .spawn(move || refresh_loop(&endpoint, &weak))
        .map_err(|e| e.to_string())?;
    Ok(set)
}

fn refresh_loop(endpoint: &Endpoint, set: &std::sync::Weak<KeySet>) {
    let mut backoff = endpoint.backoff;
    let mut last = Instant::now();
    loop {
        let Some(strong) = set.upgrade() else { return };
        // Sleep until the period is over or a missing key id wakes us (no sooner than
        // the backoff after the last fetch).
        if let Some((flag, cv)) = &strong.wake {
            let Ok(mut woken) = flag.lock() else { return };
            let deadline = last + endpoint.refresh;
            while !*woken && Instant::now() < deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                // Wake now and then to notice a dropped set.
                let wait = left.min(Duration::from_secs(5));
                woken = match cv.wait_timeout(woken, wait) {
                    Ok((w, _)) => w,
                    Err(_) => return,
                };
                if set.strong_count() <= 1 {
                    return;
                }
            }
            *woken = false;
        }
        let since = last.elapsed();
        if since < backoff {
            std::thread::sleep(backoff - since);
        }
        last = Instant::now();
        match fetch(endpoint) {
            Ok(keys) => {
                if let Ok(mut k) = strong.keys.write() {
                    *k = keys;
                }
                backoff = endpoint.backoff;
            }
            Err(why) => {
                kafkalite_core::logging::log(
                    kafkalite_core::logging::Level::Warn,
                    "kafkalite.security.Jwks",
                    &format!("Refreshing the JWKS from {} failed: {why}", endpoint.url),
                );
                backoff = (backoff * 2).min(endpoint.backoff_max);
            }
        }
    }
}

/// A rustls client config trusting `roots`.
#[must_use]
pub fn client_config(roots: RootCertStore) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_bodies() {
        assert_eq!(
            split_url("https://127.0.0.1:8443/jwks.json").unwrap(),
            ("127.0.0.1".into(), 8443, "/jwks.json".into())
        );
        assert_eq!(
            split_url("https://issuer.example").unwrap(),
            ("issuer.example".into(), 443, "/".into())
        );
        assert!(split_url("http://x/").is_err());
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}trailing";
        assert_eq!(response_body(plain).unwrap(), b"{}");
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{\"\r\n1\r\n}\r\n0\r\n\r\n";
        assert_eq!(response_body(chunked).unwrap(), b"{\"}");
        let missing = b"HTTP/1.1 404 Not Found\r\n\r\n";
        assert!(response_body(missing).unwrap_err().contains("404"));
    }
}
