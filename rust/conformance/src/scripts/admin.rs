//! Cluster administration on a single node: ElectLeaders, AlterPartitionReassignments,
//! ListPartitionReassignments, DescribeLogDirs, AlterReplicaLogDirs, and SCRAM credentials
//! (DescribeUserScramCredentials, AlterUserScramCredentials). A single node leads every
//! partition and has one replica to assign, so the successes here are the no-op ones and
//! most steps are the errors bad input gets.

use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::alter_replica_log_dirs_request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics;
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterReplicaLogDirsRequest,
    AlterUserScramCredentialsRequest, ApiKey, BrokerId, DescribeLogDirsRequest,
    DescribeUserScramCredentialsRequest, ElectLeadersRequest, ListPartitionReassignmentsRequest,
};

use super::script::{create_topic, produce, text, topic, until_both, Script};
use crate::session::Session;

const SCRAM_SHA_256: i8 = 1;
const SCRAM_SHA_512: i8 = 2;

pub fn scripts() -> Vec<Script> {
    vec![
        Script {
            name: "elect_leaders",
            api: ApiKey::ElectLeaders,
            quick: true,
            run: elect_leaders,
        },
        Script {
            name: "alter_partition_reassignments",
            api: ApiKey::AlterPartitionReassignments,
            quick: true,
            run: alter_reassignments,
        },
        Script {
            name: "list_partition_reassignments",
            api: ApiKey::ListPartitionReassignments,
            quick: true,
            run: list_reassignments,
        },
        Script {
            name: "describe_log_dirs",
            api: ApiKey::DescribeLogDirs,
            quick: true,
            run: describe_log_dirs,
        },
        Script {
            name: "alter_replica_log_dirs",
            api: ApiKey::AlterReplicaLogDirs,
            quick: true,
            run: alter_replica_log_dirs,
        },
        Script {
            name: "describe_user_scram_credentials",
            api: ApiKey::DescribeUserScramCredentials,
            quick: true,
            run: describe_scram,
        },
        Script {
            name: "alter_user_scram_credentials",
            api: ApiKey::AlterUserScramCredentials,
            quick: true,
            run: alter_scram,
        },
    ]
}

fn elect_leaders(s: &mut Session, v: i16) {
    let name = format!("el-v{v}");
    create_topic(s, &name, 2, &[]);
    let request = |election_type: i8, parts: Option<Vec<(&str, Vec<i32>)>>| {
        ElectLeadersRequest::default()
            .with_election_type(election_type)
            .with_timeout_ms(10_000)
            .with_topic_partitions(parts.map(|ps| {
                ps.into_iter()
                    .map(|(t, p)| {
                        TopicPartitions::default()
                            .with_topic(topic(t))
                            .with_partitions(p)
                    })
                    .collect()
            }))
    };
    let r = request(0, Some(vec![(&name, vec![0, 1])]));
    s.play("preferred, already leader", v, |_| r.clone());
    let r = request(0, Some(vec![("el-unknown", vec![0])]));
    s.play("unknown topic", v, |_| r.clone());
    let r = request(0, Some(vec![(&name, vec![7])]));
    s.play("unknown partition", v, |_| r.clone());
    let r = request(0, Some(vec![]));
    s.play("empty list", v, |_| r.clone());
    if v >= 1 {
        let r = request(1, Some(vec![(&name, vec![0])]));
        s.play("unclean, leader alive", v, |_| r.clone());
        let r = request(0, None);
        s.play("every partition", v, |_| r.clone());
    }
}

fn alter_reassignments(s: &mut Session, v: i16) {
    let name = format!("apr-v{v}");
    create_topic(s, &name, 1, &[]);
    let request = |t: &str, partition: i32, replicas: Option<Vec<i32>>| {
        AlterPartitionReassignmentsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![ReassignableTopic::default()
                .with_name(topic(t))
                .with_partitions(vec![ReassignablePartition::default()
                    .with_partition_index(partition)
                    .with_replicas(
                        replicas.map(|r| r.into_iter().map(BrokerId).collect()),
                    )])])
    };
    let r = request(&name, 0, Some(vec![1]));
    s.play("to the replica it has", v, |_| r.clone());
    let r = request(&name, 0, Some(vec![2]));
    s.play("to an unknown broker", v, |_| r.clone());
    let r = request(&name, 0, Some(vec![1, 1]));
    s.play("duplicate replica", v, |_| r.clone());
    let r = request(&name, 0, Some(vec![]));
    s.play("no replicas", v, |_| r.clone());
    let r = request(&name, 0, None);
    s.play("cancel, none in progress", v, |_| r.clone());
    let r = request("apr-unknown", 0, Some(vec![1]));
    s.play("unknown topic", v, |_| r.clone());
    let r = request(&name, 5, Some(vec![1]));
    s.play("unknown partition", v, |_| r.clone());
    let r = AlterPartitionReassignmentsRequest::default().with_timeout_ms(10_000);
    s.play("empty request", v, |_| r.clone());
}

