//! DeleteShareGroupOffsets (v0, KIP-932): forget the share state of whole topics in an
//! empty share group (its members would start again from `share.auto.offset.reset`), as
//! `kafka-share-groups --delete-offsets` does. An unknown group is GROUP_ID_NOT_FOUND, one
//! with members NON_EMPTY_GROUP; an unknown topic UNKNOWN_TOPIC_OR_PARTITION. DELETE on the
//! group (GROUP_AUTHORIZATION_FAILED), READ on each topic (TOPIC_AUTHORIZATION_FAILED).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kafka_protocol::messages::{
    DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse, RequestHeader,
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
    let r = DeleteShareGroupOffsetsRequest::decode(&mut body, version)?;
    let refuse = |e: ApiError| {
        DeleteShareGroupOffsetsResponse::default()
            .with_error_code(e.code)
            .with_error_message(Some(StrBytes::from_string(e.message)))
    };
    if !authz::group(state, ctx, authz::operation::DELETE, &r.group_id) {
        let e = ApiError::new(
            codes::GROUP_AUTHORIZATION_FAILED,
            format!("Not authorized to access group: {}", r.group_id.0),
        );
        return encode(&refuse(e), version).map(Some);
    }
    if let Err(e) = state.share.begin_delete_offsets(&r.group_id) {
        return encode(&refuse(e), version).map(Some);
    }
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let topic = state.topic(&t.topic_name);
            let outcome = match &topic {
                _ if !authz::topic(state, ctx, authz::operation::READ, &t.topic_name) => {
                    Err(ApiError::new(
                        codes::TOPIC_AUTHORIZATION_FAILED,
                        "Topic authorization failed.",
                    ))
                }
                None => Err(ApiError::new(
                    codes::UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                )),
                Some(topic) => state.share.delete_topic_state(&r.group_id, topic.id),
            };
            let d = DeleteShareGroupOffsetsResponseTopic::default()
                .with_topic_name(t.topic_name.clone())
                .with_topic_id(topic.map_or(Uuid::nil(), |t| t.id));
            match outcome {
                Ok(()) => d,
                Err(e) => d
                    .with_error_code(e.code)
                    .with_error_message(Some(StrBytes::from_string(e.message))),
            }
        })
        .collect();
    encode(
        &DeleteShareGroupOffsetsResponse::default().with_responses(topics),
        version,
    )
    .map(Some)
}
