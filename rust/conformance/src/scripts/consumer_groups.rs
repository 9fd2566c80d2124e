//! KIP-848's consumer group protocol: ConsumerGroupHeartbeat (join, heartbeat, full
//! heartbeat, fenced epoch, unknown member, static members, leave, bad requests) and
//! ConsumerGroupDescribe; OffsetCommit/OffsetFetch v9 by member epoch; ListGroups v5 with
//! the group's type; and the rule that a group id is classic or consumer, not both (shown
//! with a classic group of a non-consumer protocol type, which Kafka 4.1 would otherwise
//! upgrade online); a mixed group: a classic group of the consumer protocol upgraded online
//! by a consumer-protocol member, its classic member served by the consumer group
//! (JoinGroup, SyncGroup, Heartbeat, OffsetCommit, the describes), and downgraded again
//! when that member leaves. v0 member ids are the coordinator's (random, learnt per side);
//! from v1 the client names itself, so both sides get the same id.

use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, DeleteGroupsRequest,
    DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest, ListGroupsRequest,
    OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest, SyncGroupRequest,
};

use super::groups::{self, generation, member, sync_request, JOIN_SETUP_V, SYNC_SETUP_V};
use super::script::{
    create_topic, group, text, topic, with_commit_ids, with_offset_fetch_ids, Script,
};
use crate::session::{Session, Side};

/// The version of setup heartbeats (both brokers serve it; the client names members).
const SETUP_V: i16 = 1;

pub fn scripts() -> Vec<Script> {
    vec![
        Script {
            name: "consumer_group_heartbeat",
            api: ApiKey::ConsumerGroupHeartbeat,
            quick: true,
            run: heartbeat,
        },
        Script {
            name: "consumer_group_describe",
            api: ApiKey::ConsumerGroupDescribe,
            quick: true,
            run: describe,
        },
        Script {
            name: "consumer_group_mixed",
            api: ApiKey::ConsumerGroupHeartbeat,
            quick: true,
            run: mixed,
        },
        Script {
            name: "consumer_group_offset_commit",
            api: ApiKey::OffsetCommit,
            quick: true,
            run: offset_commit,
        },
        Script {
            name: "consumer_group_offset_fetch",
            api: ApiKey::OffsetFetch,
            quick: true,
            run: offset_fetch,
        },
        Script {
            name: "consumer_group_list",
            api: ApiKey::ListGroups,
            quick: true,
            run: list,
        },
    ]
}

fn var(g: &str) -> String {
    format!("cmember:{g}")
}

/// This side's id of the member of `g` (the one it was given at v0, else `fallback`).
fn member_of(side: &Side, g: &str, fallback: &str) -> String {
    side.vars
        .get(&var(g))
        .cloned()
        .unwrap_or_else(|| fallback.to_string())
}

fn topic_id(side: &Side, t: &str) -> uuid::Uuid {
    side.vars
        .get(&format!("id:{t}"))
        .and_then(|id| id.parse().ok())
        .unwrap_or_default()
}

fn join_request(g: &str, member: &str, t: &str) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(group(g))
        .with_member_id(text(member))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(30_000)
        .with_subscribed_topic_names(Some(vec![topic(t)]))
        .with_topic_partitions(Some(Vec::new()))
}

fn beat(
    side: &Side,
    g: &str,
    member: &str,
    epoch: i32,
    owned: &[(&str, &[i32])],
) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(group(g))
        .with_member_id(text(&member_of(side, g, member)))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(-1)
        .with_topic_partitions(Some(
            owned
                .iter()
                .map(|(t, ps)| {
                    TopicPartitions::default()
                        .with_topic_id(topic_id(side, t))
                        .with_partitions(ps.to_vec())
                })
                .collect(),
        ))
}

/// Join `g` as `member` (v0: the coordinator names it; its id is learnt per side).
fn join(s: &mut Session, step: &str, v: i16, g: &str, member: &str, t: &str) {
    let id = if v >= 1 { member } else { "" };
    let answers = s.play(step, v, |_| join_request(g, id, t));
    for (side, answer) in s.sides.iter_mut().zip(&answers) {
        if let Ok(r) = answer {
            if let Some(m) = r.member_id.as_ref().filter(|_| v == 0 && r.error_code == 0) {
                side.vars.insert(var(g), m.to_string());
            }
            if r.error_code == 0 {
                side.vars
                    .insert(format!("epoch:{g}"), r.member_epoch.to_string());
            }
        }
    }
}

