//! Security: SaslHandshake and SaslAuthenticate on each broker's SASL_PLAINTEXT listener,
//! and CreateAcls / DescribeAcls / DeleteAcls, both as a super user (the anonymous
//! PLAINTEXT principal) and as a user without ACLs (alice, logged in over SASL). Needs the
//! brokers as `kafkalite conformance` starts them (an authorizer and a SASL listener);
//! without a SASL listener these scripts play nothing.

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest, SaslAuthenticateRequest,
    SaslHandshakeRequest,
};

use super::script::{text, until_both, Script};
use crate::session::{Listener, Session};

const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const ANY: i8 = 1;
const MATCH: i8 = 2;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const READ: i8 = 3;
const WRITE: i8 = 4;
const DENY: i8 = 2;
const ALLOW: i8 = 3;

pub fn scripts() -> Vec<Script> {
    vec![
        Script {
            name: "sasl_handshake",
            api: ApiKey::SaslHandshake,
            quick: true,
            run: sasl_handshake,
        },
        Script {
            name: "sasl_authenticate",
            api: ApiKey::SaslAuthenticate,
            quick: true,
            run: sasl_authenticate,
        },
        Script {
            name: "create_acls",
            api: ApiKey::CreateAcls,
            quick: true,
            run: create_acls,
        },
        Script {
            name: "describe_acls",
            api: ApiKey::DescribeAcls,
            quick: true,
            run: describe_acls,
        },
        Script {
            name: "delete_acls",
            api: ApiKey::DeleteAcls,
            quick: true,
            run: delete_acls,
        },
    ]
}

fn handshake(s: &mut Session, step: &str, v: i16, mechanism: &str) {
    let r = SaslHandshakeRequest::default().with_mechanism(text(mechanism));
    s.play(step, v, |_| r.clone());
}

fn authenticate(s: &mut Session, step: &str, v: i16, user: &str, password: &str) {
    let token = format!("\0{user}\0{password}");
    let r = SaslAuthenticateRequest::default().with_auth_bytes(bytes::Bytes::from(token));
    s.play(step, v, |_| r.clone());
}

/// A new SASL connection logged in as `user` with PLAIN (compared setup steps).
pub(super) fn login(s: &mut Session, user: &str, password: &str) -> bool {
    if !s.switch(Listener::Sasl) {
        return false;
    }
    handshake(s, "setup: handshake", 1, "PLAIN");
    authenticate(s, "setup: authenticate", 2, user, password);
    true
}

fn sasl_handshake(s: &mut Session, v: i16) {
    handshake(s, "on a PLAINTEXT listener", v, "PLAIN");
    if !s.switch(Listener::Sasl) {
        return;
    }
    handshake(s, "enabled mechanism", v, "PLAIN");
    s.switch(Listener::Sasl);
    handshake(s, "SCRAM mechanism", v, "SCRAM-SHA-512");
    s.switch(Listener::Sasl);
    handshake(s, "unknown mechanism", v, "NOPE");
    s.switch(Listener::Sasl);
    handshake(s, "mechanism not enabled", v, "GSSAPI");
}

fn sasl_authenticate(s: &mut Session, v: i16) {
    authenticate(s, "on a PLAINTEXT listener", v, "alice", "alice-secret");
    if !s.switch(Listener::Sasl) {
        return;
    }
    handshake(s, "setup: handshake", 1, "PLAIN");
    authenticate(s, "good password", v, "alice", "alice-secret");
    s.switch(Listener::Sasl);
    handshake(s, "setup: handshake", 1, "PLAIN");
    authenticate(s, "bad password", v, "alice", "wrong");
    s.switch(Listener::Sasl);
    handshake(s, "setup: handshake", 1, "PLAIN");
    authenticate(s, "unknown user", v, "mallory", "x");
}

pub(super) fn creation(
    kind: i8,
    name: &str,
    pattern: i8,
    principal: &str,
    operation: i8,
    permission: i8,
) -> AclCreation {
    AclCreation::default()
        .with_resource_type(kind)
        .with_resource_name(text(name))
        .with_resource_pattern_type(pattern)
        .with_principal(text(principal))
        .with_host(text("*"))
        .with_operation(operation)
        .with_permission_type(permission)
}

pub(super) fn create(s: &mut Session, step: &str, v: i16, creations: Vec<AclCreation>) {
    let r = CreateAclsRequest::default().with_creations(creations);
    s.play(step, v, |_| r.clone());
}

/// Kafka applies ACL changes through its controller: wait (uncompared) until both brokers
/// describe `expected` bindings for `name`.
pub(super) fn settle_acls(s: &mut Session, name: &str, expected: usize) {
    let r = describe_request(ANY, Some(name), ANY, None);
    until_both(s, |s, side| {
        s.call_unrecorded(side, &r, 1)
            .is_ok_and(|a| a.resources.iter().map(|res| res.acls.len()).sum::<usize>() == expected)
    });
}

fn describe_request(
    kind: i8,
    name: Option<&str>,
    pattern: i8,
    principal: Option<&str>,
) -> DescribeAclsRequest {
    DescribeAclsRequest::default()
        .with_resource_type_filter(kind)
        .with_resource_name_filter(name.map(text))
        .with_pattern_type_filter(pattern)
        .with_principal_filter(principal.map(text))
        .with_host_filter(None)
        .with_operation(ANY)
        .with_permission_type(ANY)
}

