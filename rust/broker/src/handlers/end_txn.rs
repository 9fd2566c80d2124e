//! EndTxn (v0–5): commit or abort the producer's transaction; markers are written into
//! every partition before the answer. v5 is transaction version 2 (KIP-890): the epoch is
//! bumped with every transaction and the answer carries the producer id and epoch to use
//! next. An unknown transactional id or producer id is
//! INVALID_PRODUCER_ID_MAPPING; a stale epoch PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before
//! v2); EndTxn without an ongoing transaction INVALID_TXN_STATE.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ProducerId, RequestHeader};
use kafka_protocol::protocol::Decodable;

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = EndTxnRequest::decode(&mut body, version)?;
    let coordinator = Arc::clone(&state.transactions);
    let (id, pid, epoch, commit) = (
        request.transactional_id.to_string(),
        request.producer_id.0,
        request.producer_epoch,
        request.committed,
    );
    // Markers are file appends: off the async workers.
    let bump = version >= 5;
    let result =
        tokio::task::spawn_blocking(move || coordinator.end_txn(&id, pid, epoch, commit, bump))
            .await?;
    let (code, (pid, epoch)) = match result {
        Ok(next) => (codes::NONE, next),
        Err(codes::PRODUCER_FENCED) if version < 2 => (codes::INVALID_PRODUCER_EPOCH, (-1, -1)),
        Err(code) => (code, (-1, -1)),
    };
    let mut response = EndTxnResponse::default().with_error_code(code);
    if version >= 5 {
        response = response
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch);
    }
    encode(&response, version).map(Some)
}
