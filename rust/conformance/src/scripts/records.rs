//! Records in and out: Produce, Fetch, ListOffsets, InitProducerId.

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, InitProducerIdRequest, ListOffsetsRequest, ProduceRequest,
};

use super::script::{
    batch, create_topic, produce, produce_request, topic, with_fetch_ids, with_produce_ids, Script,
};
use crate::session::Session;

pub fn scripts() -> Vec<Script> {
    vec![
        Script {
            name: "produce",
            api: ApiKey::Produce,
            quick: true,
            run: produce_script,
        },
        Script {
            name: "fetch",
            api: ApiKey::Fetch,
            quick: true,
            run: fetch,
        },
        Script {
            name: "list_offsets",
            api: ApiKey::ListOffsets,
            quick: true,
            run: list_offsets,
        },
        Script {
            name: "init_producer_id",
            api: ApiKey::InitProducerId,
            quick: true,
            run: init_producer_id,
        },
    ]
}

fn produce_script(s: &mut Session, v: i16) {
    let name = format!("pr-v{v}");
    create_topic(s, &name, 2, &[]);
    let ok = produce_request(&name, 0, Some(batch(3, 16)));
    s.play("success", v, |side| with_produce_ids(side, ok.clone()));
    s.play("success, next offsets", v, |side| {
        with_produce_ids(side, ok.clone())
    });
    let r = produce_request(&name, 1, Some(batch(1, 0)));
    s.play("second partition, empty value", v, |side| {
        with_produce_ids(side, r.clone())
    });
    let r = produce_request(&name, 7, Some(batch(1, 8)));
    s.play("unknown partition", v, |side| {
        with_produce_ids(side, r.clone())
    });
    let r = produce_request("pr-unknown", 0, Some(batch(1, 8)));
    s.play("unknown topic", v, |side| with_produce_ids(side, r.clone()));

    // The largest batch the default message.max.bytes (1048588) takes.
    let r = produce_request(&name, 1, Some(batch(1, 1_048_000)));
    s.play("maximal batch", v, |side| with_produce_ids(side, r.clone()));
    let r = produce_request(&name, 1, Some(batch(1, 1_049_000)));
    s.play("batch over message.max.bytes", v, |side| {
        with_produce_ids(side, r.clone())
    });

    let small = format!("pr-small-v{v}");
    create_topic(s, &small, 1, &[("max.message.bytes", "200")]);
    let r = produce_request(&small, 0, Some(batch(4, 100)));
    s.play("record too large", v, |side| {
        with_produce_ids(side, r.clone())
    });

    let mut corrupt = batch(2, 8).to_vec();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff; // a value byte: the CRC no longer matches
    let r = produce_request(&name, 0, Some(corrupt.into()));
    s.play("corrupt batch (bad CRC)", v, |side| {
        with_produce_ids(side, r.clone())
    });

    // A base offset other than 0 (outside the CRC): INVALID_RECORD (fuzzer-found).
    let mut offset = batch(1, 8).to_vec();
    offset[..8].copy_from_slice(&5_i64.to_be_bytes());
    let r = produce_request(&name, 0, Some(offset.into()));
    s.play("batch base offset not 0", v, |side| {
        with_produce_ids(side, r.clone())
    });

    let compact = format!("pr-compact-v{v}");
    create_topic(s, &compact, 1, &[("cleanup.policy", "compact")]);
    let keyless = kafkalite_core::records::encode_batch(
        &[kafkalite_core::records::RecordInput {
            timestamp: 1_700_000_000_000,
            key: None,
            value: Some(b"no key".to_vec()),
            headers: vec![],
        }],
        kafkalite_core::records::Compression::None,
        0,
    )
    .expect("valid batch");
    let r = produce_request(&compact, 0, Some(keyless.into()));
    s.play("keyless record on a compacted topic", v, |side| {
        with_produce_ids(side, r.clone())
    });

    // Kafka 4's message.timestamp.after.max.ms default (1 h) refuses records from the future.
    let ahead = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
        + 2 * 3_600_000;
    let future = kafkalite_core::records::encode_batch(
        &[kafkalite_core::records::RecordInput {
            timestamp: ahead,
            key: Some(b"k".to_vec()),
            value: Some(b"from the future".to_vec()),
            headers: vec![],
        }],
        kafkalite_core::records::Compression::None,
        0,
    )
    .expect("valid batch");
    let r = produce_request(&name, 0, Some(future.into()));
    s.play("timestamp two hours ahead", v, |side| {
        with_produce_ids(side, r.clone())
    });

    let r = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(30_000);
    s.play("empty request", v, |side| with_produce_ids(side, r.clone()));
    let r = produce_request(&name, 0, Some(batch(1, 8))).with_acks(1);
    s.play("acks=1", v, |side| with_produce_ids(side, r.clone()));
    let r = produce_request(&name, 0, Some(batch(1, 8))).with_acks(2);
    s.play("invalid acks", v, |side| with_produce_ids(side, r.clone()));
}

