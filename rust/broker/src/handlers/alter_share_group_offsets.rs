//! AlterShareGroupOffsets (v0, KIP-932): set the start offset of share-partitions of an
//! empty share group (created if new), as `kafka-share-groups --reset-offsets` does; in
//! flight state is dropped. A group with members is NON_EMPTY_GROUP; an unknown topic or
//! partition UNKNOWN_TOPIC_OR_PARTITION for its partitions. READ on the group
//! (GROUP_AUTHORIZATION_FAILED) and on each topic (TOPIC_AUTHORIZATION_FAILED).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use uuid::Uuid;

use crate::errors::{codes, ApiError};
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
    let r = AlterShareGroupOffsetsRequest::decode(&mut body, version)?;
    let refuse = |e: ApiError| {
        AlterShareGroupOffsetsResponse::default()
            .with_error_code(e.code)
            .with_error_message(Some(StrBytes::from_string(e.message)))
    };
    if !authz::group(state, ctx, authz::operation::READ, &r.group_id) {
        let e = ApiError::new(
            codes::GROUP_AUTHORIZATION_FAILED,
            format!("Not authorized to access group: {}", r.group_id.0),
        );
        return encode(&refuse(e), version).map(Some);
    }
    if let Err(e) = state.share.begin_alter(&r.group_id) {
        return encode(&refuse(e), version).map(Some);
    }
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let topic = state.topic(&t.topic_name);
            let allowed = authz::topic(state, ctx, authz::operation::READ, &t.topic_name);
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let outcome = match &topic {
                        _ if !allowed => Err(ApiError::new(
                            codes::TOPIC_AUTHORIZATION_FAILED,
                            "Topic authorization failed.",
                        )),
                        None => Err(ApiError::new(
                            codes::UNKNOWN_TOPIC_OR_PARTITION,
                            "This server does not host this topic-partition.",
                        )),
                        Some(topic) => state.share.alter_start_offset(
                            &r.group_id,
                            topic.id,
                            p.partition_index,
                            p.start_offset,
                        ),
                    };
                    let d = AlterShareGroupOffsetsResponsePartition::default()
                        .with_partition_index(p.partition_index);
                    match outcome {
                        Ok(()) => d,
                        Err(e) => d
                            .with_error_code(e.code)
                            .with_error_message(Some(StrBytes::from_string(e.message))),
                    }
                })
                .collect();
            AlterShareGroupOffsetsResponseTopic::default()
                .with_topic_name(t.topic_name.clone())
                .with_topic_id(topic.map_or(Uuid::nil(), |t| t.id))
                .with_partitions(partitions)
        })
        .collect();
    encode(
        &AlterShareGroupOffsetsResponse::default().with_responses(topics),
        version,
    )
    .map(Some)
}
