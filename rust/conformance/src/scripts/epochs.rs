//! Leader epochs: OffsetForLeaderEpoch (what followers truncate by, KIP-101/279, and
//! consumers validate positions with, KIP-320).

use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{ApiKey, OffsetForLeaderEpochRequest};

use super::script::{create_topic, produce, topic, Script};
use crate::session::Session;

pub fn scripts() -> Vec<Script> {
    vec![Script {
        name: "offset_for_leader_epoch",
        api: ApiKey::OffsetForLeaderEpoch,
        quick: true,
        run: offset_for_leader_epoch,
    }]
}

/// One partition of `t`: (partition, current leader epoch, requested epoch).
fn request(t: &str, parts: &[(i32, i32, i32)]) -> OffsetForLeaderEpochRequest {
    OffsetForLeaderEpochRequest::default()
        .with_replica_id((-1).into())
        .with_topics(vec![OffsetForLeaderTopic::default()
            .with_topic(topic(t))
            .with_partitions(
                parts
                    .iter()
                    .map(|&(p, current, epoch)| {
                        OffsetForLeaderPartition::default()
                            .with_partition(p)
                            .with_current_leader_epoch(current)
                            .with_leader_epoch(epoch)
                    })
                    .collect(),
            )])
}

fn offset_for_leader_epoch(s: &mut Session, v: i16) {
    let t = format!("ofle-v{v}");
    create_topic(s, &t, 2, &[]);
    produce(s, &t, 2);
    let r = request(&t, &[(0, -1, 0), (1, -1, 0)]);
    s.play(
        "the current epoch ends at the log end; an empty partition's is undefined",
        v,
        |_| r.clone(),
    );
    let r = request(&t, &[(0, 0, 0)]);
    s.play("current leader epoch given", v, |_| r.clone());
    let r = request(&t, &[(0, -1, 7)]);
    s.play("an epoch newer than the leader's", v, |_| r.clone());
    let r = request(&t, &[(0, -1, -1)]);
    s.play("undefined epoch", v, |_| r.clone());
    let r = request(&t, &[(0, 3, 0)]);
    s.play("a future current leader epoch", v, |_| r.clone());
    let r = request(&t, &[(0, -5, 0)]);
    s.play("a current leader epoch below -1", v, |_| r.clone());
    let r = request(&t, &[(9, -1, 0)]);
    s.play("unknown partition", v, |_| r.clone());
    let r = request("ofle-unknown", &[(0, -1, 0)]);
    s.play("unknown topic", v, |_| r.clone());
}