fn delete(s: &mut Session, groups: &[&str]) {
    let r =
        DeleteGroupsRequest::default().with_groups_names(groups.iter().map(|g| group(g)).collect());
    s.play("setup: delete groups", 2, |_| r.clone());
}

/// A stable classic group of protocol type `connect` (one member), which Kafka 4.1 does
/// not upgrade to a consumer group.
fn classic_connect_group(s: &mut Session, g: &str) {
    let request = |member: &str| {
        JoinGroupRequest::default()
            .with_group_id(group(g))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_member_id(text(member))
            .with_protocol_type(text("connect"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(text("default"))
                .with_metadata(bytes::Bytes::from_static(b"meta"))])
    };
    let key = format!("member:{g}");
    for step in ["setup: classic join", "setup: classic join, with member id"] {
        let answers = s.play(step, JOIN_SETUP_V, |side| {
            request(side.vars.get(&key).map_or("", String::as_str))
        });
        for (side, answer) in s.sides.iter_mut().zip(&answers) {
            if let Ok(r) = answer {
                side.vars.insert(key.clone(), r.member_id.to_string());
                if r.error_code == 0 {
                    side.vars
                        .insert(format!("generation:{g}"), r.generation_id.to_string());
                }
            }
        }
    }
    s.play(
        "setup: classic sync",
        SYNC_SETUP_V,
        |side| -> SyncGroupRequest { sync_request(side, g, SYNC_SETUP_V) },
    );
}

fn heartbeat(s: &mut Session, v: i16) {
    let t = format!("cgh-topic-v{v}");
    let g = format!("cgh-v{v}");
    create_topic(s, &t, 3, &[]);
    let m = format!("cgh-member-v{v}");
    join(s, "join", v, &g, &m, &t);
    s.play("heartbeat", v, |side| {
        beat(side, &g, &m, 1, &[(&t, &[0, 1, 2])])
    });
    s.play("full heartbeat", v, |side| {
        beat(side, &g, &m, 1, &[(&t, &[0, 1, 2])])
            .with_rebalance_timeout_ms(30_000)
            .with_subscribed_topic_names(Some(vec![topic(&t)]))
    });
    s.play("fenced: epoch from the future", v, |side| {
        beat(side, &g, &m, 7, &[])
    });
    s.play("unknown member", v, |side| beat(side, &g, "nobody", 1, &[]));
    let r = join_request("", &m, &t);
    s.play("empty group id", v, |_| r.clone());
    let r = join_request(&g, "cgh-other", &t).with_subscribed_topic_names(None);
    s.play("join without a subscription", v, |_| r.clone());
    let r = join_request(&g, "cgh-other", &t).with_rebalance_timeout_ms(-1);
    s.play("join without a rebalance timeout", v, |_| r.clone());
    let r = join_request(&g, "cgh-other", &t).with_server_assignor(Some(text("nope")));
    s.play("unsupported assignor", v, |_| r.clone());
    let r = join_request(&g, "cgh-other", &t).with_member_epoch(-3);
    s.play("invalid member epoch", v, |_| r.clone());

    // Static members name themselves (v1+): the steps are the same on both sides.
    let sg = format!("cgh-static-v{v}");
    let instance = |r: ConsumerGroupHeartbeatRequest| r.with_instance_id(Some(text("inst-1")));
    if v >= 1 {
        let r = instance(join_request(&sg, "cgh-static-a", &t));
        s.play("static member joins", v, |_| r.clone());
        let r = instance(join_request(&sg, "cgh-static-b", &t));
        s.play("instance id still in use", v, |_| r.clone());
        let r = instance(beat(&s.sides[0], &sg, "cgh-static-b", 1, &[]));
        s.play("fenced instance", v, |_| r.clone());
        let r = instance(beat(&s.sides[0], &sg, "cgh-static-a", -2, &[]));
        s.play("static member leaves for now", v, |_| r.clone());
        let r = instance(join_request(&sg, "cgh-static-b", &t));
        s.play("its successor takes over", v, |_| r.clone());
    }

    let cg = format!("cgh-classic-v{v}");
    classic_connect_group(s, &cg);
    let r = join_request(&cg, "cgh-other", &t);
    s.play("a classic group with members", v, |_| r.clone());

    s.play("leave", v, |side| beat(side, &g, &m, -1, &[]));
    s.play("after leaving", v, |side| beat(side, &g, &m, 1, &[]));
    s.play("leave again", v, |side| beat(side, &g, &m, -1, &[]));
    delete(s, &[&g]);
}

