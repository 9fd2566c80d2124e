//! `controller_mutation_rate` (KIP-599): how many partitions a user / client id may create
//! or delete per second, through CreateTopics, CreatePartitions and DeleteTopics.
//!
//! As Kafka's `ControllerMutationQuotaManager`, a token bucket per sensor: it holds at most
//! `quota × samples × window` partitions, refills at the quota, and a mutation is taken
//! while the bucket is not empty (it may then go below zero). Clients new enough to know
//! THROTTLING_QUOTA_EXCEEDED (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+)
//! have topics refused once the bucket is below zero ("strict"); older ones are let
//! through and only throttled ("permissive"). Either way the response carries the
//! throttle time the bucket needs to come back to zero, and the channel is muted for it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use super::entity::CONTROLLER_MUTATION_RATE;
use super::rate::Windows;
use super::store::QuotaStore;
use crate::errors::{codes, ApiError};

/// Buckets of sensors idle this long are forgotten (Kafka: an hour).
const IDLE_MS: i64 = 3_600_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct TokenBucket {
    tokens: f64,
    last_ms: i64,
}

impl TokenBucket {
    fn full(burst: f64, now_ms: i64) -> TokenBucket {
        TokenBucket {
            tokens: burst,
            last_ms: now_ms,
        }
    }

    fn refill(&mut self, quota: f64, burst: f64, now_ms: i64) {
        let elapsed_s = (now_ms - self.last_ms).max(0) as f64 / 1000.0;
        self.tokens = (self.tokens + quota * elapsed_s).min(burst);
        self.last_ms = now_ms;
    }

    /// How long the bucket needs to refill to zero.
    fn throttle_ms(&self, quota: f64) -> i32 {
        if self.tokens >= 0.0 || quota <= 0.0 {
            return 0;
        }
        let ms = (-self.tokens / quota * 1000.0).ceil();
        if ms >= f64::from(i32::MAX) {
            i32::MAX
        } else {
            ms as i32
        }
    }
}

/// The buckets, by sensor (user tag, client-id tag).
#[derive(Default)]
pub(super) struct Buckets(Mutex<HashMap<(String, String), TokenBucket>>);

/// What a request's quota takes from its broker's `ClientQuotas`.
pub(super) struct MutationSource<'a> {
    pub store: &'a QuotaStore,
    pub windows: Windows,
    pub buckets: &'a Buckets,
    /// The quotas' clock: ms since this instant.
    pub started: Instant,
}

/// One request's use of the quota (Kafka's `ControllerMutationQuota`).
pub struct MutationQuota<'a> {
    quotas: MutationSource<'a>,
    user: &'a str,
    client_id: &'a str,
    strict: bool,
    throttle_ms: i32,
}

impl<'a> MutationQuota<'a> {
    pub(super) fn new(
        quotas: MutationSource<'a>,
        user: &'a str,
        client_id: &'a str,
        strict: bool,
    ) -> MutationQuota<'a> {
        MutationQuota {
            quotas,
            user,
            client_id,
            strict,
            throttle_ms: 0,
        }
    }

    /// Take `partitions` mutations: THROTTLING_QUOTA_EXCEEDED when a strict quota is
    /// already used up (nothing is taken then).
    pub fn record(&mut self, partitions: i64) -> Result<(), ApiError> {
        let quotas = &self.quotas;
        let Some(m) = quotas
            .store
            .matching(CONTROLLER_MUTATION_RATE, self.user, self.client_id)
        else {
            return Ok(());
        };
        let now = i64::try_from(quotas.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let burst = burst(quotas.windows, m.limit);
        let mut buckets = quotas
            .buckets
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if buckets.len() >= 1024 {
            buckets.retain(|_, b| now - b.last_ms < IDLE_MS);
        }
        let bucket = buckets
            .entry((m.user_tag, m.client_tag))
            .or_insert_with(|| TokenBucket::full(burst, now));
        bucket.refill(m.limit, burst, now);
        if self.strict && bucket.tokens < 0.0 {
            self.throttle_ms = self.throttle_ms.max(bucket.throttle_ms(m.limit));
            return Err(ApiError::new(
                codes::THROTTLING_QUOTA_EXCEEDED,
                "The throttling quota has been exceeded.",
            ));
        }
        bucket.tokens -= partitions.max(0) as f64;
        if !self.strict {
            self.throttle_ms = self.throttle_ms.max(bucket.throttle_ms(m.limit));
        }
        Ok(())
    }

    /// The throttle time the response carries (and the channel is muted for).
    #[must_use]
    pub fn throttle_ms(&self) -> i32 {
        self.throttle_ms
    }
}

/// The most a bucket holds: the quota over all the quota's windows.
fn burst(windows: Windows, quota: f64) -> f64 {
    quota * windows.samples as f64 * windows.window_ms as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::quotas::entity::{QuotaEntity, CLIENT_ID};
    use crate::security::quotas::store::QuotaStore;
    use crate::security::quotas::ClientQuotas;

    fn quotas(rate: f64) -> ClientQuotas {
        let q = ClientQuotas::new(
            QuotaStore::pushed(),
            Windows {
                samples: 2,
                window_ms: 1000,
            },
        );
        let admin: QuotaEntity = [(CLIENT_ID.to_string(), Some("admin".to_string()))].into();
        q.store
            .alter(&[(admin, vec![(CONTROLLER_MUTATION_RATE.into(), Some(rate))])])
            .unwrap();
        q
    }

    #[test]
    fn strict_refuses_once_the_bucket_is_below_zero() {
        let q = quotas(5.0);
        let mut m = q.mutations("", "admin", true);
        // A full bucket (5/s over 2 windows: 10) takes a request that overdraws it.
        m.record(8).unwrap();
        m.record(8).unwrap();
        assert_eq!(m.throttle_ms(), 0, "strict: throttled only when refused");
        let e = m.record(1).unwrap_err();
        assert_eq!(e.code, codes::THROTTLING_QUOTA_EXCEEDED);
        // 6 partitions below zero at 5/s: 1.2 s (the clock moved a little meanwhile).
        assert!(
            (1100..=1200).contains(&m.throttle_ms()),
            "{}",
            m.throttle_ms()
        );
        // Another client id has no quota.
        let mut other = q.mutations("", "someone", true);
        other.record(1_000).unwrap();
        assert_eq!(other.throttle_ms(), 0);
    }

    #[test]
    fn permissive_takes_everything_and_reports_the_throttle() {
        let q = quotas(5.0);
        let mut m = q.mutations("", "admin", false);
        m.record(20).unwrap();
        m.record(5).unwrap();
        assert!(
            (2900..=3000).contains(&m.throttle_ms()),
            "{}",
            m.throttle_ms()
        );
    }

    #[test]
    fn the_bucket_refills_at_the_quota_up_to_its_burst() {
        let mut b = TokenBucket::full(10.0, 0);
        b.tokens = -5.0;
        b.refill(5.0, 10.0, 1000);
        assert!((b.tokens - 0.0).abs() < 1e-9);
        b.refill(5.0, 10.0, 60_000);
        assert!((b.tokens - 10.0).abs() < 1e-9);
        assert_eq!(TokenBucket::full(10.0, 0).throttle_ms(5.0), 0);
    }
}
