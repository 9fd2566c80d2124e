//! Connection limits as Kafka's `ConnectionQuotas` applies them (KIP-402, KIP-612):
//!
//! - `max.connections` (broker-wide) and `listener.name.<l>.max.connections`: at the limit
//!   the acceptor stops accepting until a connection closes; new clients wait in the
//!   listen backlog. The inter-broker listener is exempt from the broker-wide limit when
//!   the broker has other listeners, so replication never starves.
//! - `max.connections.per.ip` (+ `max.connections.per.ip.overrides`, `host:count,…`): a
//!   connection past its address's limit is closed at once.
//! - `max.connection.creation.rate` (broker-wide, inter-broker listener exempt) and
//!   `listener.name.<l>.max.connection.creation.rate`: past the rate, the acceptor waits
//!   the throttle time Kafka's windowed rate gives before accepting again.
//!
//! Refusals are logged once per burst (the first, then a count every 10 s), never per
//! connection.

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::config::BrokerConfig;
use crate::security::quotas::rate::{Rate, Windows};
use crate::security::quotas::window_ms_i32;

const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Counts {
    total: usize,
    per_listener: HashMap<String, usize>,
    per_ip: HashMap<IpAddr, usize>,
    broker_rate: Rate,
    listener_rates: HashMap<String, Rate>,
    ip_rates: HashMap<IpAddr, Rate>,
    last_refusal_log: Option<Instant>,
    unlogged_refusals: u64,
}

struct Inner {
    counts: Mutex<Counts>,
    /// Woken when a connection closes (a slot may be free).
    freed: Notify,
}

/// The configured limits: replaced whole when the dynamic configs change them.
struct Limits {
    max_connections: usize,
    per_listener_max: HashMap<String, usize>,
    per_ip_max: usize,
    per_ip_overrides: HashMap<IpAddr, usize>,
    creation_rate: f64,
    per_listener_rate: HashMap<String, f64>,
    /// Exempt from the broker-wide limits (only when there are other listeners).
    protected_listener: Option<String>,
    windows: Windows,
}

pub struct ConnectionLimits {
    limits: RwLock<Arc<Limits>>,
    started: Instant,
    inner: Arc<Inner>,
}

/// One open connection's place in the counts, given back when dropped.
pub struct Slot {
    inner: Arc<Inner>,
    listener: String,
    ip: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self
            .inner
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.per_listener.get_mut(&self.listener) {
            *n = n.saturating_sub(1);
        }
        if let Some(n) = c.per_ip.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                c.per_ip.remove(&self.ip);
            }
        }
        drop(c);
        self.inner.freed.notify_waiters();
    }
}

fn as_count(n: i32) -> usize {
    usize::try_from(n).unwrap_or(0)
}

fn invalid(key: &str, value: &str, reason: &str) -> anyhow::Error {
    kafkalite_core::Error::InvalidConfig {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    }
    .into()
}

/// `host:count,host:count` (a host name counts for every address it resolves to).
fn parse_overrides(value: &str) -> anyhow::Result<HashMap<IpAddr, usize>> {
    let key = "max.connections.per.ip.overrides";
    let mut out = HashMap::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (host, count) = item
            .rsplit_once(':')
            .ok_or_else(|| invalid(key, value, &format!("'{item}' is not host:count")))?;
        let count: usize = count
            .trim()
            .parse()
            .map_err(|_| invalid(key, value, &format!("'{count}' is not a count")))?;
        let host = host.trim().trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => (host, 0)
                .to_socket_addrs()
                .map_err(|e| invalid(key, value, &format!("cannot resolve '{host}': {e}")))?
                .map(|a| a.ip())
                .collect(),
        };
        for ip in addrs {
            out.insert(ip, count);
        }
    }
    Ok(out)
}

impl Limits {
    fn from_config(config: &BrokerConfig) -> anyhow::Result<Limits> {
        let s = &config.settings;
        let mut per_listener_max = HashMap::new();
        let mut per_listener_rate = HashMap::new();
        for listener in &config.listeners {
            for (key, into) in [
                ("max.connections", &mut per_listener_max),
                ("max.connection.creation.rate", &mut per_listener_rate),
            ] {
                let prefixed = format!("listener.name.{}.{key}", listener.name.to_lowercase());
                if let Some(v) = config.raw.get(&prefixed) {
                    let n: i32 = v.trim().parse().ok().filter(|n| *n >= 0).ok_or_else(|| {
                        invalid(&prefixed, v, "must be a whole number of at least 0")
                    })?;
                    into.insert(listener.name.clone(), n);
                }
            }
        }
        let protected_listener = (config.listeners.len() > 1)
            .then(|| s.get("inter.broker.listener.name"))
            .flatten();
        Ok(Limits {
            max_connections: as_count(s.int("max.connections")),
            per_listener_max: per_listener_max
                .into_iter()
                .map(|(k, v)| (k, as_count(v)))
                .collect(),
            per_ip_max: as_count(s.int("max.connections.per.ip")),
            per_ip_overrides: parse_overrides(
                &s.get("max.connections.per.ip.overrides")
                    .unwrap_or_default(),
            )?,
            creation_rate: f64::from(s.int("max.connection.creation.rate")),
            per_listener_rate: per_listener_rate
                .into_iter()
                .map(|(k, v)| (k, f64::from(v)))
                .collect(),
            protected_listener,
            windows: Windows {
                samples: as_count(s.int("quota.window.num")).max(1),
                window_ms: i64::from(s.int("quota.window.size.seconds")) * 1000,
            },
        })
    }
}

