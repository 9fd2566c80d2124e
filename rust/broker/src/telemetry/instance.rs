//! One client instance as the broker knows it: its metadata (what `match` selectors test),
//! its subscription, and the push timing rules of Kafka's `ClientMetricsInstance`.

use uuid::Uuid;

use super::otlp::Point;
use crate::errors::{codes, ApiError};

/// A push, as the request carries it.
pub struct Push<'a> {
    pub client_instance_id: Uuid,
    pub subscription_id: i32,
    pub terminating: bool,
    pub compression_type: i8,
    pub metrics: &'a [u8],
}

/// What a client's `match` selectors are tested against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientMeta {
    pub instance_id: Uuid,
    pub client_id: String,
    /// From ApiVersions v3+ ("unknown" before, as Kafka says).
    pub software_name: String,
    pub software_version: String,
    pub source_address: String,
    pub source_port: u16,
}

impl ClientMeta {
    /// The value of a selector (`config::client_metrics::SELECTORS`).
    #[must_use]
    pub fn value(&self, selector: &str) -> String {
        match selector {
            "client_instance_id" => self.instance_id.to_string(),
            "client_id" => self.client_id.clone(),
            "client_software_name" => self.software_name.clone(),
            "client_software_version" => self.software_version.clone(),
            "client_source_address" => self.source_address.clone(),
            "client_source_port" => self.source_port.to_string(),
            _ => String::new(),
        }
    }
}

pub struct Instance {
    pub meta: ClientMeta,
    /// The store's generation this subscription was computed at.
    pub generation: u64,
    pub subscription_id: i32,
    pub metrics: Vec<String>,
    pub push_interval_ms: i32,
    last_get_ms: Option<u64>,
    last_push_ms: Option<u64>,
    pub terminating: bool,
    /// The last error answered (a GetTelemetrySubscriptions right after UNKNOWN_SUBSCRIPTION_ID
    /// or UNSUPPORTED_COMPRESSION_TYPE is not throttled).
    pub last_error: i16,
    pub last_seen_ms: u64,
    pub expiry_ms: u64,
    /// The latest points pushed.
    pub points: Vec<Point>,
}

impl Instance {
    #[must_use]
    pub fn new(meta: ClientMeta, generation: u64, metrics: Vec<String>, interval: i32) -> Instance {
        let subscription_id = subscription_id(&metrics, interval, meta.instance_id);
        Instance {
            meta,
            generation,
            subscription_id,
            metrics,
            push_interval_ms: interval,
            last_get_ms: None,
            last_push_ms: None,
            terminating: false,
            last_error: codes::NONE,
            last_seen_ms: 0,
            expiry_ms: 0,
            points: Vec::new(),
        }
    }

    #[must_use]
    pub fn expired(&self, now: u64) -> bool {
        now.saturating_sub(self.last_seen_ms) > self.expiry_ms
    }

    fn interval(&self) -> u64 {
        u64::try_from(self.push_interval_ms).unwrap_or(0)
    }

    /// A GetTelemetrySubscriptions is answered once per push interval (since the last get
    /// or push), unless the last answer asked the client to come back at once.
    pub fn may_get(&mut self, now: u64) -> bool {
        let last = self.last_get_ms.max(self.last_push_ms);
        let due = last.is_none_or(|t| now.saturating_sub(t) >= self.interval());
        if due {
            self.last_get_ms = Some(now);
        }
        due || self.last_error == codes::UNKNOWN_SUBSCRIPTION_ID
            || self.last_error == codes::UNSUPPORTED_COMPRESSION_TYPE
    }