fn describe(s: &mut Session, v: i16) {
    let t = format!("cgd-topic-v{v}");
    let g = format!("cgd-v{v}");
    create_topic(s, &t, 2, &[]);
    let m = format!("cgd-member-v{v}");
    join(s, "setup: join", SETUP_V, &g, &m, &t);
    let cg = format!("cgd-classic-v{v}");
    classic_connect_group(s, &cg);
    let request = |groups: &[&str], ops: bool| {
        ConsumerGroupDescribeRequest::default()
            .with_group_ids(groups.iter().map(|n| group(n)).collect())
            .with_include_authorized_operations(ops)
    };
    let r = request(&[&g, "cgd-unknown", &cg], false);
    s.play("stable, unknown and classic", v, |_| r.clone());
    let r = request(&[&g], true);
    s.play("authorized operations", v, |_| r.clone());
    let r = DescribeGroupsRequest::default().with_groups(vec![group(&g)]);
    s.play("DescribeGroups v5 of a consumer group", 5, |_| r.clone());
    s.play("DescribeGroups v6 of a consumer group", 6, |_| r.clone());
    let r = JoinGroupRequest::default()
        .with_group_id(group(&g))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(text(""))
        .with_protocol_type(text("connect"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(text("default"))
            .with_metadata(bytes::Bytes::from_static(b"meta"))]);
    s.play(
        "JoinGroup to a consumer group with members",
        JOIN_SETUP_V,
        |_| r.clone(),
    );
    s.play("setup: leave", SETUP_V, |side| beat(side, &g, &m, -1, &[]));
    let r = request(&[&g], false);
    s.play("empty", v, |_| r.clone());
    let r = request(&[], false);
    s.play("empty request", v, |_| r.clone());
    delete(s, &[&g]);
}

fn commit(g: &str, t: &str, member: &str, epoch: i32) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(group(g))
        .with_generation_id_or_member_epoch(epoch)
        .with_member_id(text(member))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(topic(t))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(3)
                .with_committed_leader_epoch(-1)])])
}

