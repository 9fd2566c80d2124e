//! DescribeProducers (v0): per partition, the producers its state knows (epoch, last
//! sequence, last timestamp) and the first offset of each one's open transaction (-1 for
//! none). In Kafka's order: INVALID_TOPIC_EXCEPTION for an illegal name,
//! TOPIC_AUTHORIZATION_FAILED without READ on the topic, UNKNOWN_TOPIC_OR_PARTITION for a
//! partition not here (these three with Kafka's messages); NOT_LEADER_OR_FOLLOWER in
//! cluster mode when this broker does not lead it.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{
    DescribeProducersRequest, DescribeProducersResponse, ProducerId, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::cluster::check_leader;
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::{validate_topic_name, BrokerState};

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DescribeProducersRequest::decode(&mut body, version)?;
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let refusal = topic_refusal(state, ctx, &t.name);
            let partitions = t
                .partition_indexes
                .iter()
                .map(|&index| match &refusal {
                    Some((code, message)) => PartitionResponse::default()
                        .with_partition_index(index)
                        .with_error_code(*code)
                        .with_error_message(Some(StrBytes::from_string(message.clone()))),
                    None => describe(state, &t.name, index),
                })
                .collect();
            TopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    encode(
        &DescribeProducersResponse::default().with_topics(topics),
        version,
    )
    .map(Some)
}

/// Why every partition of the topic is refused, if it is.
fn topic_refusal(
    state: &BrokerState,
    ctx: &RequestContext<'_>,
    name: &str,
) -> Option<(i16, String)> {
    if let Err(e) = validate_topic_name(name) {
        Some((e.code, e.message))
    } else if !authz::topic(state, ctx, authz::operation::READ, name) {
        Some((
            codes::TOPIC_AUTHORIZATION_FAILED,
            "Topic authorization failed.".into(),
        ))
    } else if state.topic(name).is_none() {
        Some((
            codes::UNKNOWN_TOPIC_OR_PARTITION,
            "This server does not host this topic-partition.".into(),
        ))
    } else {
        None
    }
}

fn describe(state: &BrokerState, topic: &str, index: i32) -> PartitionResponse {
    let out = PartitionResponse::default().with_partition_index(index);
    let found = state
        .topic(topic)
        .map_or(Err(codes::UNKNOWN_TOPIC_OR_PARTITION), |t| {
            t.hosted_or_code(index, state.config.node_id, -1)
        });
    let partition = match found {
        Ok(partition) => partition,
        Err(code) => return out.with_error_code(code),
    };
    if state.cluster.is_some() {
        let code = check_leader(&partition.replica_state(), state.config.node_id, -1);
        if code != codes::NONE {
            return out.with_error_code(code);
        }
    }
    let ongoing = partition.ongoing_transactions();
    let mut producers = partition.producers.lock().expect("lock");
    // Those idle past `producer.id.expiration.ms` are gone, as from Kafka's state.
    producers.set_expiration_ms(state.dynamic.live().producer_id_expiration_ms);
    producers.expire(kafkalite_core::storage::clock::now_ms());
    let active = producers
        .iter()
        .map(|(id, entry)| {
            let last = entry.batches.back();
            ProducerState::default()
                .with_producer_id(ProducerId(id))
                .with_producer_epoch(i32::from(entry.epoch))
                .with_last_sequence(entry.last_seq().unwrap_or(-1))
                .with_last_timestamp(last.map_or(-1, |_| entry.last_seen_ms))
                .with_coordinator_epoch(partition.coordinator_epoch(id).unwrap_or(-1))
                .with_current_txn_start_offset(
                    ongoing
                        .iter()
                        .find(|(p, _)| *p == id)
                        .map_or(-1, |(_, first)| *first),
                )
        })
        .collect();
    out.with_active_producers(active)
}