impl Limits {
    fn protected(&self, listener: &str) -> bool {
        self.protected_listener.as_deref() == Some(listener)
    }
}

impl ConnectionLimits {
    pub fn from_config(config: &BrokerConfig) -> anyhow::Result<ConnectionLimits> {
        Ok(ConnectionLimits {
            limits: RwLock::new(Arc::new(Limits::from_config(config)?)),
            started: Instant::now(),
            inner: Arc::new(Inner {
                counts: Mutex::default(),
                freed: Notify::new(),
            }),
        })
    }

    /// Whether `config`'s connection limits are valid (an error names the key).
    pub fn validate(config: &BrokerConfig) -> anyhow::Result<()> {
        Limits::from_config(config).map(|_| ())
    }

    /// Apply `config`'s limits from now on (dynamic `max.connections` and the like, as
    /// Kafka's `ConnectionQuotas` reconfigures): open connections stay, and an acceptor
    /// waiting for a slot looks again at once.
    pub fn reconfigure(&self, config: &BrokerConfig) -> anyhow::Result<()> {
        let limits = Arc::new(Limits::from_config(config)?);
        *self
            .limits
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = limits;
        self.inner.freed.notify_waiters();
        Ok(())
    }

    fn limits(&self) -> Arc<Limits> {
        Arc::clone(
            &self
                .limits
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.inner
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn has_slot(&self, listener: &str) -> bool {
        let l = self.limits();
        let c = self.counts();
        let on_listener = c.per_listener.get(listener).copied().unwrap_or(0);
        let listener_ok = l
            .per_listener_max
            .get(listener)
            .is_none_or(|max| on_listener < *max);
        listener_ok && (l.protected(listener) || c.total < l.max_connections)
    }

    /// Wait until `listener` may accept one more connection (`max.connections`, the
    /// listener's own limit, and the creation rates).
    pub async fn wait_to_accept(&self, listener: &str) {
        loop {
            let freed = self.inner.freed.notified();
            if self.has_slot(listener) {
                break;
            }
            // A closed connection wakes this; the timeout re-checks anyway.
            let _ = tokio::time::timeout(Duration::from_millis(500), freed).await;
        }
        let throttle = self.creation_throttle(listener);
        if throttle > 0 {
            tokio::time::sleep(Duration::from_millis(throttle)).await;
        }
    }

    /// Count a new connection on the creation rates; how long to wait before the next.
    fn creation_throttle(&self, listener: &str) -> u64 {
        let now = i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let l = self.limits();
        let windows = l.windows;
        let mut c = self.counts();
        let mut throttle = 0;
        if !l.protected(listener) && l.creation_rate < f64::from(i32::MAX) {
            throttle = c
                .broker_rate
                .record_and_throttle(windows, l.creation_rate, 1.0, now);
        }
        if let Some(rate) = l.per_listener_rate.get(listener) {
            let t = c
                .listener_rates
                .entry(listener.to_string())
                .or_default()
                .record_and_throttle(windows, *rate, 1.0, now);
            throttle = throttle.max(t);
        }
        // Bounded at one quota window, as Kafka's ConnectionQuotas bounds it.
        u64::try_from(throttle.min(window_ms_i32(windows))).unwrap_or(0)
    }

    /// The line to log for a refused connection, if one is due this burst.
    fn refusal_line(c: &mut Counts, line: impl FnOnce(u64) -> String) -> Option<String> {
        c.unlogged_refusals += 1;
        let now = Instant::now();
        if c.last_refusal_log
            .is_some_and(|t| now.duration_since(t) < REFUSAL_LOG_INTERVAL)
        {
            return None;
        }
        let text = line(c.unlogged_refusals);
        c.last_refusal_log = Some(now);
        c.unlogged_refusals = 0;
        Some(text)
    }

    /// Count a connection from `ip` against its `connection_creation_rate` (an ip entity's
    /// quota, KIP-612): `Err` (with the line to log, if due) when past it — the
    /// connection is closed.
    pub fn check_ip_rate(&self, ip: IpAddr, rate: f64) -> Result<(), Option<String>> {
        let now = i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let windows = self.limits().windows;
        let mut c = self.counts();
        let throttle = c
            .ip_rates
            .entry(ip)
            .or_default()
            .record_and_throttle(windows, rate, 1.0, now);
        if throttle == 0 {
            return Ok(());
        }
        Err(Self::refusal_line(&mut c, |n| {
            format!(
                "Rejected connection from /{ip}: past its connection_creation_rate of {rate} \
                 per second; {n} refused since the last report"
            )
        }))
    }

    /// Take a slot for a connection from `ip` accepted on `listener`, or the line to log
    /// (if one is due this burst) when its address is at `max.connections.per.ip`.
    pub fn admit(&self, listener: &str, ip: IpAddr) -> Result<Slot, Option<String>> {
        let l = self.limits();
        let max_ip = l.per_ip_overrides.get(&ip).copied().unwrap_or(l.per_ip_max);
        let mut c = self.counts();
        let on_ip = c.per_ip.get(&ip).copied().unwrap_or(0);
        if on_ip >= max_ip {
            return Err(Self::refusal_line(&mut c, |n| {
                format!(
                    "Rejected connection from /{ip} on listener {listener}: the address already \
                     has the configured maximum of {max_ip} connections (max.connections.per.ip); \
                     {n} refused since the last report"
                )
            }));
        }
        c.total += 1;
        *c.per_listener.entry(listener.to_string()).or_default() += 1;
        *c.per_ip.entry(ip).or_default() += 1;
        Ok(Slot {
            inner: Arc::clone(&self.inner),
            listener: listener.to_string(),
            ip,
        })
    }

    /// Open connections: (total, on `listener`).
    #[must_use]
    pub fn open(&self, listener: &str) -> (usize, usize) {
        let c = self.counts();
        (c.total, c.per_listener.get(listener).copied().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn limits(pairs: &[(&str, &str)]) -> ConnectionLimits {
        let pairs: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ConnectionLimits::from_config(&BrokerConfig::from_pairs(&pairs).unwrap()).unwrap()
    }

    #[test]
    fn per_ip_limits_refuse_and_log_once_per_burst() {
        let l = limits(&[
            ("max.connections.per.ip", "2"),
            (
                "max.connections.per.ip.overrides",
                "127.0.0.9:0,127.0.0.8:5",
            ),
        ]);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let a = l.admit("PLAINTEXT", ip).unwrap();
        let _b = l.admit("PLAINTEXT", ip).unwrap();
        let first = l.admit("PLAINTEXT", ip).err().unwrap().unwrap();
        assert!(first.contains("maximum of 2 connections"), "{first}");
        assert_eq!(
            l.admit("PLAINTEXT", ip).err(),
            Some(None),
            "logged once per burst"
        );
        drop(a);
        assert!(l.admit("PLAINTEXT", ip).is_ok(), "a slot came back");
        assert!(l.admit("PLAINTEXT", "127.0.0.9".parse().unwrap()).is_err());
        for _ in 0..5 {
            std::mem::forget(l.admit("PLAINTEXT", "127.0.0.8".parse().unwrap()).unwrap());
        }
        assert!(l.admit("PLAINTEXT", "127.0.0.8".parse().unwrap()).is_err());
    }

    #[test]
    fn an_ip_past_its_connection_creation_rate_is_refused() {
        let l = limits(&[]);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        // 1 per second over 11 one-second windows: about ten at once, then refusals.
        let accepted = (0..20).filter(|_| l.check_ip_rate(ip, 1.0).is_ok()).count();
        assert!((9..=11).contains(&accepted), "{accepted}");
        assert!(l.check_ip_rate("127.0.0.2".parse().unwrap(), 1.0).is_ok());
    }

    #[test]
    fn bad_overrides_name_the_key() {
        let pairs: BTreeMap<String, String> = [(
            "max.connections.per.ip.overrides".to_string(),
            "127.0.0.1".to_string(),
        )]
        .into();
        let e = ConnectionLimits::from_config(&BrokerConfig::from_pairs(&pairs).unwrap())
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("max.connections.per.ip.overrides"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn the_broker_and_listener_limits_hold_the_acceptor() {
        let l = limits(&[("max.connections", "1")]);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        l.wait_to_accept("PLAINTEXT").await;
        let slot = l.admit("PLAINTEXT", ip).unwrap();
        let waited =
            tokio::time::timeout(Duration::from_millis(100), l.wait_to_accept("PLAINTEXT"));
        assert!(
            waited.await.is_err(),
            "at max.connections the acceptor waits"
        );
        drop(slot);
        tokio::time::timeout(Duration::from_secs(2), l.wait_to_accept("PLAINTEXT"))
            .await
            .unwrap();
        let l = limits(&[("listener.name.plaintext.max.connections", "0")]);
        let waited =
            tokio::time::timeout(Duration::from_millis(100), l.wait_to_accept("PLAINTEXT"));
        assert!(waited.await.is_err());
    }
}
