//! OffsetForLeaderEpoch (v2–4): for each partition, the largest epoch at or below the
//! requested one that this leader's epoch cache knows and the offset where the next epoch
//! starts (the log end for the latest epoch), as Kafka's `LeaderEpochFileCache.endOffsetFor`
//! answers. Followers truncate to it before fetching (KIP-101/279); consumers use it to
//! detect truncation after a leader change (KIP-320).
//!
//! Errors, in Kafka's order: unknown partition: UNKNOWN_TOPIC_OR_PARTITION (3); a
//! `current_leader_epoch` older than this leader's: FENCED_LEADER_EPOCH (74), newer:
//! UNKNOWN_LEADER_EPOCH (75); not the leader: NOT_LEADER_OR_FOLLOWER (6). An epoch the
//! leader never had is not an error, as in Kafka: one older than every epoch it knows
//! ends where the first known epoch starts; one newer than its latest gets epoch -1 and
//! end offset -1 (UNDEFINED).
//!
//! Authorization, as Kafka's: CLUSTER_ACTION on the cluster (a follower's) covers every
//! topic; without it each topic needs DESCRIBE (KIP-320's consumers), and the refused ones
//! answer TOPIC_AUTHORIZATION_FAILED after the others.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, RequestHeader,
};
use kafka_protocol::protocol::Decodable;

use crate::cluster::check_leader;
use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::security::authz;
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = OffsetForLeaderEpochRequest::decode(&mut body, version)?;
    let every_topic = authz::cluster(state, ctx, authz::operation::CLUSTER_ACTION);
    let (topics, denied): (Vec<_>, Vec<_>) = request.topics.into_iter().partition(|t| {
        every_topic || authz::topic(state, ctx, authz::operation::DESCRIBE, &t.topic)
    });
    let mut response = OffsetForLeaderEpochResponse::default();
    for topic in topics {
        let t = state.topic(topic.topic.as_str());
        let mut out = OffsetForLeaderTopicResult::default();
        out.topic = topic.topic.clone();
        for p in topic.partitions {
            let mut r = EpochEndOffset::default();
            r.partition = p.partition;
            r.leader_epoch = -1;
            r.end_offset = -1;
            let found = t
                .as_ref()
                .map_or(Err(codes::UNKNOWN_TOPIC_OR_PARTITION), |t| {
                    t.hosted_or_code(p.partition, state.config.node_id, p.current_leader_epoch)
                });
            match found {
                Err(code) => r.error_code = code,
                Ok(partition) => {
                    // A single node leads in epoch 0, so a client's epoch is checked too.
                    let code = check_leader(
                        &partition.replica_state(),
                        state.config.node_id,
                        p.current_leader_epoch,
                    );
                    if code == codes::NONE {
                        (r.leader_epoch, r.end_offset) = partition.end_offset_for(p.leader_epoch);
                    } else {
                        r.error_code = code;
                    }
                }
            }
            out.partitions.push(r);
        }
        response.topics.push(out);
    }
    for topic in denied {
        let mut out = OffsetForLeaderTopicResult::default();
        out.topic = topic.topic;
        out.partitions = topic
            .partitions
            .iter()
            .map(|p| {
                let mut r = EpochEndOffset::default();
                r.partition = p.partition;
                r.error_code = codes::TOPIC_AUTHORIZATION_FAILED;
                r
            })
            .collect();
        response.topics.push(out);
    }
    Ok(Some(encode(&response, version)?))
}
