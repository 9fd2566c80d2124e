//! Configuration: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs.

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{
    alter_configs_request, incremental_alter_configs_request, AlterConfigsRequest, ApiKey,
    DescribeConfigsRequest, IncrementalAlterConfigsRequest,
};

use super::script::{create_topic, text, Script};
use crate::session::Session;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const GROUP: i8 = 32;

pub fn scripts() -> Vec<Script> {
    vec![
        Script {
            name: "describe_configs",
            api: ApiKey::DescribeConfigs,
            quick: true,
            run: describe_configs,
        },
        Script {
            name: "alter_configs",
            api: ApiKey::AlterConfigs,
            quick: true,
            run: alter_configs,
        },
        Script {
            name: "incremental_alter_configs",
            api: ApiKey::IncrementalAlterConfigs,
            quick: true,
            run: incremental_alter_configs,
        },
    ]
}

fn resource(kind: i8, name: &str, keys: Option<&[&str]>) -> DescribeConfigsResource {
    DescribeConfigsResource::default()
        .with_resource_type(kind)
        .with_resource_name(text(name))
        .with_configuration_keys(keys.map(|ks| ks.iter().map(|k| text(k)).collect()))
}

fn describe_configs(s: &mut Session, v: i16) {
    let name = format!("dc-v{v}");
    create_topic(
        s,
        &name,
        1,
        &[("retention.ms", "1234"), ("cleanup.policy", "compact")],
    );
    let request = |resources: Vec<DescribeConfigsResource>, synonyms: bool| {
        DescribeConfigsRequest::default()
            .with_resources(resources)
            .with_include_synonyms(synonyms)
            .with_include_documentation(false)
    };
    let keys: &[&str] = &[
        "retention.ms",
        "cleanup.policy",
        "max.message.bytes",
        "segment.bytes",
    ];
    let r = request(vec![resource(TOPIC, &name, Some(keys))], false);
    s.play("topic keys", v, |_| r.clone());
    let r = request(vec![resource(TOPIC, &name, Some(keys))], true);
    s.play("topic keys with synonyms", v, |_| r.clone());
    if v >= 3 {
        let r = request(vec![resource(TOPIC, &name, Some(keys))], false)
            .with_include_documentation(true);
        s.play("with documentation", v, |_| r.clone());
    }
    let r = request(
        vec![resource(TOPIC, &name, Some(&["no.such.config"]))],
        false,
    );
    s.play("unknown key", v, |_| r.clone());
    let r = request(vec![resource(TOPIC, "dc-unknown", Some(keys))], false);
    s.play("unknown topic", v, |_| r.clone());
    let r = request(
        vec![resource(
            BROKER,
            "1",
            Some(&["message.max.bytes", "log.cleanup.policy", "num.partitions"]),
        )],
        false,
    );
    s.play("broker keys", v, |_| r.clone());
    let r = request(
        vec![resource(BROKER, "nope", Some(&["num.partitions"]))],
        false,
    );
    s.play("bad broker id", v, |_| r.clone());
    // A group nobody configured: every group key at the broker's value.
    let r = request(vec![resource(GROUP, &format!("dc-group-v{v}"), None)], true);
    s.play("group keys with synonyms", v, |_| r.clone());
    let r = request(
        vec![resource(GROUP, "", Some(&["consumer.session.timeout.ms"]))],
        false,
    );
    s.play("group without a name", v, |_| r.clone());
    let r = request(vec![], false);
    s.play("empty request", v, |_| r.clone());
}

fn alter_configs(s: &mut Session, v: i16) {
    use alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let name = format!("ac-v{v}");
    create_topic(s, &name, 1, &[]);
    let request_to =
        |kind: i8, topic: &str, configs: &[(&str, Option<&str>)], validate_only: bool| {
            AlterConfigsRequest::default()
                .with_validate_only(validate_only)
                .with_resources(vec![AlterConfigsResource::default()
                    .with_resource_type(kind)
                    .with_resource_name(text(topic))
                    .with_configs(
                        configs
                            .iter()
                            .map(|(k, val)| {
                                AlterableConfig::default()
                                    .with_name(text(k))
                                    .with_value(val.map(text))
                            })
                            .collect(),
                    )])
        };
    let request = |topic: &str, configs: &[(&str, Option<&str>)], validate_only: bool| {
        request_to(TOPIC, topic, configs, validate_only)
    };
    let r = request(&name, &[("retention.ms", Some("5000"))], true);
    s.play("validate only", v, |_| r.clone());
    let r = request(
        &name,
        &[
            ("retention.ms", Some("5000")),
            ("cleanup.policy", Some("compact")),
        ],
        false,
    );
    s.play("success", v, |_| r.clone());
    let r = request(&name, &[("retention.ms", Some("abc"))], false);
    s.play("invalid value", v, |_| r.clone());
    let r = request(&name, &[("no.such.config", Some("1"))], false);
    s.play("unknown key", v, |_| r.clone());
    let r = request("ac-unknown", &[("retention.ms", Some("5000"))], false);
    s.play("unknown topic", v, |_| r.clone());
    // A null value: INVALID_REQUEST, not a dropped key (fuzzer-found).
    let r = request(&name, &[("retention.ms", None)], false);
    s.play("null value", v, |_| r.clone());
    let group = format!("ac-group-v{v}");
    let r = request_to(
        GROUP,
        &group,
        &[
            ("consumer.session.timeout.ms", Some("50000")),
            ("consumer.heartbeat.interval.ms", Some("6000")),
        ],
        false,
    );
    s.play("group success", v, |_| r.clone());
    let r = request_to(
        GROUP,
        &group,
        &[("share.record.lock.duration.ms", Some("100"))],
        false,
    );
    s.play("group value below its range", v, |_| r.clone());
    let r = request_to(GROUP, &group, &[("no.such.config", Some("1"))], true);
    s.play("group unknown key", v, |_| r.clone());
    let r = request_to(GROUP, &group, &[], false);
    s.play("group cleared", v, |_| r.clone());
    // Broker 1, validate only (an AlterConfigs replaces the entity's whole set): a key
    // that cannot change while the broker runs and a value out of bounds are refused.
    let r = request_to(BROKER, "1", &[("fetch.max.bytes", Some("2048"))], true);
    s.play("broker read-only key", v, |_| r.clone());
    let r = request_to(BROKER, "1", &[("num.io.threads", Some("0"))], true);
    s.play("broker value below its bound", v, |_| r.clone());
    let r = AlterConfigsRequest::default();
    s.play("empty request", v, |_| r.clone());
}