fn create_acls(s: &mut Session, v: i16) {
    let name = format!("acl-create-v{v}");
    create(
        s,
        "literal and prefixed",
        v,
        vec![
            creation(TOPIC, &name, LITERAL, "User:alice", READ, ALLOW),
            creation(TOPIC, &name, PREFIXED, "User:bob", WRITE, DENY),
            creation(GROUP, &name, LITERAL, "User:alice", READ, ALLOW),
        ],
    );
    settle_acls(s, &name, 3);
    create(
        s,
        "again (idempotent)",
        v,
        vec![creation(TOPIC, &name, LITERAL, "User:alice", READ, ALLOW)],
    );
    create(
        s,
        "MATCH pattern",
        v,
        vec![creation(TOPIC, &name, MATCH, "User:alice", READ, ALLOW)],
    );
    create(
        s,
        "ANY operation",
        v,
        vec![creation(TOPIC, &name, LITERAL, "User:alice", ANY, ALLOW)],
    );
    create(
        s,
        "bad principal",
        v,
        vec![creation(TOPIC, &name, LITERAL, "alice", READ, ALLOW)],
    );
    create(
        s,
        "cluster resource with another name",
        v,
        vec![creation(
            CLUSTER,
            "not-kafka-cluster",
            LITERAL,
            "User:alice",
            READ,
            ALLOW,
        )],
    );
    create(
        s,
        "one good, one bad",
        v,
        vec![
            creation(
                GROUP,
                &format!("{name}-g"),
                LITERAL,
                "User:carol",
                READ,
                ALLOW,
            ),
            creation(TOPIC, &name, LITERAL, "User:carol", 0, ALLOW),
        ],
    );
    create(s, "empty request", v, vec![]);
    if login(s, "alice", "alice-secret") {
        create(
            s,
            "as a user without ACLs",
            v,
            vec![creation(TOPIC, &name, LITERAL, "User:alice", WRITE, ALLOW)],
        );
    }
}

fn describe_acls(s: &mut Session, v: i16) {
    let name = format!("acl-describe-v{v}");
    create(
        s,
        "setup: create",
        1,
        vec![
            creation(TOPIC, &name, LITERAL, "User:alice", READ, ALLOW),
            creation(TOPIC, &name, LITERAL, "User:bob", WRITE, DENY),
            creation(TOPIC, &name, PREFIXED, "User:alice", READ, ALLOW),
        ],
    );
    settle_acls(s, &name, 3);
    let r = describe_request(TOPIC, Some(&name), LITERAL, None);
    s.play("literal", v, |_| r.clone());
    let r = describe_request(TOPIC, Some(&name), MATCH, None);
    s.play("match", v, |_| r.clone());
    let r = describe_request(ANY, Some(&name), ANY, Some("User:bob"));
    s.play("by principal", v, |_| r.clone());
    let r = describe_request(TOPIC, Some("acl-nothing-here"), LITERAL, None);
    s.play("nothing matches", v, |_| r.clone());
    let r = describe_request(0, None, ANY, None);
    s.play("unknown resource type", v, |_| r.clone());
    let r = describe_request(TOPIC, Some(&name), 0, None);
    s.play("unknown pattern type", v, |_| r.clone());
    if login(s, "alice", "alice-secret") {
        let r = describe_request(ANY, None, ANY, None);
        s.play("as a user without ACLs", v, |_| r.clone());
    }
}

pub(super) fn delete_filter(
    kind: i8,
    name: Option<&str>,
    pattern: i8,
    principal: Option<&str>,
) -> DeleteAclsFilter {
    DeleteAclsFilter::default()
        .with_resource_type_filter(kind)
        .with_resource_name_filter(name.map(text))
        .with_pattern_type_filter(pattern)
        .with_principal_filter(principal.map(text))
        .with_host_filter(None)
        .with_operation(ANY)
        .with_permission_type(ANY)
}

fn delete_acls(s: &mut Session, v: i16) {
    let name = format!("acl-delete-v{v}");
    create(
        s,
        "setup: create",
        1,
        vec![
            creation(TOPIC, &name, LITERAL, "User:alice", READ, ALLOW),
            creation(TOPIC, &name, LITERAL, "User:bob", WRITE, DENY),
            creation(GROUP, &name, PREFIXED, "User:alice", READ, ALLOW),
        ],
    );
    settle_acls(s, &name, 3);
    let play = |s: &mut Session, step: &str, filters: Vec<DeleteAclsFilter>| {
        let r = DeleteAclsRequest::default().with_filters(filters);
        s.play(step, v, |_| r.clone());
    };
    play(
        s,
        "one principal",
        vec![delete_filter(TOPIC, Some(&name), LITERAL, Some("User:bob"))],
    );
    settle_acls(s, &name, 2);
    play(
        s,
        "nothing matches",
        vec![delete_filter(
            TOPIC,
            Some("acl-nothing-here"),
            LITERAL,
            None,
        )],
    );
    play(
        s,
        "unknown resource type",
        vec![delete_filter(0, Some(&name), ANY, None)],
    );
    if login(s, "alice", "alice-secret") {
        play(
            s,
            "as a user without ACLs",
            vec![delete_filter(ANY, Some(&name), ANY, None)],
        );
        s.switch(Listener::Plaintext);
    }
    play(
        s,
        "two filters, the rest",
        vec![
            delete_filter(ANY, Some(&name), MATCH, None),
            delete_filter(GROUP, None, ANY, Some("User:nobody")),
        ],
    );
    play(s, "empty request", vec![]);
}