fn list_reassignments(s: &mut Session, v: i16) {
    let name = format!("lpr-v{v}");
    create_topic(s, &name, 1, &[]);
    let request = |topics: Option<Vec<(&str, Vec<i32>)>>| {
        ListPartitionReassignmentsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(topics.map(|ts| {
                ts.into_iter()
                    .map(|(t, p)| {
                        ListPartitionReassignmentsTopics::default()
                            .with_name(topic(t))
                            .with_partition_indexes(p)
                    })
                    .collect()
            }))
    };
    let r = request(None);
    s.play("all, none in progress", v, |_| r.clone());
    let r = request(Some(vec![(&name, vec![0])]));
    s.play("named partition", v, |_| r.clone());
    let r = request(Some(vec![("lpr-unknown", vec![0])]));
    s.play("unknown topic", v, |_| r.clone());
    let r = request(Some(vec![(&name, vec![3])]));
    s.play("unknown partition", v, |_| r.clone());
}

fn describe_log_dirs(s: &mut Session, v: i16) {
    let name = format!("dld-v{v}");
    create_topic(s, &name, 2, &[]);
    produce(s, &name, 2);
    let request = |topics: Option<Vec<(&str, Vec<i32>)>>| {
        DescribeLogDirsRequest::default().with_topics(topics.map(|ts| {
            ts.into_iter()
                .map(|(t, p)| {
                    DescribableLogDirTopic::default()
                        .with_topic(topic(t))
                        .with_partitions(p)
                })
                .collect()
        }))
    };
    let r = request(Some(vec![(&name, vec![0, 1])]));
    s.play("named partitions", v, |_| r.clone());
    let r = request(Some(vec![(&name, vec![9])]));
    s.play("unknown partition", v, |_| r.clone());
    let r = request(Some(vec![("dld-unknown", vec![0])]));
    s.play("unknown topic", v, |_| r.clone());
    let r = request(Some(vec![]));
    s.play("no topics", v, |_| r.clone());
}

/// Topics, each with the partitions named.
type TopicPartitionList<'a> = Vec<(&'a str, Vec<i32>)>;