fn incremental_alter_configs(s: &mut Session, v: i16) {
    use incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let name = format!("iac-v{v}");
    create_topic(s, &name, 1, &[]);
    let request_to = |kind: i8, topic: &str, configs: &[(&str, i8, Option<&str>)]| {
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(kind)
                .with_resource_name(text(topic))
                .with_configs(
                    configs
                        .iter()
                        .map(|(k, op, val)| {
                            AlterableConfig::default()
                                .with_name(text(k))
                                .with_config_operation(*op)
                                .with_value(val.map(text))
                        })
                        .collect(),
                ),
        ])
    };
    let request =
        |topic: &str, configs: &[(&str, i8, Option<&str>)]| request_to(TOPIC, topic, configs);
    let r = request(&name, &[("retention.ms", 0, Some("5000"))]);
    s.play("set", v, |_| r.clone());
    let r = request(&name, &[("retention.ms", 1, None)]);
    s.play("delete", v, |_| r.clone());
    let r = request(&name, &[("cleanup.policy", 2, Some("compact"))]);
    s.play("append to a list", v, |_| r.clone());
    let r = request(&name, &[("cleanup.policy", 3, Some("delete"))]);
    s.play("subtract from a list", v, |_| r.clone());
    let r = request(&name, &[("retention.ms", 2, Some("1"))]);
    s.play("append to a non-list", v, |_| r.clone());
    let r = request(&name, &[("retention.ms", 0, Some("abc"))]);
    s.play("invalid value", v, |_| r.clone());
    let r = request(&name, &[("retention.ms", 9, Some("1"))]);
    s.play("invalid operation", v, |_| r.clone());
    let r = request("iac-unknown", &[("retention.ms", 0, Some("1"))]);
    s.play("unknown topic", v, |_| r.clone());
    let r = request(
        &name,
        &[
            ("retention.ms", 0, Some("1")),
            ("retention.ms", 0, Some("2")),
        ],
    );
    s.play("duplicate key", v, |_| r.clone());
    let group = format!("iac-group-v{v}");
    let r = request_to(
        GROUP,
        &group,
        &[("consumer.session.timeout.ms", 0, Some("50000"))],
    );
    s.play("group set", v, |_| r.clone());
    let r = request_to(
        GROUP,
        &group,
        &[("consumer.heartbeat.interval.ms", 0, Some("1000"))],
    );
    s.play("group value below the broker's minimum", v, |_| r.clone());
    let r = request_to(
        GROUP,
        &group,
        &[("consumer.session.timeout.ms", 0, Some("soon"))],
    );
    s.play("group value not a number", v, |_| r.clone());
    let r = request_to(
        GROUP,
        &group,
        &[("share.isolation.level", 0, Some("dirty"))],
    );
    s.play("group value not one of", v, |_| r.clone());
    let r = request_to(GROUP, &group, &[("no.such.config", 0, Some("1"))]);
    s.play("group unknown key", v, |_| r.clone());
    let r = request_to(
        GROUP,
        &group,
        &[("consumer.session.timeout.ms", 2, Some("1"))],
    );
    s.play("group append", v, |_| r.clone());
    let r = request_to(GROUP, &group, &[("consumer.session.timeout.ms", 1, None)]);
    s.play("group delete", v, |_| r.clone());
    let r = request_to(
        GROUP,
        "",
        &[("consumer.session.timeout.ms", 0, Some("50000"))],
    );
    s.play("group without a name", v, |_| r.clone());
    // Broker 1, validate only: Kafka 4.1.1's dynamic-update rules (a key that cannot change
    // while the broker runs, a security key without its listener prefix, bounds, types)
    // and a dynamic key it takes.
    let broker = |configs: &[(&str, i8, Option<&str>)]| {
        request_to(BROKER, "1", configs).with_validate_only(true)
    };
    let r = broker(&[("fetch.max.bytes", 0, Some("2048"))]);
    s.play("broker read-only key", v, |_| r.clone());
    let r = broker(&[("ssl.keystore.location", 0, Some("/nowhere.pem"))]);
    s.play("broker security key without a listener prefix", v, |_| {
        r.clone()
    });
    let r = broker(&[("background.threads", 0, Some("0"))]);
    s.play("broker value below its bound", v, |_| r.clone());
    let r = broker(&[(
        "transaction.partition.verification.enable",
        0,
        Some("maybe"),
    )]);
    s.play("broker boolean neither true nor false", v, |_| r.clone());
    let r = broker(&[("producer.id.expiration.ms", 0, Some("60000"))]);
    s.play("broker dynamic key", v, |_| r.clone());
    let r = IncrementalAlterConfigsRequest::default().with_validate_only(true);
    s.play("empty request", v, |_| r.clone());
}
