//! Client telemetry (KIP-714): GetTelemetrySubscriptions tells a client what to push and
//! how often, from the client-metrics subscriptions its metadata matches; PushTelemetry
//! takes the pushed OTLP metrics, checked as Kafka 4.1.1's `ClientMetricsManager` checks
//! them, and keeps each client instance's latest points for the metrics endpoint (where
//! Kafka would hand them to a receiver plugin).
//!
//! A client instance lives while it keeps asking: it is forgotten after
//! max(60 s, 3 × its push interval) without a request, and at most `INSTANCES_MAX` are kept
//! (the least recently seen goes first), as Kafka's cache does.

mod instance;
pub mod otlp;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use uuid::Uuid;

pub use instance::{ClientMeta, Instance, Push};

use crate::config::client_metrics::{self, INTERVAL_MS_DEFAULT};
use crate::config::client_metrics_store::ClientMetricsStore;
use crate::errors::{codes, ApiError};

/// The compression types offered, in Kafka's order of preference: zstd, lz4, gzip, snappy.
pub const ACCEPTED_COMPRESSION: [i8; 4] = [4, 3, 1, 2];
const INSTANCES_MAX: usize = 16_384;
const EXPIRY_MS_MIN: u64 = 60_000;

/// What GetTelemetrySubscriptions answers.
pub struct Subscription {
    pub client_instance_id: Uuid,
    pub subscription_id: i32,
    pub push_interval_ms: i32,
    pub requested_metrics: Vec<String>,
}

pub struct Telemetry {
    started: Instant,
    instances: Mutex<HashMap<Uuid, Instance>>,
    /// `telemetry.max.bytes`: the largest (compressed) push accepted.
    max_bytes: i32,
}

impl Telemetry {
    #[must_use]
    pub fn new(max_bytes: i32) -> Telemetry {
        Telemetry {
            started: Instant::now(),
            instances: Mutex::default(),
            max_bytes,
        }
    }

    /// `telemetry.max.bytes`, which GetTelemetrySubscriptions tells clients.
    #[must_use]
    pub fn max_bytes(&self) -> i32 {
        self.max_bytes
    }
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Instance>> {
        self.instances
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// GetTelemetrySubscriptions: a zero id gets a new one.
    pub fn subscriptions(
        &self,
        store: &ClientMetricsStore,
        asked: Uuid,
        meta: ClientMeta,
    ) -> Result<Subscription, ApiError> {
        let now = self.now_ms();
        let mut instances = self.lock();
        let id = if asked.is_nil() {
            loop {
                let id = Uuid::new_v4();
                if !instances.contains_key(&id) {
                    break id;
                }
            }
        } else {
            asked
        };
        let meta = ClientMeta {
            instance_id: id,
            ..meta
        };
        let instance = current(&mut instances, store, id, meta, now);
        if !instance.may_get(now) {
            return Err(ApiError::new(
                codes::THROTTLING_QUOTA_EXCEEDED,
                format!(
                    "Request from the client [{asked}] arrived before the next push interval time"
                ),
            ));
        }
        instance.last_error = codes::NONE;
        Ok(Subscription {
            client_instance_id: id,
            subscription_id: instance.subscription_id,
            push_interval_ms: instance.push_interval_ms,
            requested_metrics: instance.metrics.clone(),
        })
    }

    /// PushTelemetry: the checks in Kafka's order, then the points kept.
    pub fn push(
        &self,
        store: &ClientMetricsStore,
        push: &Push<'_>,
        meta: ClientMeta,
    ) -> Result<(), ApiError> {
        let id = push.client_instance_id;
        // Kafka's reserved ids: the zero uuid and the metadata topic's one.
        if id.is_nil() || id == Uuid::from_u128(1) {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                format!("Invalid request from the client [{id}], invalid client instance id"),
            ));
        }
        let now = self.now_ms();
        let mut instances = self.lock();
        let instance = current(&mut instances, store, id, meta, now);
        let checked = instance.check_push(push, now, self.max_bytes);
        instance.terminating = push.terminating;
        if let Err(e) = checked {
            instance.last_error = e.code;
            return Err(e);
        }
        if !push.metrics.is_empty() {
            match decode(push, self.max_bytes) {
                Ok(points) => instance.points = points,
                Err(e) => {
                    instance.last_error = e.code;
                    return Err(e);
                }
            }
        }
        instance.last_error = codes::NONE;
        Ok(())
    }

    /// Every live instance's metadata and latest points, for the metrics endpoint.
    #[must_use]
    pub fn snapshot(&self) -> Vec<(ClientMeta, Vec<otlp::Point>)> {
        let now = self.now_ms();
        let mut instances = self.lock();
        instances.retain(|_, i| !i.expired(now));
        let mut out: Vec<_> = instances
            .values()
            .filter(|i| !i.points.is_empty())
            .map(|i| (i.meta.clone(), i.points.clone()))
            .collect();
        out.sort_by_key(|a| a.0.instance_id);
        out
    }
}

