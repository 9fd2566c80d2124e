//! Per-API request figures, as Kafka's `kafka.network:type=RequestMetrics` has them: how
//! many requests, how many answered with an error code somewhere in them is not known here
//! (responses are encoded by the handlers), so the count of requests that failed outright
//! (the connection closed) stands in as `errors`; and the time each spent: `local` in the
//! handler (for Produce with acks=all and a long-poll Fetch this includes the wait Kafka
//! calls remote time), `send` writing the response, `total` from the whole frame read to the
//! last byte written. Requests are handled as they arrive (no request queue), so Kafka's
//! queue time is always 0 here and is not reported.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use kafka_protocol::messages::ApiKey;

use super::histogram::Histogram;

/// Api keys are small non-negative numbers; one slot each, no lock on the hot path.
const SLOTS: usize = 128;

#[derive(Default)]
pub struct ApiFigures {
    pub requests: AtomicU64,
    pub errors: AtomicU64,
    pub total: Histogram,
    pub local: Histogram,
    pub send: Histogram,
}

pub struct RequestMetrics {
    slots: Vec<ApiFigures>,
}

impl Default for RequestMetrics {
    fn default() -> Self {
        RequestMetrics {
            slots: (0..SLOTS).map(|_| ApiFigures::default()).collect(),
        }
    }
}

/// What one request took.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub local: Duration,
    pub send: Duration,
    pub failed: bool,
}

impl RequestMetrics {
    fn slot(&self, key: ApiKey) -> Option<&ApiFigures> {
        usize::try_from(key as i16)
            .ok()
            .and_then(|i| self.slots.get(i))
    }

    pub fn record(&self, key: ApiKey, timing: Timing) {
        let Some(f) = self.slot(key) else {
            return;
        };
        f.requests.fetch_add(1, Relaxed);
        if timing.failed {
            f.errors.fetch_add(1, Relaxed);
        }
        f.local.record(timing.local);
        f.send.record(timing.send);
        f.total.record(timing.local + timing.send);
    }

    /// (api key, figures) of every API that has served at least one request.
    pub fn served(&self) -> impl Iterator<Item = (ApiKey, &ApiFigures)> {
        self.slots.iter().enumerate().filter_map(|(i, f)| {
            let key = ApiKey::try_from(i16::try_from(i).ok()?).ok()?;
            (f.requests.load(Relaxed) > 0).then_some((key, f))
        })
    }
}

/// The name Kafka's RequestMetrics give the API in their `request` tag.
#[must_use]
pub fn request_name(key: ApiKey) -> String {
    format!("{key:?}")
}
