//! InitProducerId (v0–4), for idempotent and transactional producers.
//!
//! - `transactional_id` null, no current producer: a new producer id from
//!   `BrokerState::allocate_producer_id` (persisted before it is returned), epoch 0.
//! - `transactional_id` null with a current producer id and epoch (v3+, KIP-360 bump): the
//!   same id with epoch + 1 when that id was handed out by this broker and the epoch is not
//!   exhausted (Kafka's limit: `Short.MAX_VALUE - 1`), else a new id with epoch 0. Kafka's own
//!   coordinator always allocates a new id here; clients accept either, and keeping the id
//!   lets the partitions fence the old epoch (INVALID_PRODUCER_EPOCH for late batches).
//! - `transactional_id` set: the transaction coordinator's answer (`transactions::
//!   coordinator`): a new producer id, or the id's producer with its epoch bumped (an
//!   ongoing transaction of the old epoch is aborted first); INVALID_TRANSACTION_TIMEOUT
//!   for a timeout above `transaction.max.timeout.ms`; PRODUCER_FENCED for a stale
//!   producer (INVALID_PRODUCER_EPOCH before v4, as Kafka maps it).
//! - a producer id without an epoch or an epoch without an id (either -1, the other not):
//!   INVALID_REQUEST, as Kafka answers.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ProducerId, RequestHeader,
};
use kafka_protocol::protocol::Decodable;

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

/// Kafka bumps to a new producer id once the epoch reaches this.
const MAX_EPOCH: i16 = i16::MAX - 1;

pub async fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = InitProducerIdRequest::decode(&mut body, version)?;
    let mut response = InitProducerIdResponse::default();
    // Kafka: a producer id comes with its epoch or neither is given (-1, -1); one without
    // the other is INVALID_REQUEST (the conformance fuzzer found kafkalite ignoring it).
    let half_given = (request.producer_id.0 == -1) != (request.producer_epoch == -1);
    let (error, producer_id, epoch) = if half_given
        || request
            .transactional_id
            .as_ref()
            .is_some_and(|t| t.0.is_empty())
    {
        // Kafka: an empty transactional id is neither idempotent (null) nor a valid id.
        (codes::INVALID_REQUEST, -1, -1)
    } else if let Some(id) = request.transactional_id.as_ref() {
        let coordinator = Arc::clone(&state.transactions);
        let id = id.to_string();
        let timeout = request.transaction_timeout_ms;
        let expected =
            (request.producer_id.0 >= 0).then_some((request.producer_id.0, request.producer_epoch));
        // Fencing an open transaction writes markers: off the async workers.
        let result = tokio::task::spawn_blocking(move || {
            coordinator.init_producer_id(&id, timeout, expected)
        })
        .await?;
        match result {
            Ok((id, epoch)) => (codes::NONE, id, epoch),
            Err(codes::PRODUCER_FENCED) if version < 4 => (codes::INVALID_PRODUCER_EPOCH, -1, -1),
            Err(code) => (code, -1, -1),
        }
    } else {
        let (id, epoch) = (request.producer_id.0, request.producer_epoch);
        let ours = state.producer_ids.was_issued(id);
        if version >= 3 && ours && (0..MAX_EPOCH).contains(&epoch) {
            (codes::NONE, id, epoch + 1)
        } else {
            match state.allocate_producer_id() {
                Ok(id) => (codes::NONE, id, 0),
                // The id could not be persisted: a retriable error, never an id that a
                // restart could hand out again.
                Err(_) => (codes::COORDINATOR_NOT_AVAILABLE, -1, -1),
            }
        }
    };
    response.error_code = error;
    response.producer_id = ProducerId(producer_id);
    response.producer_epoch = epoch;
    Ok(Some(encode(&response, version)?))
}