fn fetch_request(v: i16, parts: &[(&str, i32, i64)]) -> FetchRequest {
    let mut topics: Vec<FetchTopic> = Vec::new();
    for (name, partition, offset) in parts {
        let p = FetchPartition::default()
            .with_partition(*partition)
            .with_fetch_offset(*offset)
            .with_partition_max_bytes(1 << 20)
            .with_log_start_offset(if v >= 5 { -1 } else { 0 });
        match topics.iter_mut().find(|t| t.topic.0.as_str() == *name) {
            Some(t) => t.partitions.push(p),
            None => topics.push(
                FetchTopic::default()
                    .with_topic(topic(name))
                    .with_partitions(vec![p]),
            ),
        }
    }
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(50 << 20)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(topics)
}

fn fetch(s: &mut Session, v: i16) {
    let name = format!("fe-v{v}");
    create_topic(s, &name, 2, &[]);
    produce(s, &name, 2);
    let r = fetch_request(v, &[(&name, 0, 0)]);
    s.play("from the start", v, |side| with_fetch_ids(side, r.clone()));
    let r = fetch_request(v, &[(&name, 0, 4), (&name, 1, 0)]);
    s.play("inside a batch, and an empty partition", v, |side| {
        with_fetch_ids(side, r.clone())
    });
    let r = fetch_request(v, &[(&name, 0, 6)]);
    s.play("at the log end", v, |side| with_fetch_ids(side, r.clone()));
    let r = fetch_request(v, &[(&name, 0, 100)]);
    s.play("offset out of range", v, |side| {
        with_fetch_ids(side, r.clone())
    });
    let r = fetch_request(v, &[(&name, 9, 0)]);
    s.play("unknown partition", v, |side| {
        with_fetch_ids(side, r.clone())
    });
    let r = fetch_request(v, &[("fe-unknown", 0, 0)]);
    s.play("unknown topic", v, |side| with_fetch_ids(side, r.clone()));
    let r = fetch_request(v, &[(&name, 0, 0)]).with_isolation_level(1);
    s.play("read committed", v, |side| with_fetch_ids(side, r.clone()));
    if v >= 4 {
        let r = fetch_request(v, &[(&name, 0, 0)]).with_isolation_level(2);
        s.play("an isolation level that does not exist", v, |side| {
            with_fetch_ids(side, r.clone())
        });
    }
    if v >= 7 {
        // Found by the conformance fuzzer: with no session, only epochs 0 (open one) and
        // -1 (sessionless) mean something.
        for (id, epoch) in [(12_345, -1), (i32::MIN, -1), (-5, -1), (-5, 0), (12_345, 0)] {
            let r = fetch_request(v, &[(&name, 0, 0)])
                .with_session_id(id)
                .with_session_epoch(epoch);
            s.play(
                &format!("session {id}, epoch {epoch}: no such session"),
                v,
                |side| with_fetch_ids(side, r.clone()),
            );
        }
        for epoch in [-3, 5] {
            let r = fetch_request(v, &[(&name, 0, 0)]).with_session_epoch(epoch);
            s.play(
                &format!("session epoch {epoch} without a session"),
                v,
                |side| with_fetch_ids(side, r.clone()),
            );
        }
    }
    // Found by the conformance fuzzer: a replica id that names no replica, and a leader
    // epoch newer than the partition's.
    let mut r = fetch_request(v, &[(&name, 0, 0)]);
    if v >= 15 {
        r.replica_state.replica_id = BrokerId(77);
    } else {
        r.replica_id = BrokerId(77);
    }
    s.play("a replica id that is no replica", v, |side| {
        with_fetch_ids(side, r.clone())
    });
    if v >= 9 {
        let mut r = fetch_request(v, &[(&name, 0, 0)]);
        r.topics[0].partitions[0].current_leader_epoch = 255;
        s.play("a future leader epoch", v, |side| {
            with_fetch_ids(side, r.clone())
        });
        let mut r = fetch_request(v, &[(&name, 0, 0)]);
        r.topics[0].partitions[0].current_leader_epoch = -5;
        s.play("a leader epoch below -1", v, |side| {
            with_fetch_ids(side, r.clone())
        });
    }
    let r = fetch_request(v, &[]);
    s.play("empty request", v, |side| with_fetch_ids(side, r.clone()));
}

