//! Client-metrics subscriptions (KIP-714 config resources, type 16) through
//! IncrementalAlterConfigs, AlterConfigs and DescribeConfigs: Kafka's checks of each key,
//! its defaults in DescribeConfigs, a subscription gone once its last key is deleted; and
//! ListConfigResources listing them (v1: by resource type).

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{
    alter_configs_request, incremental_alter_configs_request, AlterConfigsRequest, ApiKey,
    DescribeConfigsRequest, IncrementalAlterConfigsRequest, ListConfigResourcesRequest,
};

use super::script::{text, until_both, Script};
use crate::session::Session;

const CLIENT_METRICS: i8 = 16;
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;
/// The versions of the steps another API's script plays (every version of each API is
/// covered by its own script).
const DESCRIBE_V: i16 = 4;
const ALTER_V: i16 = 1;

pub fn scripts() -> Vec<Script> {
    vec![
        Script {
            name: "client_metrics_incremental_alter",
            api: ApiKey::IncrementalAlterConfigs,
            quick: true,
            run: incremental_alter,
        },
        Script {
            name: "client_metrics_alter",
            api: ApiKey::AlterConfigs,
            quick: true,
            run: alter,
        },
        Script {
            name: "client_metrics_describe",
            api: ApiKey::DescribeConfigs,
            quick: true,
            run: describe,
        },
        Script {
            name: "list_config_resources",
            api: ApiKey::ListConfigResources,
            quick: true,
            run: list_config_resources,
        },
    ]
}

fn incremental(
    name: &str,
    configs: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> IncrementalAlterConfigsRequest {
    use incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
    IncrementalAlterConfigsRequest::default()
        .with_validate_only(validate_only)
        .with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(CLIENT_METRICS)
            .with_resource_name(text(name))
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
            )])
}

fn describe_request(name: &str, keys: Option<&[&str]>, synonyms: bool) -> DescribeConfigsRequest {
    DescribeConfigsRequest::default()
        .with_include_synonyms(synonyms)
        .with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(CLIENT_METRICS)
            .with_resource_name(text(name))
            .with_configuration_keys(
                keys.map(|ks| ks.iter().map(|k| text(k)).collect()),
            )])
}

/// Wait (uncompared) until both brokers describe subscription `name`'s `key` as `value`
/// (`None`: unset): Kafka's broker learns a change from its controller a moment after it
/// answers the alteration.
fn settle(s: &mut Session, name: &str, key: &str, value: Option<&str>) {
    let r = describe_request(name, Some(&[key]), false);
    until_both(s, |s, side| {
        s.call_unrecorded(side, &r, DESCRIBE_V).is_ok_and(|a| {
            a.results.first().is_some_and(|res| {
                res.configs.iter().any(|c| {
                    let set = c.config_source == 7;
                    match value {
                        Some(v) => set && c.value.as_ref().is_some_and(|x| x.as_str() == v),
                        None => !set,
                    }
                })
            })
        })
    });
}

/// A config change: key, IncrementalAlterConfigs operation, value.
type Op<'a> = (&'a str, i8, Option<&'a str>);

fn incremental_alter(s: &mut Session, v: i16) {
    let name = format!("cm-iac-v{v}");
    let steps: &[(&str, &[Op])] = &[
        (
            "set every key",
            &[
                ("metrics", SET, Some("org.apache.kafka.producer.")),
                ("interval.ms", SET, Some("1000")),
                (
                    "match",
                    SET,
                    Some("client_id=app-.*,client_software_name=apache-kafka-java"),
                ),
            ],
        ),
        (
            "append a metric prefix",
            &[("metrics", APPEND, Some("org.apache.kafka.consumer."))],
        ),
        (
            "subtract a metric prefix",
            &[("metrics", SUBTRACT, Some("org.apache.kafka.producer."))],
        ),
        (
            "append to the interval",
            &[("interval.ms", APPEND, Some("5"))],
        ),
        ("interval below 100 ms", &[("interval.ms", SET, Some("50"))]),
        (
            "interval above one hour",
            &[("interval.ms", SET, Some("3600001"))],
        ),
        (
            "interval not a number",
            &[("interval.ms", SET, Some("abc"))],
        ),
        ("unknown key", &[("nope", SET, Some("1"))]),
        ("unknown selector", &[("match", SET, Some("foo=bar"))]),
        (
            "pattern that does not compile",
            &[("match", SET, Some("client_id=["))],
        ),
        (
            "pattern without a value",
            &[("match", SET, Some("client_id"))],
        ),
        ("null value", &[("metrics", SET, None)]),
        ("delete one key", &[("match", DELETE, None)]),
        ("delete a key it does not have", &[("match", DELETE, None)]),
    ];
    for (step, configs) in steps {
        let r = incremental(&name, configs, false);
        s.play(step, v, |_| r.clone());
    }
    settle(s, &name, "match", None);
    let r = describe_request(&name, None, true);
    s.play("describe after the changes", DESCRIBE_V, |_| r.clone());
    let r = incremental(&name, &[("interval.ms", SET, Some("2000"))], true);
    s.play("validate only", v, |_| r.clone());
    let r = incremental("", &[("interval.ms", SET, Some("2000"))], false);
    s.play("empty name", v, |_| r.clone());
    let r = incremental(
        &name,
        &[("metrics", DELETE, None), ("interval.ms", DELETE, None)],
        false,
    );
    s.play("delete every key", v, |_| r.clone());
    settle(s, &name, "interval.ms", None);
    let r = describe_request(&name, None, true);
    s.play("describe once deleted", DESCRIBE_V, |_| r.clone());
}

