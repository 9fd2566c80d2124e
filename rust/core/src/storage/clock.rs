//! Two clocks: wall-clock milliseconds, as Kafka timestamps count them, and monotonic
//! milliseconds for timeouts, which an NTP step of the wall clock must not move.

use std::sync::OnceLock;
use std::time::Instant;

/// Milliseconds since the Unix epoch (0 if the clock is before it).
#[must_use]
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Milliseconds since an arbitrary point fixed at its first call in this process: only
/// differences mean anything. For lag and resend timeouts: a wall clock stepped back an
/// hour would otherwise keep a dead follower "caught up" for that hour.
#[must_use]
pub fn monotonic_ms() -> i64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(Instant::now);
    i64::try_from(origin.elapsed().as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_ms_never_goes_back() {
        let a = monotonic_ms();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = monotonic_ms();
        assert!(a >= 0 && b > a, "{a} then {b}");
    }
}
