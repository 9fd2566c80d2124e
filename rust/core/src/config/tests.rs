use std::collections::BTreeMap;

use super::*;

fn names(table: &[ConfigKey]) -> Vec<&str> {
    table.iter().map(|k| k.name).collect()
}

#[test]
fn tables_are_sorted_and_unique() {
    for table in [BROKER_KEYS, TOPIC_KEYS] {
        let mut sorted = names(table);
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names(table), sorted);
    }
}

#[test]
fn every_default_passes_its_own_check() {
    for key in BROKER_KEYS {
        if let Some(v) = default_value(key) {
            check_broker(key, &v).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    for key in TOPIC_KEYS {
        let v = default_value(key).unwrap_or_else(|| panic!("{} has no default", key.name));
        normalize(key, &v).unwrap_or_else(|e| panic!("{}={v}: {e}", key.name));
    }
}

#[test]
fn synonyms_resolve_to_topic_keys_and_derived_defaults_exist() {
    for key in BROKER_KEYS {
        if let Some(s) = key.synonym {
            let topic = topic_key(s.topic).unwrap_or_else(|| panic!("{}", s.topic));
            assert!(s.unit >= 1, "{}", key.name);
            // Kafka 4.1's DynamicLogConfig: the key in the topic's unit changes live, the
            // hours and minutes keys only with a restart.
            let dynamic = if s.unit == 1 {
                Update::ClusterWide
            } else {
                Update::ReadOnly
            };
            assert_eq!(key.update, dynamic, "{}", key.name);
            assert!(!broker_synonyms(topic.name).is_empty());
        }
        if let Default::SameAs(other) = key.default {
            assert!(broker_key(other).is_some(), "{} follows {other}", key.name);
        }
    }
    for key in TOPIC_KEYS {
        if key.default == Default::FromBroker {
            assert!(
                broker_synonyms(key.name)
                    .iter()
                    .any(|b| b.default != Default::None),
                "{} takes its default from a broker key that has none",
                key.name
            );
        }
    }
    let retention: Vec<_> = broker_synonyms("retention.ms")
        .iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(
        retention,
        [
            "log.retention.ms",
            "log.retention.minutes",
            "log.retention.hours"
        ]
    );
    assert_eq!(
        broker_synonyms("max.message.bytes")[0].name,
        "message.max.bytes"
    );
    assert_eq!(broker_synonyms("segment.ms")[0].name, "log.roll.ms");
}

#[test]
fn unit_multipliers_scale_defaults_and_values() {
    let hours = broker_key("log.retention.hours").unwrap();
    assert_eq!(to_topic_unit(hours, "2").unwrap(), "7200000");
    assert_eq!(to_topic_unit(hours, "-1").unwrap(), "-1");
    let minutes = broker_key("log.retention.minutes").unwrap();
    assert_eq!(to_topic_unit(minutes, "3").unwrap(), "180000");
    assert_eq!(
        default_value(topic_key("retention.ms").unwrap()).unwrap(),
        (7 * 24 * 3_600_000i64).to_string()
    );
    assert_eq!(
        default_value(topic_key("segment.ms").unwrap()).unwrap(),
        (7 * 24 * 3_600_000i64).to_string()
    );
    let s = settings(&[("log.retention.minutes", "5"), ("log.retention.hours", "1")]);
    let (v, from) = s.topic_value("retention.ms").unwrap();
    assert_eq!((v.as_str(), from.name), ("300000", "log.retention.minutes"));
    assert_eq!(
        s.topic_default("segment.ms"),
        default_value(topic_key("segment.ms").unwrap())
    );
}

fn settings(pairs: &[(&str, &str)]) -> BrokerSettings {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    BrokerSettings::validate(&map).unwrap()
}

fn refused(pairs: &[(&str, &str)]) -> ConfigError {
    let map: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    BrokerSettings::validate(&map).unwrap_err()
}

#[test]
fn broker_values_are_checked_and_named() {
    for (key, value) in [
        ("node.id", "one"),
        ("broker.id", "-1"),
        ("num.partitions", "0"),
        ("default.replication.factor", "0"),
        ("min.insync.replicas", "0"),
        ("log.retention.ms", "-2"),
        ("log.retention.hours", "-7"),
        ("log.retention.bytes", "1GB"),
        ("log.roll.hours", "0"),
        ("log.segment.bytes", "13"),
        ("socket.request.max.bytes", "10"),
        ("auto.create.topics.enable", "yes"),
        ("log.cleanup.policy", ""),
        ("log.cleanup.policy", "delete,shred"),
        ("log.dirs", " , "),
        ("log.retention.hours", "9999999999"),
        ("log.retention.minutes", "2147483647000"),
        ("ssl.client.auth", "maybe"),
        ("offsets.topic.num.partitions", "0"),
    ] {
        let e = refused(&[(key, value)]);
        assert_eq!((e.key.as_str(), e.value.as_str()), (key, value), "{e}");
        assert!(e
            .to_string()
            .starts_with(&format!("Invalid value {value} for configuration {key}: ")));
    }
    let e = refused(&[("log.retention.hours", "-7")]);
    assert!(e.reason.contains("retention.ms=-25200000"), "{e}");
    assert_eq!(refused(&[("log.dirs", ",")]).reason, "no directory given");
    let e = refused(&[("node.id", "1"), ("broker.id", "2")]);
    assert_eq!(
        (e.key.as_str(), e.reason.as_str()),
        ("broker.id", "must equal node.id")
    );
    let e = refused(&[
        ("group.min.session.timeout.ms", "10"),
        ("group.max.session.timeout.ms", "5"),
    ]);
    assert_eq!(e.key, "group.min.session.timeout.ms");
}

#[test]
fn replica_selector_is_kafkas_rack_aware_one_or_refused_by_name() {
    // Unset (Kafka's null): leader only.
    assert_eq!(settings(&[]).get("replica.selector.class"), None);
    let s = settings(&[(
        "replica.selector.class",
        &format!(" {RACK_AWARE_REPLICA_SELECTOR} "),
    )]);
    assert_eq!(
        s.get("replica.selector.class").as_deref(),
        Some(RACK_AWARE_REPLICA_SELECTOR)
    );
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    for class in [
        "com.example.NearestReplicaSelector",
        "RackAwareReplicaSelector",
        "",
    ] {
        let e = refused(&[("replica.selector.class", class)]);
        assert_eq!(
            e.to_string(),
            format!(
                "Invalid value {class} for configuration replica.selector.class: Class {class} \
                 cannot be found"
            )
        );
    }
}

#[test]
fn settings_read_values_defaults_and_warn_on_unknown_keys() {
    let s = settings(&[
        ("node.id", " 3 "),
        ("auto.create.topics.enable", "FALSE"),
        ("log.dirs", "a, b"),
        ("no.such.key", "x"),
        ("listener.name.internal.ssl.keystore.location", "k"),
    ]);
    assert_eq!(s.int("node.id"), 3);
    assert_eq!(s.int("broker.id"), 3, "broker.id follows node.id");
    assert!(!s.boolean("auto.create.topics.enable"));
    assert_eq!(s.list("log.dirs"), ["a", "b"]);
    assert_eq!(s.int("num.partitions"), 1);
    assert_eq!(s.get("log.retention.ms"), None);
    assert_eq!(
        s.warnings,
        ["The configuration 'no.such.key' was supplied but isn't a known config."]
    );
    assert!(is_sensitive("ssl.keystore.password"));
    assert!(is_sensitive("listener.name.x.ssl.key.password"));
    assert!(!is_sensitive("log.dirs"));
}

#[test]
fn topic_values_are_normalized_and_bounded() {
    let n = |k: &str, v: &str| normalize(topic_key(k).unwrap(), v);
    assert_eq!(n("preallocate", " TRUE ").unwrap(), "true");
    assert_eq!(
        n("cleanup.policy", "compact, delete").unwrap(),
        "compact,delete"
    );
    assert_eq!(
        n("leader.replication.throttled.replicas", "0:1, 1:1").unwrap(),
        "0:1,1:1"
    );
    for (k, v) in [
        ("retention.ms", "-2"),
        ("segment.bytes", "4294967296"),
        ("cleanup.policy", "shred"),
        ("cleanup.policy", ""),
        ("compression.type", "brotli"),
        ("min.cleanable.dirty.ratio", "2"),
        ("min.cleanable.dirty.ratio", "NaN"),
        ("min.insync.replicas", "0"),
        ("remote.storage.enable", "true"),
        ("preallocate", "yes"),
        ("compression.zstd.level", "23"),
        ("follower.replication.throttled.replicas", "x"),
    ] {
        assert!(n(k, v).is_err(), "{k}={v}");
    }
}

#[test]
fn consumer_group_bounds_are_checked_as_kafka_does() {
    let e = refused(&[("group.consumer.heartbeat.interval.ms", "500")]);
    assert_eq!(
        e.to_string(),
        "Invalid value 500 for configuration group.consumer.heartbeat.interval.ms: must be \
         greater than or \
         equal to group.consumer.min.heartbeat.interval.ms (5000)"
    );
    let e = refused(&[("group.consumer.session.timeout.ms", "70000")]);
    assert_eq!(
        e.reason,
        "must be less than or equal to group.consumer.max.session.timeout.ms (60000)"
    );
    let e = refused(&[
        ("group.consumer.min.session.timeout.ms", "2000"),
        ("group.consumer.session.timeout.ms", "5000"),
    ]);
    assert_eq!(
        (e.key.as_str(), e.reason.as_str()),
        (
            "group.consumer.heartbeat.interval.ms",
            "must be less than group.consumer.session.timeout.ms (5000)"
        )
    );
    let e = refused(&[("group.consumer.max.heartbeat.interval.ms", "4000")]);
    assert_eq!(e.key, "group.consumer.max.heartbeat.interval.ms");
    let e = refused(&[("group.consumer.assignors", "range,sticky")]);
    assert_eq!(e.key, "group.consumer.assignors");
    assert!(e.reason.contains("unknown assignor sticky"), "{e}");
    settings(&[
        ("group.consumer.min.heartbeat.interval.ms", "100"),
        ("group.consumer.heartbeat.interval.ms", "500"),
        ("group.consumer.min.session.timeout.ms", "1000"),
        ("group.consumer.session.timeout.ms", "1000"),
        (
            "group.consumer.assignors",
            "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform",
        ),
    ]);
}

#[test]
fn share_and_streams_group_bounds_are_checked_too() {
    let e = refused(&[("group.share.heartbeat.interval.ms", "20000")]);
    assert_eq!(
        e.reason,
        "must be less than or equal to group.share.max.heartbeat.interval.ms (15000)"
    );
    let e = refused(&[("group.streams.num.standby.replicas", "3")]);
    assert_eq!(e.key, "group.streams.num.standby.replicas");
}

#[test]
fn server_keys_are_bounded_as_kafka_4_1_bounds_them() {
    // Each refused by Kafka 4.1.1's KafkaConfig with the same key and value.
    for (key, value) in [
        ("fetch.max.bytes", "1023"),
        ("offsets.topic.compression.codec", "5"),
        ("offsets.topic.compression.codec", "-1"),
        ("group.coordinator.rebalance.protocols", "CLASSIC"),
        ("group.coordinator.rebalance.protocols", "consumer"),
        ("metrics.num.samples", "0"),
        ("telemetry.max.bytes", "0"),
        ("max.incremental.fetch.session.cache.slots", "-1"),
        ("num.replica.alter.log.dirs.threads", "abc"),
        ("queued.max.request.bytes", "104857599"),
        ("connection.failed.authentication.delay.ms", "600000"),
    ] {
        let e = refused(&[(key, value)]);
        assert_eq!((e.key.as_str(), e.value.as_str()), (key, value), "{e}");
    }
    assert_eq!(
        refused(&[("group.coordinator.rebalance.protocols", "consumer")]).reason,
        "Disabling the 'classic' protocol is not supported."
    );
    // ... and accepted where Kafka accepts them.
    let s = settings(&[
        ("queued.max.request.bytes", "0"),
        ("connections.max.idle.ms", "-1"),
        ("connection.failed.authentication.delay.ms", "700000"),
        ("group.coordinator.rebalance.protocols", " classic , share"),
        ("request.timeout.ms", "-5"),
    ]);
    assert_eq!(
        s.list("group.coordinator.rebalance.protocols"),
        ["classic", "share"]
    );
    settings(&[
        ("socket.request.max.bytes", "1000"),
        ("queued.max.request.bytes", "1000"),
    ]);
    let d = BrokerSettings::default();
    assert_eq!(d.get("num.replica.alter.log.dirs.threads"), None);
    assert_eq!(d.get("sasl.oauthbearer.expected.issuer"), None);
    assert_eq!(
        d.list("sasl.oauthbearer.expected.audience"),
        Vec::<String>::new()
    );
    assert_eq!(d.int("fetch.max.bytes"), 57_671_680);
    assert_eq!(d.long("queued.max.request.bytes"), -1);
}

#[test]
fn internal_keys_are_schema_keys() {
    // Each is found (the list is sorted for its binary search) and in the schema.
    let internal = BROKER_KEYS.iter().filter(|k| is_internal(k.name)).count();
    assert_eq!(internal, 29, "Kafka 4.4.0 defines 29 internal broker keys");
}
