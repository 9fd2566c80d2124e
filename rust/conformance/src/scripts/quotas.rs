//! Client quotas: AlterClientQuotas and DescribeClientQuotas (user, client-id and
//! user+client-id entities, defaults, validate_only, bad keys and values, filters).

use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::{AlterClientQuotasRequest, ApiKey, DescribeClientQuotasRequest};

use super::script::{text, until_both, Script};
use crate::session::Session;

pub fn scripts() -> Vec<Script> {
    vec![
        Script {
            name: "alter_client_quotas",
            api: ApiKey::AlterClientQuotas,
            quick: true,
            run: alter_client_quotas,
        },
        Script {
            name: "describe_client_quotas",
            api: ApiKey::DescribeClientQuotas,
            quick: true,
            run: describe_client_quotas,
        },
    ]
}

fn entry(entity: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> EntryData {
    EntryData::default()
        .with_entity(
            entity
                .iter()
                .map(|(t, n)| {
                    EntityData::default()
                        .with_entity_type(text(t))
                        .with_entity_name(n.map(text))
                })
                .collect(),
        )
        .with_ops(
            ops.iter()
                .map(|(k, v)| {
                    OpData::default()
                        .with_key(text(k))
                        .with_value(v.unwrap_or(0.0))
                        .with_remove(v.is_none())
                })
                .collect(),
        )
}

fn alter(entries: Vec<EntryData>, validate_only: bool) -> AlterClientQuotasRequest {
    AlterClientQuotasRequest::default()
        .with_entries(entries)
        .with_validate_only(validate_only)
}

fn alter_client_quotas(s: &mut Session, v: i16) {
    let user = format!("quota-user-v{v}");
    let client = format!("quota-client-v{v}");
    let r = alter(
        vec![entry(
            &[("user", Some(&user))],
            &[("producer_byte_rate", Some(1_048_576.0))],
        )],
        false,
    );
    s.play("user producer_byte_rate", v, |_| r.clone());
    let r = alter(
        vec![entry(
            &[("user", Some(&user)), ("client-id", Some(&client))],
            &[
                ("consumer_byte_rate", Some(2048.0)),
                ("request_percentage", Some(12.5)),
            ],
        )],
        false,
    );
    s.play("user and client-id", v, |_| r.clone());
    let r = alter(
        vec![entry(
            &[("client-id", Some(&client))],
            &[("controller_mutation_rate", Some(10.0))],
        )],
        true,
    );
    s.play("validate only", v, |_| r.clone());
    let r = alter(
        vec![entry(
            &[("user", Some(&user))],
            &[("producer_byte_rate", None)],
        )],
        false,
    );
    s.play("remove a key", v, |_| r.clone());
    let r = alter(
        vec![entry(
            &[("user", Some(&user))],
            &[("producer_byte_rate", Some(1.5))],
        )],
        false,
    );
    s.play("fractional byte rate", v, |_| r.clone());
    let r = alter(
        vec![entry(
            &[("group", Some("g"))],
            &[("producer_byte_rate", Some(1.0))],
        )],
        false,
    );
    s.play("unknown entity type", v, |_| r.clone());
    let r = alter(
        vec![entry(&[], &[("producer_byte_rate", Some(1.0))])],
        false,
    );
    s.play("empty entity", v, |_| r.clone());
    let r = alter(
        vec![entry(
            &[("ip", Some("127.0.0.1")), ("user", Some(&user))],
            &[("connection_creation_rate", Some(1.0))],
        )],
        false,
    );
    s.play("ip with user", v, |_| r.clone());
}

fn describe(components: &[(&str, i8, Option<&str>)], strict: bool) -> DescribeClientQuotasRequest {
    DescribeClientQuotasRequest::default()
        .with_components(
            components
                .iter()
                .map(|(t, m, name)| {
                    ComponentData::default()
                        .with_entity_type(text(t))
                        .with_match_type(*m)
                        .with_match(name.map(text))
                })
                .collect(),
        )
        .with_strict(strict)
}

fn describe_client_quotas(s: &mut Session, v: i16) {
    let user = format!("dq-user-v{v}");
    let r = alter(
        vec![entry(
            &[("user", Some(&user))],
            &[("consumer_byte_rate", Some(4096.0))],
        )],
        false,
    );
    s.play("setup", v, |_| r.clone());
    let r = describe(&[("user", 0, Some(&user))], true);
    until_both(s, |s, side| {
        s.call_unrecorded(side, &r, 0)
            .is_ok_and(|a| a.entries.is_some_and(|e| !e.is_empty()))
    });
    s.play("exact user, strict", v, |_| r.clone());
    let r = describe(&[("user", 0, Some("dq-nobody"))], false);
    s.play("no such user", v, |_| r.clone());
    let r = describe(&[("user", 0, None)], false);
    s.play("exact without a name", v, |_| r.clone());
    let r = describe(&[("user", 1, Some(&user))], false);
    s.play("default with a name", v, |_| r.clone());
    let r = describe(&[("user", 2, None), ("user", 2, None)], false);
    s.play("duplicate type", v, |_| r.clone());
    let r = describe(&[("ip", 2, None), ("user", 2, None)], false);
    s.play("ip with user", v, |_| r.clone());
}
