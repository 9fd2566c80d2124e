//! Group-level configs (the GROUP config resource, type 32, of Kafka 4.1's `GroupConfig`):
//! per-group overrides of the broker's `group.consumer.*`, `group.share.*` and
//! `group.streams.*` values. Kafka describes all its keys whatever the group's type, so
//! kafkalite does too. What it applies: `consumer.session.timeout.ms` and
//! `consumer.heartbeat.interval.ms` (`timeouts`), and for share groups (`share_settings`)
//! `share.auto.offset.reset`, `share.isolation.level`, `share.record.lock.duration.ms`,
//! `share.delivery.count.limit`, `share.partition.max.record.locks`,
//! `share.session.timeout.ms`, `share.heartbeat.interval.ms` and
//! `share.renew.acknowledge.enable` (Kafka 4.4's share keys; its `share.assignment.*`,
//! `*.assignor.offload.enable` and dead-letter-queue keys are not here yet).
//!
//! A value is checked as Kafka does: known name, then type and range, then the bounds the
//! broker's `.min`/`.max` keys set, with Kafka's messages. A single node keeps the
//! overrides in its data dir (`group-configs.json`), written atomically.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use kafkalite_core::config::{BrokerSettings, Type};

use crate::errors::{codes, ApiError};

pub const RESOURCE_GROUP: i8 = 32;
/// DescribeConfigs `config_source` of a value set on the group.
pub const SOURCE_GROUP_CONFIG: i8 = 8;
const FILE_NAME: &str = "group-configs.json";