    /// Kafka's push checks, in its order: after a terminating push nothing more; a push
    /// right after a get is accepted (clients jitter their interval), otherwise one per
    /// interval unless terminating; the subscription id; the compression type; the size.
    pub fn check_push(
        &mut self,
        push: &Push<'_>,
        now: u64,
        max_bytes: i32,
    ) -> Result<(), ApiError> {
        let id = push.client_instance_id;
        if self.terminating {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                format!(
                    "Client [{id}] sent the previous request with state terminating to TRUE, \
                     can not accept any requests after that"
                ),
            ));
        }
        let after_get = self.last_get_ms > self.last_push_ms;
        let due = after_get
            || self
                .last_push_ms
                .is_none_or(|t| now.saturating_sub(t) >= self.interval());
        if due {
            self.last_push_ms = Some(now);
        } else if !push.terminating {
            return Err(ApiError::new(
                codes::THROTTLING_QUOTA_EXCEEDED,
                format!(
                    "Request from the client [{id}] arrived before the next push interval time"
                ),
            ));
        }
        if push.subscription_id != self.subscription_id {
            return Err(ApiError::new(
                codes::UNKNOWN_SUBSCRIPTION_ID,
                format!("Unknown client subscription id for the client [{id}]"),
            ));
        }
        if !(0..=4).contains(&push.compression_type) {
            return Err(ApiError::new(
                codes::UNSUPPORTED_COMPRESSION_TYPE,
                format!(
                    "Unknown compression type [{}] is received in telemetry request from [{id}]",
                    push.compression_type
                ),
            ));
        }
        if push.metrics.len() > usize::try_from(max_bytes).unwrap_or(0) {
            return Err(ApiError::new(
                codes::TELEMETRY_TOO_LARGE,
                format!(
                    "Telemetry request from [{id}] is larger than the maximum allowed size \
                     [{max_bytes}]"
                ),
            ));
        }
        Ok(())
    }
}

/// Kafka's subscription id: CRC-32C of the metric list's text and the interval, XOR the
/// instance id's Java hash code. Only equality matters to clients.
#[must_use]
pub fn subscription_id(metrics: &[String], interval: i32, id: Uuid) -> i32 {
    let text = format!("[{}]{interval}", metrics.join(", "));
    let crc = kafkalite_core::records::batch::crc32c(text.as_bytes());
    let (hi, lo) = id.as_u64_pair();
    let hilo = hi ^ lo;
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
    let hash = ((hilo >> 32) as i32) ^ (hilo as i32);
    #[allow(clippy::cast_possible_wrap)]
    let crc = crc as i32;
    crc ^ hash
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `telemetry.max.bytes`' default.
    const MAX: i32 = 1_048_576;

    fn meta() -> ClientMeta {
        ClientMeta {
            instance_id: Uuid::from_u128(7),
            client_id: "app".into(),
            software_name: "apache-kafka-java".into(),
            software_version: "4.1.1".into(),
            source_address: "127.0.0.1".into(),
            source_port: 5000,
        }
    }

    fn push(subscription_id: i32, terminating: bool) -> Push<'static> {
        Push {
            client_instance_id: Uuid::from_u128(7),
            subscription_id,
            terminating,
            compression_type: 0,
            metrics: b"",
        }
    }

    #[test]
    fn pushes_follow_kafkas_timing() {
        let mut i = Instance::new(meta(), 0, vec!["*".into()], 1000);
        let sub = i.subscription_id;
        assert!(i.may_get(0));
        assert!(
            !i.may_get(10),
            "a second get within the interval is throttled"
        );
        assert!(
            i.check_push(&push(sub, false), 500, MAX).is_ok(),
            "right after a get"
        );
        let e = i.check_push(&push(sub, false), 900, MAX).unwrap_err();
        assert_eq!(e.code, codes::THROTTLING_QUOTA_EXCEEDED);
        assert!(i.check_push(&push(sub, false), 1500, MAX).is_ok());
        let e = i.check_push(&push(sub + 1, false), 2600, MAX).unwrap_err();
        assert_eq!(e.code, codes::UNKNOWN_SUBSCRIPTION_ID);
        i.last_error = e.code;
        assert!(i.may_get(2601), "a get right after UNKNOWN_SUBSCRIPTION_ID");
        let mut bad = push(sub, false);
        bad.compression_type = 9;
        let e = i.check_push(&bad, 3700, MAX).unwrap_err();
        assert_eq!(e.code, codes::UNSUPPORTED_COMPRESSION_TYPE);
        assert!(
            i.check_push(&push(sub, true), 3701, MAX).is_ok(),
            "terminating is never throttled"
        );
        i.terminating = true;
        let e = i.check_push(&push(sub, false), 9000, MAX).unwrap_err();
        assert_eq!(e.code, codes::INVALID_REQUEST);
    }

    #[test]
    fn the_subscription_id_follows_metrics_and_interval() {
        let id = Uuid::from_u128(7);
        let a = subscription_id(&["*".into()], 1000, id);
        assert_eq!(a, subscription_id(&["*".into()], 1000, id));
        assert_ne!(a, subscription_id(&["*".into()], 2000, id));
        assert_ne!(a, subscription_id(&["org.".into()], 1000, id));
    }
}
