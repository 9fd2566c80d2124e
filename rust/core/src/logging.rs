//! The broker's log lines, in Kafka's layout so operators can read and grep them the same
//! way: `[2026-11-24 13:57:01,123] WARN message (kafkalite.log.LogLoader)`, one line each on
//! stderr. Deliberately small: a level, a logger name, a message; no sinks or filters.
//! `every` keeps a repeating failure (a full disk fails every append) to one line per
//! interval and key. Lines below the process-wide threshold (`set_level`, from the broker's
//! `log.level` key or `kafkalite broker --log-level`; INFO by default) are not written, as
//! log4j's root level does.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// log4j's levels, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
    Trace = 5,
}

impl Level {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
            Level::Trace => "TRACE",
        }
    }
}

/// Level names `set_level` accepts (any case); OFF writes nothing.
pub const LEVEL_NAMES: &[&str] = &["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"];

/// The most verbose level written (0 = OFF).
static THRESHOLD: AtomicU8 = AtomicU8::new(Level::Info as u8);

/// Set the threshold from a log4j level name (TRACE, DEBUG, INFO, WARN, ERROR, OFF).
pub fn set_level(name: &str) -> Result<(), String> {
    THRESHOLD.store(parse_level(name)?, Ordering::Relaxed);
    Ok(())
}

/// The threshold's name.
#[must_use]
pub fn level_name() -> &'static str {
    level_of(THRESHOLD.load(Ordering::Relaxed))
}

/// Whether a line at `level` would be written by a logger without a level of its own (to
/// skip building costly messages).
#[must_use]
pub fn enabled(level: Level) -> bool {
    level as u8 <= THRESHOLD.load(Ordering::Relaxed)
}

/// The name log4j gives the root logger (what `set_level` sets).
pub const ROOT: &str = "root";

/// Loggers that have written a line (so they can be listed) and the levels set for single
/// loggers (Kafka's BROKER_LOGGER configs), which apply to the logger and its descendants
/// (`a.b` covers `a.b.C`), as log4j's hierarchy does.
static LOGGERS: Mutex<Option<LoggerLevels>> = Mutex::new(None);

#[derive(Default)]
struct LoggerLevels {
    seen: std::collections::BTreeSet<String>,
    levels: HashMap<String, u8>,
}

fn parse_level(name: &str) -> Result<u8, String> {
    match name.trim().to_ascii_uppercase().as_str() {
        "OFF" => Ok(0),
        "ERROR" => Ok(Level::Error as u8),
        "WARN" => Ok(Level::Warn as u8),
        "INFO" => Ok(Level::Info as u8),
        "DEBUG" => Ok(Level::Debug as u8),
        "TRACE" => Ok(Level::Trace as u8),
        _ => Err(format!(
            "unknown log level {name:?}: expected one of {}",
            LEVEL_NAMES.join(", ")
        )),
    }
}

fn level_of(value: u8) -> &'static str {
    match value {
        0 => "OFF",
        1 => "ERROR",
        2 => "WARN",
        3 => "INFO",
        4 => "DEBUG",
        _ => "TRACE",
    }
}

/// The threshold for `logger`: its own level or its nearest ancestor's, else the root's.
fn threshold_of(logger: &str) -> u8 {
    let mut guard = LOGGERS.lock().unwrap_or_else(PoisonError::into_inner);
    let table = guard.get_or_insert_with(LoggerLevels::default);
    if !table.seen.contains(logger) {
        table.seen.insert(logger.to_string());
    }
    let mut name = logger;
    loop {
        if let Some(&level) = table.levels.get(name) {
            return level;
        }
        match name.rfind('.') {
            Some(dot) => name = &name[..dot],
            None => return THRESHOLD.load(Ordering::Relaxed),
        }
    }
}

/// Every logger known (the root, those that have logged, those given a level) with its
/// effective level, sorted by name.
#[must_use]
pub fn loggers() -> Vec<(String, &'static str)> {
    let names: Vec<String> = {
        let guard = LOGGERS.lock().unwrap_or_else(PoisonError::into_inner);
        guard.as_ref().map_or_else(Vec::new, |t| {
            let mut names: Vec<String> = t.seen.iter().cloned().collect();
            names.extend(t.levels.keys().cloned());
            names
        })
    };
    let mut out: Vec<(String, &'static str)> = names
        .into_iter()
        .filter(|n| n != ROOT)
        .map(|n| {
            let level = level_of(threshold_of(&n));
            (n, level)
        })
        .collect();
    out.push((ROOT.to_string(), level_name()));
    out.sort();
    out.dedup();
    out
}

/// Give `logger` its own level (`root` sets the threshold every other logger inherits).
pub fn set_logger_level(logger: &str, level: &str) -> Result<(), String> {
    if logger == ROOT {
        return set_level(level);
    }
    let value = parse_level(level)?;
    let mut guard = LOGGERS.lock().unwrap_or_else(PoisonError::into_inner);
    let table = guard.get_or_insert_with(LoggerLevels::default);
    table.levels.insert(logger.to_string(), value);
    Ok(())
}

/// `logger` inherits its level again. The root's level cannot be removed (as in Kafka).
pub fn unset_logger_level(logger: &str) -> Result<(), String> {
    if logger == ROOT {
        return Err("Removing the log level of the root logger is not allowed".to_string());
    }
    let mut guard = LOGGERS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(table) = guard.as_mut() {
        table.levels.remove(logger);
    }
    Ok(())
}

/// Write one line to stderr. A single `write_all` of the whole line, so lines from
/// different threads never interleave.
pub fn log(level: Level, logger: &str, message: &str) {
    if level as u8 > threshold_of(logger) {
        return;
    }
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

pub fn debug(logger: &str, message: &str) {
    log(Level::Debug, logger, message);
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

    #[test]
    fn levels_filter_lines_and_parse_log4j_names() {
        // Only loggers of this test get levels: the root threshold is process-wide and
        // other tests running in parallel log at INFO.
        assert!(set_level("verbose").unwrap_err().contains("TRACE, DEBUG"));
        set_logger_level("kafkalite.levels", "warn").unwrap();
        let ((), lines) = capture(|| {
            info("kafkalite.levels.A", "dropped");
            warn("kafkalite.levels.A", "kept");
            error("kafkalite.levels", "kept too");
        });
        assert_eq!(lines.len(), 2, "{lines:?}");
        set_logger_level("kafkalite.levels", "OFF").unwrap();
        let ((), lines) = capture(|| error("kafkalite.levels.A", "dropped"));
        assert!(lines.is_empty());
        // A child's own level wins over its ancestor's.
        set_logger_level("kafkalite.levels.B", "DEBUG").unwrap();
        let ((), lines) = capture(|| debug("kafkalite.levels.B", "kept"));
        assert!(
            lines[0].contains("] DEBUG kept (kafkalite.levels.B)"),
            "{lines:?}"
        );
        let listed = loggers();
        assert!(
            listed.contains(&("kafkalite.levels.A".to_string(), "OFF")),
            "{listed:?}"
        );
        assert!(listed.iter().any(|(n, _)| n == ROOT), "{listed:?}");
        unset_logger_level("kafkalite.levels").unwrap();
        unset_logger_level("kafkalite.levels.B").unwrap();
        assert!(unset_logger_level(ROOT).is_err());
        let ((), lines) = capture(|| debug("kafkalite.levels.B", "dropped at INFO"));
        assert!(lines.is_empty());
    }
}