/// Where a key's value comes from when the group does not set it.
#[derive(Clone, Copy)]
enum Fallback {
    /// The broker key of the same meaning.
    Broker(&'static str),
    Value(&'static str),
}

#[derive(Clone, Copy)]
enum Check {
    AtLeast(i64),
    OneOf(&'static [&'static str]),
    AutoOffsetReset,
}

pub struct GroupKey {
    pub name: &'static str,
    pub ty: Type,
    fallback: Fallback,
    check: Check,
}

const fn int(name: &'static str, broker: &'static str, min: i64) -> GroupKey {
    GroupKey {
        name,
        ty: Type::Int,
        fallback: Fallback::Broker(broker),
        check: Check::AtLeast(min),
    }
}

/// Kafka 4.1.1's group config keys and Kafka 4.4's share ones, sorted by name.
pub const GROUP_KEYS: &[GroupKey] = &[
    int(
        "consumer.heartbeat.interval.ms",
        "group.consumer.heartbeat.interval.ms",
        1,
    ),
    int(
        "consumer.session.timeout.ms",
        "group.consumer.session.timeout.ms",
        1,
    ),
    GroupKey {
        name: "share.auto.offset.reset",
        ty: Type::String,
        fallback: Fallback::Value("latest"),
        check: Check::AutoOffsetReset,
    },
    int(
        "share.delivery.count.limit",
        "group.share.delivery.count.limit",
        2,
    ),
    int(
        "share.heartbeat.interval.ms",
        "group.share.heartbeat.interval.ms",
        1,
    ),
    GroupKey {
        name: "share.isolation.level",
        ty: Type::String,
        fallback: Fallback::Value("read_uncommitted"),
        check: Check::OneOf(&["read_committed", "read_uncommitted"]),
    },
    int(
        "share.partition.max.record.locks",
        "group.share.partition.max.record.locks",
        100,
    ),
    int(
        "share.record.lock.duration.ms",
        "group.share.record.lock.duration.ms",
        1000,
    ),
    GroupKey {
        name: "share.renew.acknowledge.enable",
        ty: Type::Boolean,
        fallback: Fallback::Value("true"),
        check: Check::OneOf(&["true", "false"]),
    },
    int(
        "share.session.timeout.ms",
        "group.share.session.timeout.ms",
        1,
    ),
    int(
        "streams.heartbeat.interval.ms",
        "group.streams.heartbeat.interval.ms",
        1,
    ),
    int(
        "streams.num.standby.replicas",
        "group.streams.num.standby.replicas",
        0,
    ),
    int(
        "streams.session.timeout.ms",
        "group.streams.session.timeout.ms",
        1,
    ),
];

/// Bounds a group value must keep, in the order Kafka checks them: (group key, broker
/// key, whether the broker key is a lower bound).
const BOUNDS: &[(&str, &str, bool)] = &[
    (
        "consumer.heartbeat.interval.ms",
        "group.consumer.min.heartbeat.interval.ms",
        true,
    ),
    (
        "consumer.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
        false,
    ),
    (
        "consumer.session.timeout.ms",
        "group.consumer.min.session.timeout.ms",
        true,
    ),
    (
        "consumer.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
        false,
    ),
    (
        "share.heartbeat.interval.ms",
        "group.share.min.heartbeat.interval.ms",
        true,
    ),
    (
        "share.heartbeat.interval.ms",
        "group.share.max.heartbeat.interval.ms",
        false,
    ),
    (
        "share.delivery.count.limit",
        "group.share.min.delivery.count.limit",
        true,
    ),
    (
        "share.delivery.count.limit",
        "group.share.max.delivery.count.limit",
        false,
    ),
    (
        "share.partition.max.record.locks",
        "group.share.min.partition.max.record.locks",
        true,
    ),
    (
        "share.partition.max.record.locks",
        "group.share.max.partition.max.record.locks",
        false,
    ),
    (
        "share.session.timeout.ms",
        "group.share.min.session.timeout.ms",
        true,
    ),
    (
        "share.session.timeout.ms",
        "group.share.max.session.timeout.ms",
        false,
    ),
    (
        "share.record.lock.duration.ms",
        "group.share.min.record.lock.duration.ms",
        true,
    ),
    (
        "share.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
        false,
    ),
    (
        "streams.heartbeat.interval.ms",
        "group.streams.min.heartbeat.interval.ms",
        true,
    ),
    (
        "streams.heartbeat.interval.ms",
        "group.streams.max.heartbeat.interval.ms",
        false,
    ),
    (
        "streams.session.timeout.ms",
        "group.streams.min.session.timeout.ms",
        true,
    ),
    (
        "streams.session.timeout.ms",
        "group.streams.max.session.timeout.ms",
        false,
    ),
    (
        "streams.num.standby.replicas",
        "group.streams.max.standby.replicas",
        false,
    ),
];

#[must_use]
pub fn key(name: &str) -> Option<&'static GroupKey> {
    GROUP_KEYS.iter().find(|k| k.name == name)
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(codes::INVALID_CONFIG, message)
}

/// A group's name as Kafka requires it for a GROUP resource.
pub fn check_name(group: &str) -> Result<(), ApiError> {
    if group.is_empty() {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            "Group name must not be empty",
        ));
    }
    Ok(())
}

/// One value checked against its key's type and range; the value as stored.
fn check_value(k: &GroupKey, value: &str) -> Result<String, ApiError> {
    let v = value.trim();
    let bad = |why: &str| {
        invalid(format!(
            "Invalid value {value} for configuration {}: {why}",
            k.name
        ))
    };
    match k.check {
        Check::AtLeast(min) => {
            let n: i32 = v.parse().map_err(|_| bad("Not a number of type INT"))?;
            if i64::from(n) < min {
                return Err(bad(&format!("Value must be at least {min}")));
            }
            Ok(n.to_string())
        }
        Check::OneOf(allowed) => {
            if !allowed.contains(&v) {
                return Err(bad(&format!(
                    "String must be one of: {}",
                    allowed.join(", ")
                )));
            }
            Ok(v.to_string())
        }
        Check::AutoOffsetReset => {
            let ok = v == "earliest"
                || v == "latest"
                || v.strip_prefix("by_duration:").is_some_and(is_iso_duration);
            if !ok {
                return Err(bad("Invalid value for share.auto.offset.reset"));
            }
            Ok(v.to_string())
        }
    }
}