fn alter(s: &mut Session, v: i16) {
    use alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let name = format!("cm-ac-v{v}");
    let request = |name: &str, configs: &[(&str, &str)]| {
        AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(CLIENT_METRICS)
            .with_resource_name(text(name))
            .with_configs(
                configs
                    .iter()
                    .map(|(k, val)| {
                        AlterableConfig::default()
                            .with_name(text(k))
                            .with_value(Some(text(val)))
                    })
                    .collect(),
            )])
    };
    let r = request(&name, &[("metrics", "*"), ("interval.ms", "60000")]);
    s.play("set", v, |_| r.clone());
    let r = request(&name, &[("match", "client_source_port=5\\d+")]);
    s.play("replace the set", v, |_| r.clone());
    settle(s, &name, "interval.ms", None);
    let r = describe_request(&name, None, false);
    s.play("describe the replaced set", DESCRIBE_V, |_| r.clone());
    let r = request(&name, &[("interval.ms", "99")]);
    s.play("interval out of bounds", v, |_| r.clone());
    let r = request(&name, &[]);
    s.play("empty set", v, |_| r.clone());
}

fn describe(s: &mut Session, v: i16) {
    let name = format!("cm-dc-v{v}");
    let r = incremental(
        &name,
        &[
            ("metrics", SET, Some("*")),
            ("interval.ms", SET, Some("500")),
        ],
        false,
    );
    s.play("create", ALTER_V, |_| r.clone());
    settle(s, &name, "interval.ms", Some("500"));
    let r = describe_request(&name, None, false);
    s.play("every key", v, |_| r.clone());
    let r = describe_request(&name, None, true);
    s.play("with synonyms", v, |_| r.clone());
    let r = describe_request(&name, Some(&["interval.ms", "nope"]), false);
    s.play("named keys", v, |_| r.clone());
    let r = describe_request("cm-dc-none", None, false);
    s.play("no such subscription", v, |_| r.clone());
    let r = describe_request("", None, false);
    s.play("empty name", v, |_| r.clone());
}

fn list_config_resources(s: &mut Session, v: i16) {
    let name = format!("cm-list-v{v}");
    let r = incremental(&name, &[("metrics", SET, Some("*"))], false);
    s.play("create a subscription", ALTER_V, |_| r.clone());
    let listed = ListConfigResourcesRequest::default().with_resource_types(vec![CLIENT_METRICS]);
    until_both(s, |s, side| {
        s.call_unrecorded(side, &listed, 1).is_ok_and(|a| {
            a.config_resources
                .iter()
                .any(|c| c.resource_name.as_str() == name)
        })
    });
    let list =
        |types: &[i8]| ListConfigResourcesRequest::default().with_resource_types(types.to_vec());
    if v == 0 {
        let r = list(&[]);
        s.play("client metrics subscriptions", v, |_| r.clone());
        return;
    }
    let steps: &[(&str, &[i8])] = &[
        ("client metrics", &[CLIENT_METRICS]),
        ("brokers and broker loggers", &[4, 8]),
        ("groups", &[32]),
        ("a type it does not list", &[2, 99]),
    ];
    for (step, types) in steps {
        let r = list(types);
        s.play(step, v, |_| r.clone());
    }
}
