use super::*;

fn binding(rt: i8, name: &str, pt: i8, principal: &str, operation: i8, perm: i8) -> AclBinding {
    AclBinding {
        resource_type: rt,
        resource_name: name.into(),
        pattern_type: pt,
        principal: principal.into(),
        host: "*".into(),
        operation,
        permission: perm,
    }
}

#[test]
fn patterns_cover_names() {
    let lit = binding(
        resource::TOPIC,
        "orders",
        pattern::LITERAL,
        "User:a",
        op::READ,
        permission::ALLOW,
    );
    let any = binding(
        resource::TOPIC,
        "*",
        pattern::LITERAL,
        "User:a",
        op::READ,
        permission::ALLOW,
    );
    let pre = binding(
        resource::TOPIC,
        "ord",
        pattern::PREFIXED,
        "User:a",
        op::READ,
        permission::ALLOW,
    );
    assert!(lit.covers(resource::TOPIC, "orders") && !lit.covers(resource::TOPIC, "orders2"));
    assert!(!lit.covers(resource::GROUP, "orders"));
    assert!(any.covers(resource::TOPIC, "whatever"));
    assert!(pre.covers(resource::TOPIC, "orders2") && !pre.covers(resource::TOPIC, "or"));
}

#[test]
fn filters_follow_kafkas_rules() {
    let pre = binding(
        resource::TOPIC,
        "ord",
        pattern::PREFIXED,
        "User:a",
        op::READ,
        permission::ALLOW,
    );
    let mut f = AclFilter {
        resource_type: resource::ANY,
        resource_name: None,
        pattern_type: pattern::ANY,
        principal: None,
        host: None,
        operation: op::ANY,
        permission: permission::ANY,
    };
    assert!(f.matches(&pre));
    f.resource_name = Some("orders".into());
    assert!(!f.matches(&pre), "ANY wants the exact name");
    f.pattern_type = pattern::MATCH;
    assert!(f.matches(&pre), "MATCH takes prefixes of the name");
    f.pattern_type = pattern::LITERAL;
    assert!(!f.matches(&pre));
    f.pattern_type = pattern::PREFIXED;
    f.resource_name = Some("ord".into());
    assert!(f.matches(&pre));
    f.principal = Some("User:b".into());
    assert!(!f.matches(&pre));
}

#[test]
fn invalid_bindings_say_why() {
    let ok = binding(
        resource::TOPIC,
        "t",
        pattern::LITERAL,
        "User:a",
        op::WRITE,
        permission::DENY,
    );
    assert_eq!(ok.invalid(), None);
    let mut b = ok.clone();
    b.operation = op::IDEMPOTENT_WRITE;
    assert!(b.invalid().unwrap().contains("not valid"));
    let mut b = ok.clone();
    b.resource_type = resource::CLUSTER;
    b.operation = op::ALTER;
    assert!(b.invalid().unwrap().contains("kafka-cluster"));
    let mut b = ok.clone();
    b.principal = "alice".into();
    assert!(b
        .invalid()
        .unwrap()
        .contains("Could not parse principal from `alice`"));
    let mut b = ok;
    b.pattern_type = pattern::MATCH;
    assert!(b.invalid().is_some());
}
