//! Client-metrics subscriptions (KIP-714): config resources of type CLIENT_METRICS, each a
//! named set of `metrics` (metric-name prefixes, `*` for all), `interval.ms` (how often a
//! matching client pushes) and `match` (`selector=regex` patterns a client must satisfy).
//! Checked as Kafka 4.1.1's `ClientMetricsConfigs.validate` checks them, with its error
//! codes: an unknown key or an interval out of bounds is INVALID_REQUEST, a value that
//! does not parse or a bad pattern INVALID_CONFIG.
//!
//! Patterns are compiled with the `regex` crate where Kafka uses `java.util.regex`: the
//! two agree on the classes, anchors and repetitions selectors are written with; Java's
//! backreferences and lookaround are refused here as invalid patterns.

use std::collections::BTreeMap;

use kafkalite_core::config::Type;
use regex::Regex;

use crate::errors::{codes, ApiError};

/// `ConfigResource.Type.CLIENT_METRICS`.
pub const RESOURCE_CLIENT_METRICS: i8 = 16;
/// DescribeConfigs' `ConfigSource.CLIENT_METRICS_CONFIG`.
pub const SOURCE_CLIENT_METRICS: i8 = 7;

pub const METRICS: &str = "metrics";
pub const INTERVAL_MS: &str = "interval.ms";
pub const MATCH: &str = "match";

/// Kafka's `INTERVAL_MS_DEFAULT` (5 minutes) and bounds (100 ms to 1 hour).
pub const INTERVAL_MS_DEFAULT: i32 = 300_000;
const INTERVAL_MS_MIN: i32 = 100;
const INTERVAL_MS_MAX: i32 = 3_600_000;

/// Every key: name, type, default as DescribeConfigs shows it (in Kafka's name order).
pub const KEYS: [(&str, Type, &str); 3] = [
    (INTERVAL_MS, Type::Int, "300000"),
    (MATCH, Type::List, ""),
    (METRICS, Type::List, ""),
];

/// The selectors a `match` pattern may name (Kafka's `ALLOWED_MATCH_PARAMS`).
pub const SELECTORS: [&str; 6] = [
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
];

#[must_use]
pub fn key_type(name: &str) -> Option<Type> {
    KEYS.iter().find(|(k, _, _)| *k == name).map(|(_, t, _)| *t)
}

/// A LIST value as Kafka's `ConfigDef` parses it: comma-separated, items trimmed, the
/// empty string an empty list.
#[must_use]
pub fn list(value: &str) -> Vec<String> {
    let value = value.trim();
    if value.is_empty() {
        return Vec::new();
    }
    value.split(',').map(|s| s.trim().to_string()).collect()
}

/// Check a subscription's whole config set (what it would be after the change).
pub fn check(name: &str, configs: &BTreeMap<String, String>) -> Result<(), ApiError> {
    if name.is_empty() {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            "Subscription name can't be empty",
        ));
    }
    if let Some(key) = configs.keys().find(|k| key_type(k).is_none()) {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            format!("Unknown client metrics configuration: {key}"),
        ));
    }
    if let Some(value) = configs.get(INTERVAL_MS) {
        let interval = interval_ms(value)?;
        if !(INTERVAL_MS_MIN..=INTERVAL_MS_MAX).contains(&interval) {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                format!(
                    "Invalid value {interval} for {INTERVAL_MS}, interval must be between \
                     {INTERVAL_MS_MIN} and {INTERVAL_MS_MAX} (1 hour)"
                ),
            ));
        }
    }
    if let Some(value) = configs.get(MATCH) {
        patterns(&list(value))?;
    }
    Ok(())
}

/// `interval.ms` as an INT (Kafka: `Integer.parseInt` of the trimmed text).
pub fn interval_ms(value: &str) -> Result<i32, ApiError> {
    value.trim().parse::<i32>().map_err(|_| {
        ApiError::new(
            codes::INVALID_CONFIG,
            format!(
                "Invalid value {value} for configuration {INTERVAL_MS}: Not a number of type INT"
            ),
        )
    })
}

/// The `match` patterns as (selector, regex), as Kafka's `parseMatchingPatterns` reads
/// them: split at `=` (exactly two parts, Java's `split` dropping trailing empty ones),
/// both sides trimmed, a known selector, a pattern that compiles. The regex must match a
/// client's whole value.
pub fn patterns(items: &[String]) -> Result<Vec<(String, Regex)>, ApiError> {
    let illegal = |p: &str| {
        ApiError::new(
            codes::INVALID_CONFIG,
            format!("Illegal client matching pattern: {p}"),
        )
    };
    let mut out: Vec<(String, Regex)> = Vec::new();
    for item in items {
        let mut parts: Vec<&str> = item.split('=').collect();
        while parts.len() > 1 && parts.last() == Some(&"") {
            parts.pop();
        }
        let [selector, pattern] = parts[..] else {
            return Err(illegal(item));
        };
        let selector = selector.trim();
        if !SELECTORS.contains(&selector) {
            return Err(illegal(item));
        }
        let regex = Regex::new(&format!("^(?:{})$", pattern.trim())).map_err(|_| illegal(item))?;
        // Kafka keeps one pattern per selector, the last one given.
        out.retain(|(s, _)| s != selector);
        out.push((selector.to_string(), regex));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[(&str, &str)]) -> BTreeMap<String, String> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn kafkas_checks_and_codes() {
        let ok = set(&[
            (METRICS, "org.apache.kafka.producer., *"),
            (INTERVAL_MS, "1000"),
            (
                MATCH,
                "client_id=abc.*, client_software_name = apache-kafka-java",
            ),
        ]);
        assert!(check("sub", &ok).is_ok());
        assert_eq!(check("", &ok).unwrap_err().code, codes::INVALID_REQUEST);
        let e = check("s", &set(&[("nope", "1")])).unwrap_err();
        assert_eq!(e.code, codes::INVALID_REQUEST);
        assert!(e.message.contains("nope"), "{e:?}");
        let e = check("s", &set(&[(INTERVAL_MS, "50")])).unwrap_err();
        assert_eq!(e.code, codes::INVALID_REQUEST);
        assert!(e.message.contains("Invalid value 50"), "{e:?}");
        assert!(check("s", &set(&[(INTERVAL_MS, "3600000")])).is_ok());
        let e = check("s", &set(&[(INTERVAL_MS, "abc")])).unwrap_err();
        assert_eq!(e.code, codes::INVALID_CONFIG);
        for bad in ["foo=bar", "client_id=[", "client_id", "client_id=a=b", "=x"] {
            let e = check("s", &set(&[(MATCH, bad)])).unwrap_err();
            assert_eq!(e.code, codes::INVALID_CONFIG, "{bad}");
            assert!(e.message.ends_with(bad), "{e:?}");
        }
        assert!(check("s", &set(&[(MATCH, "")])).is_ok());
    }

    #[test]
    fn a_pattern_matches_the_whole_value() {
        let p = patterns(&list("client_id=app-.*")).unwrap();
        assert!(p[0].1.is_match("app-1"));
        assert!(!p[0].1.is_match("my-app-1"));
        let p = patterns(&list("client_id=a|b")).unwrap();
        assert!(p[0].1.is_match("b") && !p[0].1.is_match("ab"));
    }
}
