//! Fetch from follower (KIP-392) as one broker can show it: both brokers run in rack
//! `r1` with Kafka's RackAwareReplicaSelector (`brokers.py`'s shared settings), so a
//! consumer's Fetch v11+ goes through the selector whatever its rack: its own rack (the
//! leader is there), another rack (no replica there) and none all read from the leader,
//! with `preferred_read_replica` -1; the read's own answers (from the start, at and past
//! the end, read_committed, fenced, future and below -1 leader epochs) stay Kafka's. The
//! selector key itself: described as Kafka describes it, and refused as a dynamic change.

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, DescribeConfigsRequest, FetchRequest, IncrementalAlterConfigsRequest,
};

use super::script::{create_topic, produce, text, topic, with_fetch_ids, Script};
use crate::session::Session;

/// The rack both brokers of a conformance run are in.
pub const RACK: &str = "r1";
const BROKER: i8 = 4;

pub fn scripts() -> Vec<Script> {
    vec![
        Script {
            name: "fetch_with_rack",
            api: ApiKey::Fetch,
            quick: true,
            run: fetch_with_rack,
        },
        Script {
            name: "describe_replica_selector",
            api: ApiKey::DescribeConfigs,
            quick: true,
            run: describe_replica_selector,
        },
        Script {
            name: "alter_replica_selector",
            api: ApiKey::IncrementalAlterConfigs,
            quick: true,
            run: alter_replica_selector,
        },
    ]
}

/// A consumer's Fetch of `name`/0 at `offset` from `rack`, in leader epoch `epoch`.
fn request(name: &str, rack: &str, offset: i64, epoch: i32) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_rack_id(text(rack))
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic(name))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(offset)
                .with_current_leader_epoch(epoch)
                .with_log_start_offset(-1)
                .with_partition_max_bytes(1 << 20)])])
}

fn fetch_with_rack(s: &mut Session, v: i16) {
    let name = format!("rr-v{v}");
    create_topic(s, &name, 1, &[]);
    produce(s, &name, 2);
    for (rack, what) in [
        (RACK, "the broker's own rack"),
        ("r2", "a rack with no replica"),
        ("", "no rack"),
    ] {
        let r = request(&name, rack, 0, -1);
        s.play(&format!("{what}: from the start"), v, |side| {
            with_fetch_ids(side, r.clone())
        });
    }
    let r = request(&name, "r2", 0, 0);
    s.play("another rack, the current leader epoch", v, |side| {
        with_fetch_ids(side, r.clone())
    });
    let r = request(&name, "r2", 6, -1);
    s.play("another rack, at the log end", v, |side| {
        with_fetch_ids(side, r.clone())
    });
    let r = request(&name, "r2", 7, -1);
    s.play("another rack, past the log end", v, |side| {
        with_fetch_ids(side, r.clone())
    });
    let r = request(&name, "r2", 0, -1).with_isolation_level(1);
    s.play("another rack, read committed", v, |side| {
        with_fetch_ids(side, r.clone())
    });
    if v >= 9 {
        for (epoch, what) in [(1, "a future"), (-5, "a below -1")] {
            let r = request(&name, "r2", 0, epoch);
            s.play(&format!("another rack, {what} leader epoch"), v, |side| {
                with_fetch_ids(side, r.clone())
            });
        }
    }
}

fn describe_replica_selector(s: &mut Session, v: i16) {
    let keys = ["replica.selector.class", "broker.rack"];
    for synonyms in [false, true] {
        let r = DescribeConfigsRequest::default()
            .with_include_synonyms(synonyms)
            .with_resources(vec![DescribeConfigsResource::default()
                .with_resource_type(BROKER)
                .with_resource_name(text("1"))
                .with_configuration_keys(Some(keys.iter().map(|k| text(k)).collect()))]);
        let what = if synonyms { " with synonyms" } else { "" };
        s.play(&format!("the selector and rack keys{what}"), v, |_| {
            r.clone()
        });
    }
}

fn alter_replica_selector(s: &mut Session, v: i16) {
    // Read-only in Kafka: no broker changes its selector while it runs.
    for value in [
        Some("org.apache.kafka.common.replica.RackAwareReplicaSelector"),
        None,
    ] {
        let r = IncrementalAlterConfigsRequest::default()
            .with_validate_only(true)
            .with_resources(vec![AlterConfigsResource::default()
                .with_resource_type(BROKER)
                .with_resource_name(text("1"))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(text("replica.selector.class"))
                    .with_config_operation(if value.is_some() { 0 } else { 1 })
                    .with_value(value.map(text))])]);
        let what = if value.is_some() { "set" } else { "deleted" };
        s.play(&format!("the selector {what} dynamically"), v, |_| {
            r.clone()
        });
    }
}