/// A non-negative ISO-8601 duration as Java's `Duration.parse` reads it (`PnDTnHnMn.nS`).
fn is_iso_duration(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('P').or_else(|| s.strip_prefix('p')) else {
        return false;
    };
    let (days, time) = match rest.split_once(['T', 't']) {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let fields = |part: &str, units: &[char]| {
        let mut number = String::new();
        let mut seen = 0;
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' {
                number.push(c);
            } else if units.contains(&c.to_ascii_uppercase()) && !number.is_empty() {
                number.clear();
                seen += 1;
            } else {
                return None;
            }
        }
        number.is_empty().then_some(seen)
    };
    let d = fields(days, &['D']);
    let t = time.map_or(Some(0), |t| fields(t, &['H', 'M', 'S']).filter(|n| *n > 0));
    matches!((d, t), (Some(a), Some(b)) if a + b > 0)
}

/// The milliseconds of an ISO-8601 duration `is_iso_duration` accepts (`PnDTnHnMn.nS`).
#[must_use]
pub fn iso_duration_ms(s: &str) -> Option<i64> {
    if !is_iso_duration(s) {
        return None;
    }
    let rest = &s[1..];
    let mut total = 0f64;
    let mut number = String::new();
    let mut in_time = false;
    for c in rest.chars() {
        match c.to_ascii_uppercase() {
            'T' => in_time = true,
            d if d.is_ascii_digit() || d == '.' => number.push(d),
            unit => {
                let n: f64 = number.parse().ok()?;
                number.clear();
                total += n * match (unit, in_time) {
                    ('D', false) => 86_400_000.0,
                    ('H', true) => 3_600_000.0,
                    ('M', true) => 60_000.0,
                    ('S', true) => 1000.0,
                    _ => return None,
                };
            }
        }
    }
    Some(total as i64)
}

/// Check a group's whole override set as Kafka's `GroupConfig.validate` does: names, then
/// each value, then the broker's bounds, then that each session outlasts its heartbeat.
/// The set as stored.
pub fn validate(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerSettings,
) -> Result<BTreeMap<String, String>, ApiError> {
    if let Some(unknown) = overrides.keys().find(|n| key(n).is_none()) {
        return Err(invalid(format!("Unknown group config name: {unknown}")));
    }
    let mut stored = BTreeMap::new();
    for (name, value) in overrides {
        let k = key(name).expect("names checked above");
        stored.insert(name.clone(), check_value(k, value)?);
    }
    let effective = effective(&stored, broker);
    let number = |name: &str| -> i64 {
        effective
            .get(name)
            .and_then(|(v, _)| v.parse().ok())
            .unwrap_or_default()
    };
    for &(name, bound_key, lower) in BOUNDS {
        let (value, bound) = (number(name), i64::from(broker.int(bound_key)));
        let (holds, words) = if lower {
            (value >= bound, "greater than or equal to")
        } else {
            (value <= bound, "less than or equal to")
        };
        if !holds {
            return Err(invalid(format!("{name} must be {words} {bound_key}")));
        }
    }
    for kind in ["consumer", "share", "streams"] {
        let session = format!("{kind}.session.timeout.ms");
        let heartbeat = format!("{kind}.heartbeat.interval.ms");
        if number(&session) <= number(&heartbeat) {
            return Err(invalid(format!(
                "{session} must be greater than {heartbeat}"
            )));
        }
    }
    Ok(stored)
}

/// Every key's value for a group with `overrides`, and whether the group sets it.
#[must_use]
pub fn effective(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerSettings,
) -> BTreeMap<&'static str, (String, bool)> {
    GROUP_KEYS
        .iter()
        .map(|k| {
            let value = match (overrides.get(k.name), k.fallback) {
                (Some(v), _) => (v.clone(), true),
                (None, Fallback::Broker(b)) => (broker.int(b).to_string(), false),
                (None, Fallback::Value(v)) => (v.to_string(), false),
            };
            (k.name, value)
        })
        .collect()
}

/// The session timeout and heartbeat interval a consumer group's members get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerTimeouts {
    pub session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
}

