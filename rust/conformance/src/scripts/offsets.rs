//! Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete.

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    ApiKey, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest,
};

use super::groups::{generation, join_stable, leave, member};
use super::script::{
    create_topic, group, text, topic, with_commit_ids, with_offset_fetch_ids, Script,
};
use crate::session::{Session, Side};

const COMMIT_SETUP_V: i16 = 7;

pub fn scripts() -> Vec<Script> {
    vec![
        Script {
            name: "offset_commit",
            api: ApiKey::OffsetCommit,
            quick: true,
            run: offset_commit,
        },
        Script {
            name: "offset_fetch",
            api: ApiKey::OffsetFetch,
            quick: true,
            run: offset_fetch,
        },
        Script {
            name: "offset_delete",
            api: ApiKey::OffsetDelete,
            quick: true,
            run: offset_delete,
        },
    ]
}

/// (partition, offset, metadata) commits to one topic.
fn commit(g: &str, t: &str, parts: &[(i32, i64, Option<&str>)]) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(group(g))
        .with_generation_id_or_member_epoch(-1)
        .with_retention_time_ms(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(topic(t))
            .with_partitions(
                parts
                    .iter()
                    .map(|(p, o, m)| {
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(*p)
                            .with_committed_offset(*o)
                            .with_committed_leader_epoch(-1)
                            .with_committed_metadata(m.map(text))
                    })
                    .collect(),
            )])
}

fn as_member(side: &Side, g: &str, r: OffsetCommitRequest, gen_delta: i32) -> OffsetCommitRequest {
    r.with_generation_id_or_member_epoch(generation(side, g) + gen_delta)
        .with_member_id(text(&member(side, g)))
}

fn offset_commit(s: &mut Session, v: i16) {
    let t = format!("oc-v{v}");
    let g = format!("ocg-v{v}");
    create_topic(s, &t, 2, &[]);
    let r = commit(&g, &t, &[(0, 5, Some("meta")), (1, 0, None)]);
    s.play("simple commit, with and without metadata", v, |side| {
        with_commit_ids(side, r.clone())
    });
    let r = commit(&g, "oc-unknown", &[(0, 1, None)]);
    s.play("unknown topic", v, |side| with_commit_ids(side, r.clone()));
    // A topic named twice answers once (by name, or from v10 by id: the nil one here).
    let mut r = commit(&g, "oc-unknown", &[(0, 1, None)]);
    r.topics
        .extend(commit(&g, "oc-unknown", &[(1, 1, None)]).topics);
    s.play("an unknown topic twice", v, |side| {
        with_commit_ids(side, r.clone())
    });
    let r = commit(&g, &t, &[(9, 1, None)]);
    s.play("unknown partition", v, |side| {
        with_commit_ids(side, r.clone())
    });
    let big = "m".repeat(5000);
    let r = commit(&g, &t, &[(0, 1, Some(&big))]);
    s.play("metadata too large", v, |side| {
        with_commit_ids(side, r.clone())
    });
    let r = commit("", &t, &[(0, 1, None)]);
    s.play("empty group id", v, |side| with_commit_ids(side, r.clone()));
    let r = commit("", "oc-unknown", &[(0, 1, None)]);
    s.play("empty group id, unknown topic", v, |side| {
        with_commit_ids(side, r.clone())
    });

    let mg = format!("ocm-v{v}");
    join_stable(s, &mg, &[&t]);
    s.play("group member", v, |side| {
        with_commit_ids(
            side,
            as_member(side, &mg, commit(&mg, &t, &[(0, 2, None)]), 0),
        )
    });
    s.play("stale generation", v, |side| {
        with_commit_ids(
            side,
            as_member(side, &mg, commit(&mg, &t, &[(0, 2, None)]), 4),
        )
    });
    s.play("unknown member", v, |side| {
        let r = as_member(side, &mg, commit(&mg, &t, &[(0, 2, None)]), 0);
        with_commit_ids(side, r.with_member_id(text("nobody")))
    });
    s.play("simple commit to an active group", v, |side| {
        with_commit_ids(side, commit(&mg, &t, &[(0, 2, None)]))
    });
    leave(s, &mg);
    let r = commit(&format!("ocg-none-v{v}"), &t, &[(0, 1, None)])
        .with_generation_id_or_member_epoch(3)
        .with_member_id(text("someone"));
    s.play("member of a group that does not exist", v, |side| {
        with_commit_ids(side, r.clone())
    });
    let r = OffsetCommitRequest::default()
        .with_group_id(group(&g))
        .with_generation_id_or_member_epoch(-1);
    s.play("empty request", v, |side| with_commit_ids(side, r.clone()));
}