/// Each broker has one log dir, so the move that succeeds is the one to where the replica
/// already is; the rest are the errors: a dir the broker does not have, unknown topics and
/// partitions, and a partition named twice (the last dir named wins).
fn alter_replica_log_dirs(s: &mut Session, v: i16) {
    let name = format!("arld-v{v}");
    create_topic(s, &name, 2, &[]);
    produce(s, &name, 2);
    let answers = s.play("setup: the log dir", 1, |_| {
        DescribeLogDirsRequest::default().with_topics(Some(vec![DescribableLogDirTopic::default()
            .with_topic(topic(&name))
            .with_partitions(vec![0, 1])]))
    });
    for (side, answer) in s.sides.iter_mut().zip(&answers) {
        if let Some(dir) = answer.as_ref().ok().and_then(|r| r.results.first()) {
            side.vars.insert("log_dir".into(), dir.log_dir.to_string());
        }
    }
    const ELSEWHERE: &str = "/kafkalite-conformance/no-such-log-dir";
    let request = |dirs: Vec<(&str, TopicPartitionList)>| {
        AlterReplicaLogDirsRequest::default().with_dirs(
            dirs.into_iter()
                .map(|(path, topics)| {
                    AlterReplicaLogDir::default()
                        .with_path(text(path))
                        .with_topics(
                            topics
                                .into_iter()
                                .map(|(t, p)| {
                                    AlterReplicaLogDirTopic::default()
                                        .with_name(topic(t))
                                        .with_partitions(p)
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
    };
    let here = |side: &crate::session::Side| side.vars.get("log_dir").cloned().unwrap_or_default();
    s.play("to the dir it is in", v, |side| {
        request(vec![(&here(side), vec![(&name, vec![0, 1])])])
    });
    s.play("a dir the broker does not have", v, |_| {
        request(vec![(ELSEWHERE, vec![(&name, vec![0])])])
    });
    s.play("unknown topic", v, |side| {
        request(vec![(&here(side), vec![("arld-unknown", vec![0])])])
    });
    s.play("unknown partition", v, |side| {
        request(vec![(&here(side), vec![(&name, vec![9])])])
    });
    s.play("a partition named twice, the last dir wins", v, |side| {
        request(vec![
            (ELSEWHERE, vec![(&name, vec![1])]),
            (&here(side), vec![(&name, vec![1])]),
        ])
    });
    s.play("no dirs", v, |_| request(vec![]));
}

fn user(name: &str) -> UserName {
    UserName::default().with_name(text(name))
}

fn upsert(name: &str, mechanism: i8, iterations: i32) -> ScramCredentialUpsertion {
    ScramCredentialUpsertion::default()
        .with_name(text(name))
        .with_mechanism(mechanism)
        .with_iterations(iterations)
        .with_salt(bytes::Bytes::from_static(b"0123456789abcdef"))
        .with_salted_password(bytes::Bytes::from(vec![7u8; 32]))
}

fn delete(name: &str, mechanism: i8) -> ScramCredentialDeletion {
    ScramCredentialDeletion::default()
        .with_name(text(name))
        .with_mechanism(mechanism)
}

fn alter(
    s: &mut Session,
    step: &str,
    v: i16,
    upserts: Vec<ScramCredentialUpsertion>,
    deletes: Vec<ScramCredentialDeletion>,
) {
    let r = AlterUserScramCredentialsRequest::default()
        .with_upsertions(upserts)
        .with_deletions(deletes);
    s.play(step, v, |_| r.clone());
}

fn describe_scram(s: &mut Session, v: i16) {
    let request = |users: Option<Vec<UserName>>| {
        DescribeUserScramCredentialsRequest::default().with_users(users)
    };
    let r = request(Some(vec![user("dscram-nobody")]));
    s.play("unknown user", v, |_| r.clone());
    alter(
        s,
        "setup: upsert",
        0,
        vec![upsert("dscram-alice", SCRAM_SHA_256, 8192)],
        vec![],
    );
    alter(
        s,
        "setup: upsert 512",
        0,
        vec![upsert("dscram-alice", SCRAM_SHA_512, 4096)],
        vec![],
    );
    let r = request(Some(vec![user("dscram-alice")]));
    until_both(s, |s, side| {
        s.call_unrecorded(side, &r, 0).is_ok_and(|a| {
            a.results
                .iter()
                .map(|u| u.credential_infos.len())
                .sum::<usize>()
                == 2
        })
    });
    s.play("known user", v, |_| r.clone());
    let r = request(Some(vec![user("dscram-alice"), user("dscram-alice")]));
    s.play("duplicate user", v, |_| r.clone());
    let r = request(Some(vec![user("")]));
    s.play("empty name", v, |_| r.clone());
    let r = request(None);
    s.play("every user", v, |_| r.clone());
    let r = request(Some(vec![]));
    s.play("empty list", v, |_| r.clone());
    alter(
        s,
        "setup: delete",
        0,
        vec![],
        vec![
            delete("dscram-alice", SCRAM_SHA_256),
            delete("dscram-alice", SCRAM_SHA_512),
        ],
    );
}

fn alter_scram(s: &mut Session, v: i16) {
    alter(
        s,
        "upsert",
        v,
        vec![upsert("ascram-bob", SCRAM_SHA_256, 4096)],
        vec![],
    );
    alter(
        s,
        "upsert again",
        v,
        vec![upsert("ascram-bob", SCRAM_SHA_256, 5000)],
        vec![],
    );
    alter(
        s,
        "unknown mechanism",
        v,
        vec![upsert("ascram-bob", 0, 4096)],
        vec![],
    );
    alter(
        s,
        "too few iterations",
        v,
        vec![upsert("ascram-bob", SCRAM_SHA_512, 100)],
        vec![],
    );
    alter(
        s,
        "too many iterations",
        v,
        vec![upsert("ascram-bob", SCRAM_SHA_512, 20_000)],
        vec![],
    );
    alter(
        s,
        "empty name",
        v,
        vec![upsert("", SCRAM_SHA_256, 4096)],
        vec![],
    );
    alter(
        s,
        "same user upserted and deleted",
        v,
        vec![upsert("ascram-carol", SCRAM_SHA_256, 4096)],
        vec![delete("ascram-carol", SCRAM_SHA_256)],
    );
    alter(
        s,
        "delete unknown",
        v,
        vec![],
        vec![delete("ascram-nobody", SCRAM_SHA_256)],
    );
    alter(
        s,
        "delete unknown mechanism",
        v,
        vec![],
        vec![delete("ascram-bob", 9)],
    );
    alter(
        s,
        "delete",
        v,
        vec![],
        vec![delete("ascram-bob", SCRAM_SHA_256)],
    );
    alter(s, "empty request", v, vec![], vec![]);
}
