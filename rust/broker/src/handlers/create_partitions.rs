//! CreatePartitions: every requested topic gets a result, success included.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

const INVALID_REPLICA_ASSIGNMENT: i16 = 39;

pub async fn handle(
    state: &Arc<BrokerState>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = CreatePartitionsRequest::decode(&mut body, version)?;
    let results = request
        .topics
        .iter()
        .map(|t| {
            let result = CreatePartitionsTopicResult::default().with_name(t.name.clone());
            let outcome = if t.assignments.as_ref().is_some_and(|a| !a.is_empty()) {
                Err((
                    INVALID_REPLICA_ASSIGNMENT,
                    "manual replica assignment is not supported on a single node".to_string(),
                ))
            } else {
                state
                    .create_partitions(&t.name.0, t.count, request.validate_only)
                    .map_err(|e| (e.code, e.message))
            };
            match outcome {
                Ok(()) => result,
                Err((code, message)) => result
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_string(message))),
            }
        })
        .collect();
    encode(
        &CreatePartitionsResponse::default().with_results(results),
        version,
    )
    .map(Some)
}
