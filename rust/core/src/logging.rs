//! The broker's log lines, in Kafka's layout so operators can read and grep them the same
//! way: `[2026-11-24 13:57:01,123] WARN message (kafkalite.log.LogLoader)`, one line each on
//! stderr. Deliberately small: a level, a logger name, a message; no sinks or filters.
//! `every` keeps a repeating failure (a full disk fails every append) to one line per
//! interval and key.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    Warn,
    Info,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
        }
    }
}

/// Write one line to stderr. A single `write_all` of the whole line, so lines from
/// different threads never interleave.
pub fn log(level: Level, logger: &str, message: &str) {
    let line = format_line(SystemTime::now(), level, logger, message);
    #[cfg(test)]
    if CAPTURED
        .with(|c| {
            c.borrow_mut()
                .as_mut()
                .map(|lines| lines.push(line.clone()))
        })
        .is_some()
    {
        return;
    }
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

#[cfg(test)]
thread_local! {
    static CAPTURED: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
}

/// Run `f`, returning the lines it logged on this thread instead of printing them.
#[cfg(test)]
pub(crate) fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let result = f();
    let lines = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (result, lines)
}

pub fn error(logger: &str, message: &str) {
    log(Level::Error, logger, message);
}

pub fn warn(logger: &str, message: &str) {
    log(Level::Warn, logger, message);
}

pub fn info(logger: &str, message: &str) {
    log(Level::Info, logger, message);
}

static LAST_LOGGED: Mutex<Option<HashMap<String, Instant>>> = Mutex::new(None);

/// Log unless a line with the same `key` went out less than `interval` ago. The message is
/// only built when it is logged. Returns whether it was.
pub fn every(
    key: &str,
    interval: Duration,
    level: Level,
    logger: &str,
    message: impl FnOnce() -> String,
) -> bool {
    let now = Instant::now();
    {
        let mut last = LAST_LOGGED.lock().unwrap_or_else(PoisonError::into_inner);
        let last = last.get_or_insert_with(HashMap::new);
        if last
            .get(key)
            .is_some_and(|at| now.duration_since(*at) < interval)
        {
            return false;
        }
        last.insert(key.to_string(), now);
    }
    log(level, logger, &message());
    true
}

fn format_line(at: SystemTime, level: Level, logger: &str, message: &str) -> String {
    format!(
        "[{}] {} {message} ({logger})\n",
        timestamp(at),
        level.name()
    )
}

/// UTC `YYYY-MM-DD HH:MM:SS,mmm`, Kafka's log4j layout (which uses local time; a server's
/// logs compare better in UTC).
fn timestamp(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02},{:03}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_has_kafkas_layout() {
        // 2024-02-29 23:59:58.007 UTC: a leap day, to exercise the calendar.
        let at = UNIX_EPOCH + Duration::from_millis(1_709_251_198_007);
        let line = format_line(at, Level::Warn, "kafkalite.log.LogLoader", "cut 12 bytes");
        assert_eq!(
            line,
            "[2024-02-29 23:59:58,007] WARN cut 12 bytes (kafkalite.log.LogLoader)\n"
        );
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(20_781), (2026, 11, 24));
    }

    #[test]
    fn every_limits_a_key_to_one_line_per_interval() {
        let key = "logging-test-every";
        let hour = Duration::from_secs(3600);
        let mut built = 0;
        let mut message = || {
            built += 1;
            "disk full".to_string()
        };
        assert!(every(key, hour, Level::Error, "t", &mut message));
        assert!(!every(key, hour, Level::Error, "t", &mut message));
        // Another key is not held back, and a zero interval never holds back.
        assert!(every(
            "logging-test-other",
            hour,
            Level::Error,
            "t",
            &mut message
        ));
        assert!(every(key, Duration::ZERO, Level::Error, "t", &mut message));
        assert_eq!(built, 3, "a suppressed line is never formatted");
    }
}