/// A group's share settings: its group configs over the broker's `group.share.*` keys.
#[derive(Clone, Debug)]
pub struct ShareSettings {
    pub auto_offset_reset: String,
    pub isolation_read_committed: bool,
    pub record_lock_duration_ms: i64,
    pub delivery_count_limit: i16,
    pub partition_max_record_locks: i64,
    pub session_timeout_ms: i64,
    pub heartbeat_interval_ms: i32,
    pub renew_acknowledge_enable: bool,
}

/// Every group's overrides; on a single node kept in the data dir.
pub struct GroupConfigStore {
    groups: RwLock<BTreeMap<String, BTreeMap<String, String>>>,
    path: Option<PathBuf>,
}

impl GroupConfigStore {
    /// A single node's store in `dir` (empty when the file does not exist yet).
    pub fn open(dir: &Path) -> anyhow::Result<GroupConfigStore> {
        let path = dir.join(FILE_NAME);
        let groups = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(anyhow::anyhow!("{}: {e}", path.display())),
        };
        Ok(GroupConfigStore {
            groups: RwLock::new(groups),
            path: Some(path),
        })
    }

    /// Cluster mode: ZooKeeper holds the configs (`/config/groups/<name>`, written by the
    /// Python side) and the controller side pushes the whole set in with `replace_all`.
    #[must_use]
    pub fn pushed() -> GroupConfigStore {
        GroupConfigStore {
            groups: RwLock::new(BTreeMap::new()),
            path: None,
        }
    }

    /// Whether this store writes its own file (single node).
    #[must_use]
    pub fn is_local(&self) -> bool {
        self.path.is_some()
    }

    /// Cluster mode: make every group's overrides what ZooKeeper holds.
    pub fn replace_all(&self, groups: BTreeMap<String, BTreeMap<String, String>>) {
        *self
            .groups
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = groups;
    }

    /// The group's overrides (empty if it has none).
    #[must_use]
    pub fn get(&self, group: &str) -> BTreeMap<String, String> {
        self.read().get(group).cloned().unwrap_or_default()
    }

    /// The names of the groups that have overrides, for ListConfigResources.
    #[must_use]
    pub fn group_names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// Make `overrides` (already validated) the group's whole set, on a single node
    /// (cluster mode goes through ZooKeeper: `config::group_apply`).
    pub fn set(&self, group: &str, overrides: BTreeMap<String, String>) -> Result<(), ApiError> {
        let Some(path) = &self.path else {
            return Err(ApiError::new(
                codes::UNKNOWN_SERVER_ERROR,
                "group configs are stored through ZooKeeper in cluster mode",
            ));
        };
        let mut groups = self
            .groups
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next = groups.clone();
        if overrides.is_empty() {
            next.remove(group);
        } else {
            next.insert(group.to_string(), overrides);
        }
        write_atomically(path, &next).map_err(|e| {
            ApiError::new(
                codes::UNKNOWN_SERVER_ERROR,
                format!("cannot store the group configs: {e}"),
            )
        })?;
        *groups = next;
        Ok(())
    }

    /// What a consumer group's members get: the group's values, else the broker's.
    #[must_use]
    pub fn consumer_timeouts(&self, group: &str, broker: &BrokerSettings) -> ConsumerTimeouts {
        let values = effective(&self.get(group), broker);
        let int = |name: &str| {
            values
                .get(name)
                .and_then(|(v, _)| v.parse().ok())
                .expect("validated integer")
        };
        ConsumerTimeouts {
            session_timeout_ms: int("consumer.session.timeout.ms"),
            heartbeat_interval_ms: int("consumer.heartbeat.interval.ms"),
        }
    }

    /// A share group's settings: its overrides over the broker's `group.share.*` keys.
    #[must_use]
    pub fn share_settings(&self, group: &str, broker: &BrokerSettings) -> ShareSettings {
        let values = effective(&self.get(group), broker);
        let text = |name: &str| values.get(name).map(|(v, _)| v.clone()).unwrap_or_default();
        let int = |name: &str| text(name).parse::<i64>().expect("validated integer");
        ShareSettings {
            auto_offset_reset: text("share.auto.offset.reset"),
            isolation_read_committed: text("share.isolation.level") == "read_committed",
            record_lock_duration_ms: int("share.record.lock.duration.ms"),
            delivery_count_limit: i16::try_from(int("share.delivery.count.limit"))
                .unwrap_or(i16::MAX),
            partition_max_record_locks: int("share.partition.max.record.locks"),
            session_timeout_ms: int("share.session.timeout.ms"),
            heartbeat_interval_ms: i32::try_from(int("share.heartbeat.interval.ms"))
                .unwrap_or(i32::MAX),
            renew_acknowledge_enable: text("share.renew.acknowledge.enable") == "true",
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, BTreeMap<String, String>>> {
        self.groups
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn write_atomically(
    path: &Path,
    groups: &BTreeMap<String, BTreeMap<String, String>>,
) -> anyhow::Result<()> {
    crate::cluster::file_store::write_atomically(path, &serde_json::to_vec_pretty(groups)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(items: &[(&str, &str)]) -> BTreeMap<String, String> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn refused(items: &[(&str, &str)]) -> String {
        validate(&map(items), &BrokerSettings::default())
            .unwrap_err()
            .message
    }

    #[test]
    fn values_are_checked_as_kafka_does() {
        assert_eq!(refused(&[("nope", "1")]), "Unknown group config name: nope");
        assert_eq!(
            refused(&[("consumer.session.timeout.ms", "x")]),
            "Invalid value x for configuration consumer.session.timeout.ms: Not a number of \
             type INT"
        );
        assert_eq!(
            refused(&[("consumer.session.timeout.ms", "1000")]),
            "consumer.session.timeout.ms must be greater than or equal to \
             group.consumer.min.session.timeout.ms"
        );
        assert_eq!(
            refused(&[("consumer.heartbeat.interval.ms", "20000")]),
            "consumer.heartbeat.interval.ms must be less than or equal to \
             group.consumer.max.heartbeat.interval.ms"
        );
        assert!(refused(&[("share.isolation.level", "dirty")]).contains("share.isolation.level"));
        let ok = validate(
            &map(&[
                ("consumer.session.timeout.ms", " 50000 "),
                ("share.auto.offset.reset", "by_duration:PT1H30M"),
            ]),
            &BrokerSettings::default(),
        )
        .unwrap();
        assert_eq!(ok["consumer.session.timeout.ms"], "50000");
        assert!(refused(&[("share.auto.offset.reset", "by_duration:1h")]).contains("share"));
    }

    #[test]
    fn a_session_must_outlast_its_heartbeat() {
        let pairs = [
            ("group.consumer.min.session.timeout.ms", "1000"),
            ("group.consumer.max.heartbeat.interval.ms", "50000"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let broker = BrokerSettings::validate(&pairs).unwrap();
        let e = validate(
            &map(&[
                ("consumer.session.timeout.ms", "6000"),
                ("consumer.heartbeat.interval.ms", "6000"),
            ]),
            &broker,
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
        );
    }

    #[test]
    fn overrides_survive_a_reopen_and_apply_to_consumer_groups() {
        let dir = tempfile::tempdir().unwrap();
        let broker = BrokerSettings::default();
        let store = GroupConfigStore::open(dir.path()).unwrap();
        store
            .set("g", map(&[("consumer.session.timeout.ms", "50000")]))
            .unwrap();
        let again = GroupConfigStore::open(dir.path()).unwrap();
        assert_eq!(again.group_names(), ["g"]);
        assert_eq!(
            again.consumer_timeouts("g", &broker),
            ConsumerTimeouts {
                session_timeout_ms: 50_000,
                heartbeat_interval_ms: 5_000
            }
        );
        assert_eq!(
            again.consumer_timeouts("other", &broker).session_timeout_ms,
            45_000
        );
        again.set("g", BTreeMap::new()).unwrap();
        assert!(GroupConfigStore::open(dir.path())
            .unwrap()
            .group_names()
            .is_empty());
    }
}
