//! The consumer-group keys that bound each other, checked when the broker starts, in the
//! order and with the words of Kafka 4.1's `GroupCoordinatorConfig` (which refuses to
//! start on the first broken rule), plus the assignor names kafkalite has.

use super::error::ConfigError;

/// Short names of the built-in server assignors, and the class names Kafka also accepts.
pub const CONSUMER_ASSIGNORS: &[(&str, &str)] = &[
    (
        "uniform",
        "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
    ),
    (
        "range",
        "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
    ),
];

/// The short name of a built-in assignor given by either name.
#[must_use]
pub fn assignor_short_name(name: &str) -> Option<&'static str> {
    let name = name.trim();
    CONSUMER_ASSIGNORS
        .iter()
        .find(|(short, class)| *short == name || *class == name)
        .map(|(short, _)| *short)
}

#[derive(Clone, Copy)]
enum Rule {
    AtLeast,
    AtMost,
    Below,
}

/// (key, rule, other key) under `group.<kind>.`: `key` must be `rule` `other`, in the
/// order Kafka checks them for each of consumer, share and streams groups.
const RULES: &[(&str, Rule, &str)] = &[
    (
        "max.heartbeat.interval.ms",
        Rule::AtLeast,
        "min.heartbeat.interval.ms",
    ),
    (
        "heartbeat.interval.ms",
        Rule::AtLeast,
        "min.heartbeat.interval.ms",
    ),
    (
        "heartbeat.interval.ms",
        Rule::AtMost,
        "max.heartbeat.interval.ms",
    ),
    (
        "max.session.timeout.ms",
        Rule::AtLeast,
        "min.session.timeout.ms",
    ),
    (
        "session.timeout.ms",
        Rule::AtLeast,
        "min.session.timeout.ms",
    ),
    ("session.timeout.ms", Rule::AtMost, "max.session.timeout.ms"),
    ("heartbeat.interval.ms", Rule::Below, "session.timeout.ms"),
];

const KINDS: &[&str] = &["consumer", "share", "streams"];

/// The first broken rule, naming the key, its value, and the key (and value) it breaks.
pub fn check(int: impl Fn(&str) -> i32, list: &[String]) -> Result<(), ConfigError> {
    let rules = KINDS.iter().flat_map(|kind| {
        RULES.iter().map(move |(key, rule, other)| {
            (
                format!("group.{kind}.{key}"),
                *rule,
                format!("group.{kind}.{other}"),
            )
        })
    });
    let standby = (
        "group.streams.num.standby.replicas".to_string(),
        Rule::AtMost,
        "group.streams.max.standby.replicas".to_string(),
    );
    for (key, rule, other) in rules.chain([standby]) {
        let (value, bound) = (int(&key), int(&other));
        let (holds, words) = match rule {
            Rule::AtLeast => (value >= bound, "greater than or equal to"),
            Rule::AtMost => (value <= bound, "less than or equal to"),
            Rule::Below => (value < bound, "less than"),
        };
        if !holds {
            return Err(ConfigError::new(
                &key,
                &value.to_string(),
                format!("must be {words} {other} ({bound})"),
            ));
        }
    }
    let assignors = "group.consumer.assignors";
    for name in list {
        if assignor_short_name(name).is_none() {
            let builtin: Vec<&str> = CONSUMER_ASSIGNORS.iter().map(|(s, _)| *s).collect();
            return Err(ConfigError::new(
                assignors,
                &list.join(","),
                format!(
                    "unknown assignor {name} (kafkalite has the built-in {} only)",
                    builtin.join(", ")
                ),
            ));
        }
    }
    Ok(())
}