fn fetch_request(v: i16, g: &str, topics: Option<&[(&str, &[i32])]>) -> OffsetFetchRequest {
    if v >= 8 {
        OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
            .with_group_id(group(g))
            .with_topics(topics.map(|ts| {
                ts.iter()
                    .map(|(n, ps)| {
                        OffsetFetchRequestTopics::default()
                            .with_name(topic(n))
                            .with_partition_indexes(ps.to_vec())
                    })
                    .collect()
            }))])
    } else {
        OffsetFetchRequest::default()
            .with_group_id(group(g))
            .with_topics(topics.map(|ts| {
                ts.iter()
                    .map(|(n, ps)| {
                        OffsetFetchRequestTopic::default()
                            .with_name(topic(n))
                            .with_partition_indexes(ps.to_vec())
                    })
                    .collect()
            }))
    }
}

fn offset_fetch(s: &mut Session, v: i16) {
    let t = format!("of-v{v}");
    let g = format!("ofg-v{v}");
    create_topic(s, &t, 3, &[]);
    let r = commit(&g, &t, &[(0, 5, Some("meta")), (1, 7, None)]);
    s.play("setup: commit", COMMIT_SETUP_V, |_| r.clone());
    if v >= 10 {
        // v10 names topics by id: one whose id each broker gave, one no broker gave.
        let r = fetch_request(v, &g, Some(&[(&t, &[0]), ("of-unknown", &[0, 1])]));
        s.play("a known and an unknown topic id", v, |side| {
            with_offset_fetch_ids(side, r.clone())
        });
    }
    let r = fetch_request(v, &g, Some(&[(&t, &[0, 1, 2])]));
    s.play("committed, null metadata, uncommitted", v, |side| {
        with_offset_fetch_ids(side, r.clone())
    });
    let r = fetch_request(v, &g, Some(&[("of-unknown", &[0])]));
    s.play("unknown topic", v, |side| {
        with_offset_fetch_ids(side, r.clone())
    });
    let r = fetch_request(v, "ofg-unknown", Some(&[(&t, &[0])]));
    s.play("unknown group", v, |side| {
        with_offset_fetch_ids(side, r.clone())
    });
    if v >= 2 {
        let r = fetch_request(v, &g, None);
        s.play("all topics", v, |side| {
            with_offset_fetch_ids(side, r.clone())
        });
    }
    if v >= 7 {
        let r = fetch_request(v, &g, Some(&[(&t, &[0])])).with_require_stable(true);
        s.play("require stable", v, |side| {
            with_offset_fetch_ids(side, r.clone())
        });
    }
    let r = fetch_request(v, &g, Some(&[]));
    s.play("no topics", v, |side| {
        with_offset_fetch_ids(side, r.clone())
    });
    let r = fetch_request(v, "", Some(&[(&t, &[0])]));
    s.play("empty group id", v, |side| {
        with_offset_fetch_ids(side, r.clone())
    });
}

fn offset_delete(s: &mut Session, v: i16) {
    let t = format!("od-v{v}");
    let g = format!("odg-v{v}");
    create_topic(s, &t, 2, &[]);
    let r = commit(&g, &t, &[(0, 5, None), (1, 6, None)]);
    s.play("setup: commit", COMMIT_SETUP_V, |_| r.clone());
    let request = |g: &str, t: &str, parts: &[i32]| {
        OffsetDeleteRequest::default()
            .with_group_id(group(g))
            .with_topics(vec![OffsetDeleteRequestTopic::default()
                .with_name(topic(t))
                .with_partitions(
                    parts
                        .iter()
                        .map(|p| OffsetDeleteRequestPartition::default().with_partition_index(*p))
                        .collect(),
                )])
    };
    let r = request(&g, &t, &[0]);
    s.play("success", v, |_| r.clone());
    let r = request(&g, "od-unknown", &[0]);
    s.play("unknown topic", v, |_| r.clone());
    let r = request(&g, &t, &[7]);
    s.play("unknown partition", v, |_| r.clone());
    let r = request("odg-unknown", &t, &[0]);
    s.play("unknown group", v, |_| r.clone());
    // Kafka takes "" as a group to commit to, but not to delete offsets from (found by the
    // conformance fuzzer).
    let r = commit("", &t, &[(0, 3, None)]);
    s.play(
        "setup: commit to the empty group id",
        COMMIT_SETUP_V,
        |_| r.clone(),
    );
    let r = request("", &t, &[0]);
    s.play("empty group id", v, |_| r.clone());
    let active = format!("oda-v{v}");
    join_stable(s, &active, &[&t]);
    s.play("setup: commit as member", COMMIT_SETUP_V, |side| {
        commit(&active, &t, &[(0, 1, None)])
            .with_generation_id_or_member_epoch(generation(side, &active))
            .with_member_id(text(&member(side, &active)))
    });
    let r = request(&active, &t, &[0]);
    s.play("group subscribed to the topic", v, |_| r.clone());
    leave(s, &active);
}