/// Heartbeat `member` of `g` on each side (uncompared) until its epoch holds still, owning
/// what it was given, and keep that epoch (`epoch`). Kafka 4.4 moves a new member's epoch
/// once more after answering its join, a moment later; 4.1 and kafkalite do not.
fn settle_epoch(s: &mut Session, g: &str, member: &str) {
    for side in 0..2 {
        let mut owned = Vec::new();
        for _ in 0..20 {
            let e = epoch(&s.sides[side], g);
            let request =
                beat(&s.sides[side], g, member, e, &[]).with_topic_partitions(Some(owned.clone()));
            let Ok(r) = s.call_unrecorded(side, &request, SETUP_V) else {
                break;
            };
            if r.error_code != 0 {
                break;
            }
            if let Some(a) = &r.assignment {
                owned = a
                    .topic_partitions
                    .iter()
                    .map(|tp| {
                        TopicPartitions::default()
                            .with_topic_id(tp.topic_id)
                            .with_partitions(tp.partitions.clone())
                    })
                    .collect();
            }
            if r.member_epoch == e && r.assignment.is_none() {
                break;
            }
            s.sides[side]
                .vars
                .insert(format!("epoch:{g}"), r.member_epoch.to_string());
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

/// The member epoch `side` last gave (`join`, `settle_epoch`); Kafka 4.4 gives 2 at the
/// join where 4.1 gave 1.
fn epoch(side: &Side, g: &str) -> i32 {
    side.vars
        .get(&format!("epoch:{g}"))
        .and_then(|e| e.parse().ok())
        .unwrap_or(1)
}

fn offset_commit(s: &mut Session, v: i16) {
    if v < 9 {
        return;
    }
    let t = format!("cgoc-topic-v{v}");
    let g = format!("cgoc-v{v}");
    create_topic(s, &t, 1, &[]);
    let m = format!("cgoc-member-v{v}");
    join(s, "setup: join", SETUP_V, &g, &m, &t);
    settle_epoch(s, &g, &m);
    let at = |side: &Side, delta: i32| {
        with_commit_ids(side, commit(&g, &t, &m, epoch(side, &g) + delta))
    };
    s.play("member at its epoch", v, |side| at(side, 0));
    s.play("stale member epoch", v, |side| at(side, -1));
    s.play("member epoch from the future", v, |side| at(side, 1));
    let r = commit(&g, &t, "nobody", 1);
    s.play("unknown member", v, |side| with_commit_ids(side, r.clone()));
    let r = commit(&g, &t, "", -1);
    s.play("admin commit to a group with members", v, |side| {
        with_commit_ids(side, r.clone())
    });
    s.play("OffsetCommit v8 of a consumer-protocol member", 8, |side| {
        commit(&g, &t, &m, epoch(side, &g))
    });
    let r = OffsetDeleteRequest::default()
        .with_group_id(group(&g))
        .with_topics(vec![OffsetDeleteRequestTopic::default()
            .with_name(topic(&t))
            .with_partitions(vec![
                OffsetDeleteRequestPartition::default().with_partition_index(0)
            ])]);
    s.play("OffsetDelete of a subscribed topic", 0, |_| r.clone());
    s.play("setup: leave", SETUP_V, |side| beat(side, &g, &m, -1, &[]));
    let r = commit(&g, &t, "", -1);
    s.play("admin commit to an empty group", v, |side| {
        with_commit_ids(side, r.clone())
    });
    delete(s, &[&g]);
}

fn fetch(g: &str, t: &str, member: Option<&str>, epoch: i32) -> OffsetFetchRequest {
    OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
        .with_group_id(group(g))
        .with_member_id(member.map(text))
        .with_member_epoch(epoch)
        .with_topics(Some(vec![OffsetFetchRequestTopics::default()
            .with_name(topic(t))
            .with_partition_indexes(vec![0])]))])
}

fn offset_fetch(s: &mut Session, v: i16) {
    if v < 9 {
        return;
    }
    let t = format!("cgof-topic-v{v}");
    let g = format!("cgof-v{v}");
    create_topic(s, &t, 1, &[]);
    let m = format!("cgof-member-v{v}");
    join(s, "setup: join", SETUP_V, &g, &m, &t);
    settle_epoch(s, &g, &m);
    s.play("setup: commit", 9, |side| {
        commit(&g, &t, &m, epoch(side, &g))
    });
    let at = |side: &Side, delta: i32| {
        with_offset_fetch_ids(side, fetch(&g, &t, Some(&m), epoch(side, &g) + delta))
    };
    s.play("member at its epoch", v, |side| at(side, 0));
    s.play("stale member epoch", v, |side| at(side, -1));
    let r = fetch(&g, &t, Some("nobody"), 1);
    s.play("unknown member", v, |side| {
        with_offset_fetch_ids(side, r.clone())
    });
    let r = fetch(&g, &t, None, -1);
    s.play("admin", v, |side| with_offset_fetch_ids(side, r.clone()));
    s.play("setup: leave", SETUP_V, |side| beat(side, &g, &m, -1, &[]));
    delete(s, &[&g]);
}

fn list(s: &mut Session, v: i16) {
    if v < 4 {
        return;
    }
    let t = format!("cgl-topic-v{v}");
    let g = format!("cgl-v{v}");
    create_topic(s, &t, 1, &[]);
    let m = format!("cgl-member-v{v}");
    join(s, "setup: join", SETUP_V, &g, &m, &t);
    let r = ListGroupsRequest::default().with_states_filter(vec![text("Stable")]);
    s.play("stable groups", v, |_| r.clone());
    if v >= 5 {
        let r = ListGroupsRequest::default().with_types_filter(vec![text("consumer")]);
        s.play("consumer groups", v, |_| r.clone());
        let r = ListGroupsRequest::default()
            .with_types_filter(vec![text("Consumer")])
            .with_states_filter(vec![text("stable")]);
        s.play("stable consumer groups", v, |_| r.clone());
    }
    s.play("setup: leave", SETUP_V, |side| beat(side, &g, &m, -1, &[]));
    if v >= 5 {
        let r = ListGroupsRequest::default().with_types_filter(vec![text("consumer")]);
        s.play("an empty consumer group", v, |_| r.clone());
    }
    delete(s, &[&g]);
}

/// A consumer-protocol assignment (version prefix + struct) of `partitions` of `t`.
fn assignment(t: &str, partitions: &[i32]) -> bytes::Bytes {
    use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
    use kafka_protocol::messages::ConsumerProtocolAssignment;
    use kafka_protocol::protocol::Encodable;
    let mut out = bytes::BytesMut::new();
    bytes::BufMut::put_i16(&mut out, 0);
    ConsumerProtocolAssignment::default()
        .with_assigned_partitions(vec![TopicPartition::default()
            .with_topic(topic(t))
            .with_partitions(partitions.to_vec())])
        .encode(&mut out, 0)
        .expect("encodable");
    out.freeze()
}

/// KIP-848's online upgrade and downgrade (`group.consumer.migration.policy` is
/// `bidirectional` by default on both brokers). One partition, so that both brokers'
/// uniform assignors leave it with its owner.
fn mixed(s: &mut Session, v: i16) {
    if v < 1 {
        return;
    }
    let t = format!("cgm-topic-v{v}");
    let g = format!("cgm-v{v}");
    let c = format!("cgm-consumer-v{v}");
    create_topic(s, &t, 1, &[]);
    groups::join(s, &g, JOIN_SETUP_V, &[&t], "setup: classic join");
    let owned = assignment(&t, &[0]);
    s.play("setup: classic sync", SYNC_SETUP_V, |side| {
        let mut r = sync_request(side, &g, SYNC_SETUP_V);
        r.assignments[0].assignment = owned.clone();
        r
    });
    join(
        s,
        "a consumer-protocol member upgrades the group",
        v,
        &g,
        &c,
        &t,
    );
    let r = ConsumerGroupDescribeRequest::default().with_group_ids(vec![group(&g)]);
    s.play(
        "ConsumerGroupDescribe: a classic and a consumer member",
        1,
        |_| r.clone(),
    );
    let r = DescribeGroupsRequest::default().with_groups(vec![group(&g)]);
    s.play("DescribeGroups of the upgraded group", 5, |_| r.clone());
    let r = ListGroupsRequest::default().with_types_filter(vec![text("consumer")]);
    s.play("ListGroups: the group is a consumer group", 5, |_| {
        r.clone()
    });
    let classic_beat = |side: &Side, g: &str, delta: i32| {
        HeartbeatRequest::default()
            .with_group_id(group(g))
            .with_generation_id(generation(side, g) + delta)
            .with_member_id(text(&member(side, g)))
    };
    s.play("classic Heartbeat: rejoin", 4, |side| {
        classic_beat(side, &g, 0)
    });
    s.play("classic Heartbeat, stale generation", 4, |side| {
        classic_beat(side, &g, -1)
    });
    groups::join(s, &g, JOIN_SETUP_V, &[&t], "classic member rejoins");
    s.play("classic SyncGroup: its assignment", 5, |side| {
        sync_request(side, &g, 5)
    });
    s.play("classic SyncGroup, another protocol", 5, |side| {
        sync_request(side, &g, 5).with_protocol_name(Some(text("roundrobin")))
    });
    s.play("classic Heartbeat: stable", 4, |side| {
        classic_beat(side, &g, 0)
    });
    s.play("classic OffsetCommit v8", 8, |side| {
        commit(&g, &t, &member(side, &g), generation(side, &g))
    });
    s.play("classic OffsetCommit, stale generation", 8, |side| {
        commit(&g, &t, &member(side, &g), generation(side, &g) - 1)
    });
    let r = JoinGroupRequest::default()
        .with_group_id(group(&g))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_member_id(text(""))
        .with_protocol_type(text("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(text("roundrobin"))
            .with_metadata(groups::subscription(&[&t]))]);
    s.play(
        "JoinGroup of a protocol the classic member lacks",
        JOIN_SETUP_V,
        |_| r.clone(),
    );
    s.play(
        "the consumer-protocol member leaves: downgrade",
        v,
        |side| beat(side, &g, &c, -1, &[]),
    );
    let r = DescribeGroupsRequest::default().with_groups(vec![group(&g)]);
    s.play("DescribeGroups of the downgraded group", 5, |_| r.clone());
    let r = ListGroupsRequest::default().with_types_filter(vec![text("classic")]);
    s.play("ListGroups: the group is classic again", 5, |_| r.clone());
    s.play("classic Heartbeat after the downgrade", 4, |side| {
        classic_beat(side, &g, 0)
    });
    groups::leave(s, &g);
    delete(s, &[&g]);
}
