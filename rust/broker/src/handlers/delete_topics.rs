//! DeleteTopics: by name, or by topic id from v6.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    DeleteTopicsRequest, DeleteTopicsResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

const UNKNOWN_TOPIC_ID: i16 = 100;

pub async fn handle(
    state: &Arc<BrokerState>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DeleteTopicsRequest::decode(&mut body, version)?;
    let mut targets: Vec<(Option<String>, uuid::Uuid)> = request
        .topic_names
        .iter()
        .map(|n| (Some(n.0.to_string()), uuid::Uuid::nil()))
        .collect();
    targets.extend(
        request
            .topics
            .iter()
            .map(|t| (t.name.as_ref().map(|n| n.0.to_string()), t.topic_id)),
    );
    let responses = targets
        .into_iter()
        .map(|(name, id)| delete_one(state, name, id, version))
        .collect();
    encode(
        &DeleteTopicsResponse::default().with_responses(responses),
        version,
    )
    .map(Some)
}

fn delete_one(
    state: &BrokerState,
    name: Option<String>,
    id: uuid::Uuid,
    version: i16,
) -> DeletableTopicResult {
    let name = name.or_else(|| {
        state
            .topic_names()
            .into_iter()
            .find(|n| state.topic(n).is_some_and(|t| t.id == id))
    });
    let mut result = DeletableTopicResult::default();
    if version >= 6 {
        result = result.with_topic_id(id);
    }
    let Some(name) = name else {
        return result
            .with_error_code(UNKNOWN_TOPIC_ID)
            .with_error_message(Some(StrBytes::from_string(format!(
                "unknown topic id {id}"
            ))));
    };
    let topic_id = state.topic(&name).map(|t| t.id);
    result = result.with_name(Some(TopicName(StrBytes::from_string(name.clone()))));
    if let (true, Some(tid)) = (version >= 6, topic_id) {
        result = result.with_topic_id(tid);
    }
    match state.delete_topic(&name) {
        Ok(()) => result,
        Err(e) => result
            .with_error_code(e.code)
            .with_error_message(Some(StrBytes::from_string(e.message))),
    }
}