/// The instance for `id`: kept while the subscriptions are unchanged, made afresh (new
/// subscription id, push timers reset) when they changed or it is new.
fn current<'a>(
    instances: &'a mut HashMap<Uuid, Instance>,
    store: &ClientMetricsStore,
    id: Uuid,
    meta: ClientMeta,
    now: u64,
) -> &'a mut Instance {
    let generation = store.generation();
    let stale = instances
        .get(&id)
        .is_none_or(|i| i.generation < generation || i.expired(now));
    if stale {
        let meta = instances.get(&id).map_or(meta, |i| i.meta.clone());
        if instances.len() >= INSTANCES_MAX && !instances.contains_key(&id) {
            instances.retain(|_, i| !i.expired(now));
            if instances.len() >= INSTANCES_MAX {
                let oldest = instances
                    .values()
                    .min_by_key(|i| i.last_seen_ms)
                    .map(|i| i.meta.instance_id);
                if let Some(oldest) = oldest {
                    instances.remove(&oldest);
                }
            }
        }
        let (metrics, interval) = matching(store, &meta);
        instances.insert(id, Instance::new(meta, generation, metrics, interval));
    }
    let instance = instances.get_mut(&id).expect("inserted above");
    instance.last_seen_ms = now;
    instance.expiry_ms =
        EXPIRY_MS_MIN.max(3 * u64::try_from(instance.push_interval_ms).unwrap_or(0));
    instance
}

/// The metric prefixes and push interval of every subscription `meta` matches: the union
/// of prefixes (just `*` if one asks for all), the shortest interval.
fn matching(store: &ClientMetricsStore, meta: &ClientMeta) -> (Vec<String>, i32) {
    let mut metrics: Vec<String> = Vec::new();
    let mut interval = INTERVAL_MS_DEFAULT;
    for configs in store.all().values() {
        let patterns = configs
            .get(client_metrics::MATCH)
            .map(|m| client_metrics::patterns(&client_metrics::list(m)))
            .unwrap_or_else(|| Ok(Vec::new()));
        let Ok(patterns) = patterns else { continue };
        if !patterns
            .iter()
            .all(|(selector, regex)| regex.is_match(&meta.value(selector)))
        {
            continue;
        }
        if let Some(m) = configs.get(client_metrics::METRICS) {
            metrics.extend(client_metrics::list(m));
        }
        if let Some(Ok(ms)) = configs
            .get(client_metrics::INTERVAL_MS)
            .map(|v| client_metrics::interval_ms(v))
        {
            interval = interval.min(ms);
        }
    }
    if metrics.iter().any(|m| m == "*") {
        metrics = vec!["*".to_string()];
    }
    metrics.sort();
    metrics.dedup();
    (metrics, interval)
}

/// The points of a push; it may inflate to 16 times `max_bytes`.
fn decode(push: &Push<'_>, max_bytes: i32) -> Result<Vec<otlp::Point>, ApiError> {
    use kafkalite_core::records::compression::{decompress, Compression};
    let codec = Compression::from_attributes(i16::from(push.compression_type)).map_err(|_| {
        ApiError::new(
            codes::UNSUPPORTED_COMPRESSION_TYPE,
            "unknown compression type",
        )
    })?;
    let max = usize::try_from(max_bytes).unwrap_or(0).saturating_mul(16);
    let raw = if codec == Compression::None {
        push.metrics.to_vec()
    } else {
        decompress(codec, push.metrics, max).map_err(|e| {
            ApiError::new(
                codes::INVALID_RECORD,
                format!("cannot decompress the metrics: {e}"),
            )
        })?
    };
    otlp::points(&raw).map_err(|e| {
        ApiError::new(
            codes::INVALID_RECORD,
            format!("the metrics are not OTLP: {}", e.0),
        )
    })
}
