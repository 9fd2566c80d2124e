//! Kafka's windowed rate (`SampledStat` + `WindowedSum` + `Rate`) and the throttle time
//! `ClientQuotaManager` derives from it, so a client is held to its quota exactly as a
//! Kafka broker holds it.
//!
//! A rate keeps up to `samples + 1` samples of `window_ms` each; a sample is reused once
//! no event fell in it for `samples × window_ms`. The rate is the sum of the samples over
//! the time since the oldest sample started — but never over less than `samples − 1`
//! whole windows, so a first burst is measured as if quiet windows came before it.
//! Past the quota, the throttle time is how long the client must stay quiet for the rate
//! to fall back to the quota: `(rate − quota) / quota × window`.

/// `quota.window.num` windows of `quota.window.size.seconds` each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    pub samples: usize,
    pub window_ms: i64,
}

impl Windows {
    /// The longest span a rate is measured over (Kafka's `maxValueInQuotaWindow` uses
    /// `samples − 1` windows).
    #[must_use]
    pub fn full_windows_ms(&self) -> i64 {
        (self.samples.saturating_sub(1)) as i64 * self.window_ms
    }
}

#[derive(Clone, Debug)]
struct Sample {
    value: f64,
    start_ms: i64,
    last_event_ms: i64,
}

impl Sample {
    fn new(now_ms: i64) -> Sample {
        Sample {
            value: 0.0,
            start_ms: now_ms,
            last_event_ms: now_ms,
        }
    }

    fn reset(&mut self, now_ms: i64) {
        *self = Sample::new(now_ms);
    }
}

/// One quota sensor's rate (per second).
#[derive(Clone, Debug, Default)]
pub struct Rate {
    samples: Vec<Sample>,
    current: usize,
}

impl Rate {
    /// Add `value` at `now_ms` (a negative value takes back what was recorded).
    pub fn record(&mut self, windows: Windows, value: f64, now_ms: i64) {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now_ms));
        }
        if now_ms - self.samples[self.current].start_ms >= windows.window_ms {
            self.advance(windows, now_ms);
        }
        let sample = &mut self.samples[self.current];
        sample.value += value;
        sample.last_event_ms = now_ms;
    }

    fn advance(&mut self, windows: Windows, now_ms: i64) {
        // One extra sample: the oldest may still overlap the measured span.
        let max = windows.samples + 1;
        self.current = (self.current + 1) % max;
        if self.current >= self.samples.len() {
            self.samples.push(Sample::new(now_ms));
        } else {
            self.samples[self.current].reset(now_ms);
        }
    }

    /// Samples with no event for `samples × window_ms` start afresh.
    fn purge(&mut self, windows: Windows, now_ms: i64) {
        let expire = windows.samples as i64 * windows.window_ms;
        for sample in &mut self.samples {
            if now_ms - sample.last_event_ms >= expire {
                sample.reset(now_ms);
            }
        }
    }

    /// The span the rate is measured over, in ms (Kafka's `Rate.windowSize`).
    pub fn window_size_ms(&mut self, windows: Windows, now_ms: i64) -> i64 {
        self.purge(windows, now_ms);
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now_ms));
        }
        let oldest = self
            .samples
            .iter()
            .map(|s| s.start_ms)
            .min()
            .unwrap_or(now_ms);
        let mut elapsed = now_ms - oldest;
        let full = elapsed / windows.window_ms;
        let min_full = windows.samples as i64 - 1;
        if full < min_full {
            elapsed += (min_full - full) * windows.window_ms;
        }
        elapsed
    }

    /// The rate per second at `now_ms`.
    pub fn measure(&mut self, windows: Windows, now_ms: i64) -> f64 {
        self.purge(windows, now_ms);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        let span_ms = self.window_size_ms(windows, now_ms);
        if span_ms <= 0 {
            return 0.0;
        }
        total / (span_ms as f64 / 1000.0)
    }

    /// Record `value` and return the throttle time in ms (0 within `quota`), as Kafka's
    /// `recordAndGetThrottleTimeMs`.
    pub fn record_and_throttle(
        &mut self,
        windows: Windows,
        quota: f64,
        value: f64,
        now_ms: i64,
    ) -> i32 {
        self.record(windows, value, now_ms);
        let rate = self.measure(windows, now_ms);
        if rate <= quota {
            return 0;
        }
        let span_ms = self.window_size_ms(windows, now_ms) as f64;
        let throttle = ((rate - quota) / quota * span_ms).round();
        if throttle >= f64::from(i32::MAX) {
            i32::MAX
        } else {
            throttle as i32
        }
    }

    /// When the rate last saw an event (sensors idle for an hour are dropped, as Kafka's).
    #[must_use]
    pub fn last_event_ms(&self) -> Option<i64> {
        self.samples.iter().map(|s| s.last_event_ms).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Windows = Windows {
        samples: 11,
        window_ms: 1000,
    };

    #[test]
    fn a_first_burst_is_measured_over_the_minimum_span() {
        let mut r = Rate::default();
        r.record(W, 10_000.0, 0);
        // 10 s assumed quiet before the first window.
        assert_eq!(r.window_size_ms(W, 0), 10_000);
        assert!((r.measure(W, 0) - 1000.0).abs() < 1e-9);
        assert!((r.measure(W, 500) - 10_000.0 / 10.5).abs() < 1e-9);
    }

    #[test]
    fn throttle_is_the_time_to_fall_back_to_the_quota() {
        let mut r = Rate::default();
        // 20 000 bytes in a 10 s span against 1000 B/s: 10 s over the span.
        let t = r.record_and_throttle(W, 1000.0, 20_000.0, 0);
        assert_eq!(t, 10_000);
        // Within the quota: no throttle.
        let mut r = Rate::default();
        assert_eq!(r.record_and_throttle(W, 1000.0, 5_000.0, 0), 0);
    }

    #[test]
    fn a_steady_client_is_held_to_its_quota_after_the_first_burst() {
        // A client that sends 16 KB, waits the throttle it is told, and repeats. As in
        // Kafka, a quiet client may first send what the quota allows over the windows
        // before the current one (here 10 s × 1 MB/s); from then on it is held to 1 MB/s.
        let quota = 1_000_000.0;
        let mut r = Rate::default();
        let (mut now, mut sent, mut first_throttle) = (0_i64, 0.0, None);
        let mut steady_from = (0_i64, 0.0);
        while now < 600_000 {
            let t = r.record_and_throttle(W, quota, 16_384.0, now);
            sent += 16_384.0;
            if t > 0 && first_throttle.is_none() {
                first_throttle = Some(sent);
            }
            if now < 30_000 {
                steady_from = (now, sent);
            }
            now += i64::from(t).max(10);
        }
        let burst = first_throttle.unwrap();
        assert!(burst <= 11.0 * quota, "{burst}");
        let steady = (sent - steady_from.1) / ((now - steady_from.0) as f64 / 1000.0);
        assert!((steady / quota - 1.0).abs() < 0.05, "{steady}");
    }

    #[test]
    fn idle_samples_are_forgotten_and_unrecord_takes_back() {
        let mut r = Rate::default();
        r.record(W, 5000.0, 0);
        r.record(W, -5000.0, 0);
        assert_eq!(r.measure(W, 1), 0.0);
        r.record(W, 11_000.0, 100);
        assert!(r.measure(W, 100) > 0.0);
        assert_eq!(
            r.measure(W, 100 + 11_000),
            0.0,
            "older than samples × window"
        );
    }
}
