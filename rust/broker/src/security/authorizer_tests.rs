use super::super::acl::{pattern, resource};
use super::*;

fn user(name: &str) -> KafkaPrincipal {
    KafkaPrincipal {
        principal_type: "User".into(),
        name: name.into(),
    }
}

fn acl(name: &str, pt: i8, principal: &str, host: &str, operation: i8, perm: i8) -> AclBinding {
    AclBinding {
        resource_type: resource::TOPIC,
        resource_name: name.into(),
        pattern_type: pt,
        principal: principal.into(),
        host: host.into(),
        operation,
        permission: perm,
    }
}

fn authorizer(allow_if_no_acl: bool) -> (tempfile::TempDir, Authorizer) {
    let dir = tempfile::tempdir().unwrap();
    let a = Authorizer::open(
        ACCEPTED_CLASSES[1],
        "User:root",
        allow_if_no_acl,
        Some(dir.path()),
    )
    .unwrap();
    (dir, a)
}

#[test]
fn deny_wins_and_implied_operations_hold() {
    let (_dir, a) = authorizer(false);
    let alice = user("alice");
    let t = |o| a.authorize(&alice, "127.0.0.1", o, resource::TOPIC, "orders");
    assert!(!t(op::READ), "no ACL: denied");
    a.create(&[acl(
        "ord",
        pattern::PREFIXED,
        "User:alice",
        "*",
        op::READ,
        permission::ALLOW,
    )])
    .unwrap();
    assert!(t(op::READ) && t(op::DESCRIBE), "READ implies DESCRIBE");
    assert!(!t(op::WRITE));
    a.create(&[acl(
        "orders",
        pattern::LITERAL,
        "User:*",
        "127.0.0.1",
        op::ALL,
        permission::DENY,
    )])
    .unwrap();
    assert!(!t(op::READ), "a matching DENY wins");
    assert!(
        a.authorize(&alice, "10.0.0.1", op::READ, resource::TOPIC, "orders"),
        "other host"
    );
    assert!(
        a.authorize(
            &user("root"),
            "127.0.0.1",
            op::WRITE,
            resource::TOPIC,
            "orders"
        ),
        "super user"
    );
}

#[test]
fn no_acl_found_follows_the_setting_and_acls_persist() {
    let (dir, a) = authorizer(true);
    let bob = user("bob");
    assert!(a.authorize(&bob, "h", op::WRITE, resource::TOPIC, "free"));
    a.create(&[acl(
        "*",
        pattern::LITERAL,
        "User:alice",
        "*",
        op::WRITE,
        permission::ALLOW,
    )])
    .unwrap();
    assert!(
        !a.authorize(&bob, "h", op::WRITE, resource::TOPIC, "free"),
        "now an ACL covers it"
    );
    let reopened = Authorizer::open(ACCEPTED_CLASSES[0], "", false, Some(dir.path())).unwrap();
    assert!(reopened.authorize(&user("alice"), "h", op::WRITE, resource::TOPIC, "x"));
    let filter = AclFilter {
        resource_type: resource::ANY,
        resource_name: None,
        pattern_type: pattern::ANY,
        principal: Some("User:alice".into()),
        host: None,
        operation: op::ANY,
        permission: permission::ANY,
    };
    assert_eq!(reopened.delete(&[filter]).unwrap()[0].len(), 1);
    assert!(!reopened.authorize(&user("alice"), "h", op::WRITE, resource::TOPIC, "x"));
}

#[test]
fn other_authorizer_classes_are_refused_and_none_means_open() {
    let dir = tempfile::tempdir().unwrap();
    let e = Authorizer::open("com.example.Mine", "", false, Some(dir.path()))
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("authorizer.class.name=com.example.Mine"),
        "{e}"
    );
    let open = Authorizer::open("", "", false, Some(dir.path())).unwrap();
    assert!(open.authorize(
        &user("x"),
        "h",
        op::DELETE,
        resource::CLUSTER,
        "kafka-cluster"
    ));
}
