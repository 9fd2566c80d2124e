//! The classic group protocol: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup, DescribeGroups, ListGroups, DeleteGroups. A group member's id differs per
//! broker (it embeds a random uuid), so each side's requests carry the id that side gave.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, ConsumerProtocolSubscription, DeleteGroupsRequest, DescribeGroupsRequest,
    FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, ListGroupsRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::Encodable;

use super::script::{group, text, Script};
use crate::session::{Answer, Session, Side};

pub const JOIN_SETUP_V: i16 = 5;
pub const SYNC_SETUP_V: i16 = 3;
pub const LEAVE_SETUP_V: i16 = 3;

pub fn scripts() -> Vec<Script> {
    vec![
        // First: it lists every group, so it runs before the others make theirs.
        Script {
            name: "list_groups",
            api: ApiKey::ListGroups,
            quick: true,
            run: list_groups,
        },
        Script {
            name: "find_coordinator",
            api: ApiKey::FindCoordinator,
            quick: true,
            run: find_coordinator,
        },
        Script {
            name: "join_group",
            api: ApiKey::JoinGroup,
            quick: true,
            run: join_group,
        },
        Script {
            name: "sync_group",
            api: ApiKey::SyncGroup,
            quick: true,
            run: sync_group,
        },
        Script {
            name: "heartbeat",
            api: ApiKey::Heartbeat,
            quick: true,
            run: heartbeat,
        },
        Script {
            name: "leave_group",
            api: ApiKey::LeaveGroup,
            quick: true,
            run: leave_group,
        },
        Script {
            name: "describe_groups",
            api: ApiKey::DescribeGroups,
            quick: true,
            run: describe_groups,
        },
        Script {
            name: "delete_groups",
            api: ApiKey::DeleteGroups,
            quick: true,
            run: delete_groups,
        },
    ]
}

/// A consumer-protocol subscription to `topics` (version prefix + struct), as the Java
/// consumer sends it in JoinGroup.
pub fn subscription(topics: &[&str]) -> bytes::Bytes {
    let mut out = BytesMut::new();
    out.put_i16(0);
    ConsumerProtocolSubscription::default()
        .with_topics(topics.iter().map(|t| text(t)).collect())
        .encode(&mut out, 0)
        .expect("encodable");
    out.freeze()
}

pub fn member(side: &Side, g: &str) -> String {
    side.vars
        .get(&format!("member:{g}"))
        .cloned()
        .unwrap_or_default()
}

