//! Client quotas as Kafka enforces them (KIP-13, KIP-55, KIP-124, KIP-219): the quotas
//! (`store`), their entities and keys (`entity`), and one windowed rate per quota sensor
//! (`rate`). A request over its quota is answered at once with `throttle_time_ms`, then its
//! connection reads nothing more for that long (`net::connection`).
//!
//! What is measured, as in Kafka: `producer_byte_rate` the size of each Produce request,
//! `consumer_byte_rate` the size of each Fetch response (a throttled fetch is answered
//! empty and not counted), `request_percentage` the time spent handling requests (as a
//! percentage of one thread). Replicas' fetches are never throttled.

pub mod entity;
pub mod mutation;
pub mod rate;
pub mod store;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use mutation::{Buckets, MutationQuota, MutationSource};
use rate::{Rate, Windows};
use store::QuotaStore;

/// What a quota sensor measures, one per quota key enforced on the data path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuotaKind {
    Produce,
    Fetch,
    Request,
}

impl QuotaKind {
    #[must_use]
    pub fn key(self) -> &'static str {
        match self {
            QuotaKind::Produce => entity::PRODUCER_BYTE_RATE,
            QuotaKind::Fetch => entity::CONSUMER_BYTE_RATE,
            QuotaKind::Request => entity::REQUEST_PERCENTAGE,
        }
    }
}

/// One quota window in ms, the bound of throttles Kafka bounds.
#[must_use]
pub fn window_ms_i32(windows: Windows) -> i32 {
    i32::try_from(windows.window_ms).unwrap_or(i32::MAX)
}

/// Sensors idle this long are dropped (Kafka: an hour).
const SENSOR_IDLE_MS: i64 = 3_600_000;

pub struct ClientQuotas {
    pub store: QuotaStore,
    pub windows: Windows,
    sensors: Mutex<HashMap<(QuotaKind, String, String), Rate>>,
    mutations: Buckets,
    started: Instant,
    last_sweep_ms: Mutex<i64>,
}

impl ClientQuotas {
    #[must_use]
    pub fn new(store: QuotaStore, windows: Windows) -> ClientQuotas {
        ClientQuotas {
            store,
            windows,
            sensors: Mutex::default(),
            mutations: Buckets::default(),
            started: Instant::now(),
            last_sweep_ms: Mutex::new(0),
        }
    }

    fn now_ms(&self) -> i64 {
        i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    /// Count `value` against the quota of `kind` that applies to `user` (the principal's
    /// name) with `client_id`; the throttle time in ms, 0 when within it (or none applies).
    pub fn record(&self, kind: QuotaKind, user: &str, client_id: &str, value: f64) -> i32 {
        let Some(m) = self.store.matching(kind.key(), user, client_id) else {
            return 0;
        };
        let now = self.now_ms();
        let mut sensors = self
            .sensors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.sweep(&mut sensors, now);
        let throttle = sensors
            .entry((kind, m.user_tag, m.client_tag))
            .or_default()
            .record_and_throttle(self.windows, m.limit, value, now);
        match kind {
            // Kafka's ClientRequestQuotaManager bounds a request-time throttle at one
            // quota window; byte rates are not bounded.
            QuotaKind::Request => throttle.min(window_ms_i32(self.windows)),
            QuotaKind::Produce | QuotaKind::Fetch => throttle,
        }
    }

    /// The `controller_mutation_rate` of one CreateTopics, CreatePartitions or
    /// DeleteTopics request; `strict` for versions that know THROTTLING_QUOTA_EXCEEDED.
    #[must_use]
    pub fn mutations<'a>(
        &'a self,
        user: &'a str,
        client_id: &'a str,
        strict: bool,
    ) -> MutationQuota<'a> {
        let source = MutationSource {
            store: &self.store,
            windows: self.windows,
            buckets: &self.mutations,
            started: self.started,
        };
        MutationQuota::new(source, user, client_id, strict)
    }

    /// Take back `value` (a throttled fetch sends no data, so it is not counted).
    pub fn unrecord(&self, kind: QuotaKind, user: &str, client_id: &str, value: f64) {
        let Some(m) = self.store.matching(kind.key(), user, client_id) else {
            return;
        };
        let now = self.now_ms();
        let mut sensors = self
            .sensors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(rate) = sensors.get_mut(&(kind, m.user_tag, m.client_tag)) {
            rate.record(self.windows, -value, now);
        }
    }

    /// The most one response may carry without being throttled for sure (Kafka's
    /// `maxValueInQuotaWindow`: the quota over `samples − 1` windows); `None`: no quota.
    #[must_use]
    pub fn max_value_in_window(&self, kind: QuotaKind, user: &str, client_id: &str) -> Option<f64> {
        let m = self.store.matching(kind.key(), user, client_id)?;
        Some(m.limit * self.windows.full_windows_ms() as f64 / 1000.0)
    }

    /// Drop sensors idle for an hour, at most once a minute.
    fn sweep(&self, sensors: &mut HashMap<(QuotaKind, String, String), Rate>, now: i64) {
        let mut last = self
            .last_sweep_ms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if now - *last < 60_000 {
            return;
        }
        *last = now;
        sensors.retain(|_, r| r.last_event_ms().is_some_and(|t| now - t < SENSOR_IDLE_MS));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::quotas::entity::{QuotaEntity, USER};

    #[test]
    fn a_user_quota_is_shared_by_its_client_ids_and_others_are_free() {
        let quotas = ClientQuotas::new(
            QuotaStore::pushed(),
            Windows {
                samples: 11,
                window_ms: 1000,
            },
        );
        let alice: QuotaEntity = [(USER.to_string(), Some("alice".to_string()))].into();
        quotas
            .store
            .alter(&[(
                alice,
                vec![(entity::PRODUCER_BYTE_RATE.into(), Some(1000.0))],
            )])
            .unwrap();
        // 10 s of quota at once: within; one byte more for another client id: over.
        assert_eq!(quotas.record(QuotaKind::Produce, "alice", "a", 10_000.0), 0);
        assert!(quotas.record(QuotaKind::Produce, "alice", "b", 1000.0) > 0);
        assert_eq!(quotas.record(QuotaKind::Produce, "bob", "a", 1e9), 0);
        assert_eq!(quotas.record(QuotaKind::Fetch, "alice", "a", 1e9), 0);
        assert_eq!(
            quotas.max_value_in_window(QuotaKind::Produce, "alice", "x"),
            Some(10_000.0)
        );
    }
}