fn list_offsets_request(v: i16, parts: &[(&str, i32, i64)]) -> ListOffsetsRequest {
    let topics = parts
        .iter()
        .map(|(name, partition, ts)| {
            ListOffsetsTopic::default()
                .with_name(topic(name))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(*partition)
                    .with_timestamp(*ts)
                    .with_current_leader_epoch(-1)])
        })
        .collect();
    let _ = v;
    ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(topics)
}

fn list_offsets(s: &mut Session, v: i16) {
    let name = format!("lo-v{v}");
    create_topic(s, &name, 1, &[]);
    let r = list_offsets_request(v, &[(&name, 0, -2)]);
    s.play("earliest, empty log", v, |_| r.clone());
    produce(s, &name, 2);
    let r = list_offsets_request(v, &[(&name, 0, -2)]);
    s.play("earliest", v, |_| r.clone());
    let r = list_offsets_request(v, &[(&name, 0, -1)]);
    s.play("latest", v, |_| r.clone());
    let r = list_offsets_request(v, &[(&name, 0, 1_700_000_000_001)]);
    s.play("by timestamp", v, |_| r.clone());
    let r = list_offsets_request(v, &[(&name, 0, 1_800_000_000_000)]);
    s.play("timestamp past the end", v, |_| r.clone());
    if v >= 7 {
        let r = list_offsets_request(v, &[(&name, 0, -3)]);
        s.play("max timestamp", v, |_| r.clone());
    }
    if v >= 8 {
        let r = list_offsets_request(v, &[(&name, 0, -4)]);
        s.play("earliest local", v, |_| r.clone());
    }
    if v >= 9 {
        let r = list_offsets_request(v, &[(&name, 0, -5)]);
        s.play("latest tiered", v, |_| r.clone());
    }
    if v >= 10 {
        let r = list_offsets_request(v, &[(&name, 0, -1)]).with_timeout_ms(1_000);
        s.play("with a timeout", v, |_| r.clone());
    }
    // A negative timestamp the version does not know: UNSUPPORTED_VERSION, even for an
    // unknown topic (found by the conformance fuzzer).
    let newest_special = [(7, -3), (8, -4), (9, -5)]
        .iter()
        .filter(|(since, _)| v < *since)
        .map(|(_, ts)| *ts)
        .next()
        .unwrap_or(-6);
    let r = list_offsets_request(v, &[(&name, 0, newest_special)]);
    s.play("timestamp unknown to the version", v, |_| r.clone());
    let r = list_offsets_request(v, &[("lo-unknown", 0, -7)]);
    s.play("timestamp unknown to the version, unknown topic", v, |_| {
        r.clone()
    });
    let r = list_offsets_request(v, &[(&name, 4, -1)]);
    s.play("unknown partition", v, |_| r.clone());
    let r = list_offsets_request(v, &[("lo-unknown", 0, -1)]);
    s.play("unknown topic", v, |_| r.clone());
    if v >= 4 {
        let mut r = list_offsets_request(v, &[(&name, 0, -1)]);
        r.topics[0].partitions[0].current_leader_epoch = 7;
        s.play("future leader epoch", v, |_| r.clone());
        // Found by the conformance fuzzer: only -1 means "no epoch".
        let mut r = list_offsets_request(v, &[(&name, 0, -1)]);
        r.topics[0].partitions[0].current_leader_epoch = -5;
        s.play("a leader epoch below -1", v, |_| r.clone());
    }
    if v >= 2 {
        let r = list_offsets_request(v, &[(&name, 0, -1)]).with_isolation_level(1);
        s.play("read committed", v, |_| r.clone());
        let r = list_offsets_request(v, &[(&name, 0, -1)]).with_isolation_level(2);
        s.play("an isolation level that does not exist", v, |_| r.clone());
    }
    let r = list_offsets_request(v, &[]);
    s.play("empty request", v, |_| r.clone());
}

fn init_producer_id(s: &mut Session, v: i16) {
    let r = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(60_000)
        .with_producer_id((-1).into())
        .with_producer_epoch(-1);
    s.play("idempotent producer", v, |_| r.clone());
    // The codec's default transactional id is "" (the field has no null default).
    let r = r.with_transactional_id(Some(Default::default()));
    s.play("empty transactional id", v, |_| r.clone());
    // A producer id without an epoch, or an epoch without an id: INVALID_REQUEST.
    if v >= 3 {
        let bad = r.clone().with_transactional_id(None).with_producer_epoch(4);
        s.play("epoch without a producer id", v, |_| bad.clone());
        let bad = bad.with_producer_id(1000.into()).with_producer_epoch(-1);
        s.play("producer id without an epoch", v, |_| bad.clone());
    }
}