pub fn generation(side: &Side, g: &str) -> i32 {
    side.vars
        .get(&format!("generation:{g}"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

fn learn(s: &mut Session, g: &str, answers: &[Answer<JoinGroupResponse>; 2]) {
    for (side, answer) in s.sides.iter_mut().zip(answers) {
        if let Ok(r) = answer {
            if !r.member_id.is_empty() {
                side.vars
                    .insert(format!("member:{g}"), r.member_id.to_string());
            }
            if r.error_code == 0 {
                side.vars
                    .insert(format!("generation:{g}"), r.generation_id.to_string());
            }
        }
    }
}

pub fn join_request(g: &str, member_id: &str, v: i16, topics: &[&str]) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(group(g))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(if v >= 1 { 10_000 } else { -1 })
        .with_member_id(text(member_id))
        .with_protocol_type(text("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(text("range"))
            .with_metadata(subscription(topics))])
}

/// Join `g` at version `v` as its only member (two steps from v4: MEMBER_ID_REQUIRED,
/// then the join with the given id); each side's member id and generation are learnt.
pub fn join(s: &mut Session, g: &str, v: i16, topics: &[&str], step: &str) {
    let answers = s.play(step, v, |side| join_request(g, &member(side, g), v, topics));
    learn(s, g, &answers);
    if v >= 4 {
        let answers = s.play(&format!("{step}, with member id"), v, |side| {
            join_request(g, &member(side, g), v, topics)
        });
        learn(s, g, &answers);
    }
}

pub fn sync_request(side: &Side, g: &str, v: i16) -> SyncGroupRequest {
    let m = member(side, g);
    let r = SyncGroupRequest::default()
        .with_group_id(group(g))
        .with_generation_id(generation(side, g))
        .with_member_id(text(&m))
        .with_assignments(vec![SyncGroupRequestAssignment::default()
            .with_member_id(text(&m))
            .with_assignment(bytes::Bytes::from_static(b"assignment"))]);
    if v >= 5 {
        r.with_protocol_type(Some(text("consumer")))
            .with_protocol_name(Some(text("range")))
    } else {
        r
    }
}

/// Make `g` a stable group of one member (compared setup steps).
pub fn join_stable(s: &mut Session, g: &str, topics: &[&str]) {
    join(s, g, JOIN_SETUP_V, topics, "setup: join");
    s.play("setup: sync", SYNC_SETUP_V, |side| {
        sync_request(side, g, SYNC_SETUP_V)
    });
}

pub fn leave_request(side: &Side, g: &str, v: i16, member_id: Option<&str>) -> LeaveGroupRequest {
    let m = member_id
        .map(str::to_string)
        .unwrap_or_else(|| member(side, g));
    let r = LeaveGroupRequest::default().with_group_id(group(g));
    if v >= 3 {
        r.with_members(vec![MemberIdentity::default().with_member_id(text(&m))])
    } else {
        r.with_member_id(text(&m))
    }
}

pub fn leave(s: &mut Session, g: &str) {
    s.play("setup: leave", LEAVE_SETUP_V, |side| {
        leave_request(side, g, LEAVE_SETUP_V, None)
    });
}

fn find_coordinator(s: &mut Session, v: i16) {
    let request = |key: &str, key_type: i8| {
        let r = FindCoordinatorRequest::default().with_key_type(key_type);
        if v >= 4 {
            r.with_coordinator_keys(vec![text(key)])
        } else {
            r.with_key(text(key))
        }
    };
    let r = request("fc-group", 0);
    s.play("group", v, |_| r.clone());
    if v >= 1 {
        let r = request("fc-group", 7);
        s.play("invalid key type", v, |_| r.clone());
    }
    if v >= 4 {
        let r = FindCoordinatorRequest::default().with_coordinator_keys(vec![
            text("fc-a"),
            text("fc-b"),
            text("fc-a"),
        ]);
        s.play("several keys", v, |_| r.clone());
        let r = FindCoordinatorRequest::default();
        s.play("no keys", v, |_| r.clone());
    }
}

fn join_group(s: &mut Session, v: i16) {
    let g = format!("jg-v{v}");
    join(s, &g, v, &["jg-topic"], "new member");
    s.play("sync", SYNC_SETUP_V, |side| {
        sync_request(side, &g, SYNC_SETUP_V)
    });
    let r = join_request(&g, "unknown-member", v, &["jg-topic"]);
    s.play("unknown member id", v, |_| r.clone());
    let r = join_request(&g, "", v, &["jg-topic"]).with_protocol_type(text("other"));
    s.play("inconsistent protocol type", v, |_| r.clone());
    let r = join_request(&format!("{g}-b"), "", v, &["jg-topic"]).with_session_timeout_ms(1);
    s.play("invalid session timeout", v, |_| r.clone());
    let r = join_request("", "", v, &["jg-topic"]);
    s.play("empty group id", v, |_| r.clone());

    if v >= 5 {
        let r = join_request(&format!("{g}-static"), "", v, &["jg-topic"])
            .with_group_instance_id(Some(text("instance-1")));
        s.play("static member", v, |_| r.clone());
    }
    leave(s, &g);
}

fn sync_group(s: &mut Session, v: i16) {
    let g = format!("sg-v{v}");
    join(s, &g, JOIN_SETUP_V, &["sg-topic"], "setup: join");
    s.play("leader assigns", v, |side| sync_request(side, &g, v));
    s.play("stable, again", v, |side| sync_request(side, &g, v));
    s.play("stale generation", v, |side| {
        let gen = generation(side, &g) + 5;
        sync_request(side, &g, v).with_generation_id(gen)
    });
    s.play("unknown member", v, |side| {
        sync_request(side, &g, v).with_member_id(text("nobody"))
    });
    s.play("unknown group", v, |side| {
        sync_request(side, &g, v).with_group_id(group("sg-unknown"))
    });
    if v >= 5 {
        s.play("inconsistent protocol type", v, |side| {
            sync_request(side, &g, v).with_protocol_type(Some(text("other")))
        });
    }
    leave(s, &g);
}

fn heartbeat(s: &mut Session, v: i16) {
    let g = format!("hb-v{v}");
    join_stable(s, &g, &["hb-topic"]);
    let request = |side: &Side, gen_delta: i32, member_id: Option<&str>, grp: &str| {
        HeartbeatRequest::default()
            .with_group_id(group(grp))
            .with_generation_id(generation(side, &g) + gen_delta)
            .with_member_id(text(
                &member_id
                    .map(str::to_string)
                    .unwrap_or_else(|| member(side, &g)),
            ))
    };
    s.play("success", v, |side| request(side, 0, None, &g));
    s.play("stale generation", v, |side| request(side, 3, None, &g));
    s.play("unknown member", v, |side| {
        request(side, 0, Some("nobody"), &g)
    });
    s.play("unknown group", v, |side| {
        request(side, 0, None, "hb-unknown")
    });
    leave(s, &g);
    s.play("after leaving", v, |side| request(side, 0, None, &g));
}

fn leave_group(s: &mut Session, v: i16) {
    let g = format!("lg-v{v}");
    join_stable(s, &g, &["lg-topic"]);
    s.play("unknown member", v, |side| {
        leave_request(side, &g, v, Some("nobody"))
    });
    s.play("success", v, |side| leave_request(side, &g, v, None));
    s.play("unknown group", v, |side| {
        leave_request(side, "lg-unknown", v, None)
    });
    if v >= 3 {
        let r = LeaveGroupRequest::default().with_group_id(group(&g));
        s.play("no members", v, |_| r.clone());
    }
}

fn describe_groups(s: &mut Session, v: i16) {
    let g = format!("dg-v{v}");
    join_stable(s, &g, &["dg-topic"]);
    let request = |groups: &[&str], ops: bool| {
        DescribeGroupsRequest::default()
            .with_groups(groups.iter().map(|n| group(n)).collect())
            .with_include_authorized_operations(ops)
    };
    let r = request(&[&g, "dg-unknown"], false);
    s.play("stable and unknown", v, |_| r.clone());
    if v >= 3 {
        let r = request(&[&g], true);
        s.play("authorized operations", v, |_| r.clone());
    }
    leave(s, &g);
    let r = request(&[&g], false);
    s.play("empty group", v, |_| r.clone());
    let r = request(&[], false);
    s.play("empty request", v, |_| r.clone());
}

fn list_groups(s: &mut Session, v: i16) {
    let g = format!("lsg-v{v}");
    join_stable(s, &g, &["lsg-topic"]);
    let r = ListGroupsRequest::default();
    s.play("one stable group", v, |_| r.clone());
    if v >= 4 {
        let r = ListGroupsRequest::default().with_states_filter(vec![text("Stable")]);
        s.play("states filter", v, |_| r.clone());
        let r = ListGroupsRequest::default().with_states_filter(vec![text("Dead")]);
        s.play("states filter matching none", v, |_| r.clone());
    }
    if v >= 5 {
        let r = ListGroupsRequest::default().with_types_filter(vec![text("Classic")]);
        s.play("types filter", v, |_| r.clone());
        let r = ListGroupsRequest::default().with_types_filter(vec![text("consumer")]);
        s.play("types filter matching none", v, |_| r.clone());
    }
    leave(s, &g);
    let r = DeleteGroupsRequest::default().with_groups_names(vec![group(&g)]);
    s.play("setup: delete group", 2, |_| r.clone());
    let r = ListGroupsRequest::default();
    s.play("no groups", v, |_| r.clone());
}

fn delete_groups(s: &mut Session, v: i16) {
    let active = format!("delg-active-v{v}");
    let empty = format!("delg-empty-v{v}");
    join_stable(s, &active, &["delg-topic"]);
    join_stable(s, &empty, &["delg-topic"]);
    leave(s, &empty);
    let r = DeleteGroupsRequest::default().with_groups_names(vec![
        group(&empty),
        group(&active),
        group("delg-unknown"),
        group(""),
    ]);
    s.play("empty, active, unknown, invalid", v, |_| r.clone());
    let r = DeleteGroupsRequest::default();
    s.play("empty request", v, |_| r.clone());
    leave(s, &active);
}
