//! ListTransactions (v0–1): the ids this coordinator knows, filtered by state names
//! (unknown names are echoed in `unknown_state_filters`, as Kafka does), producer ids and
//! (v1) a minimum running time in ms.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{
    ListTransactionsRequest, ListTransactionsResponse, ProducerId, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafkalite_core::storage::clock::now_ms;

use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

const STATES: &[&str] = &[
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
];

pub async fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = ListTransactionsRequest::decode(&mut body, version)?;
    let unknown: Vec<StrBytes> = request
        .state_filters
        .iter()
        .filter(|s| !STATES.contains(&s.as_str()))
        .cloned()
        .collect();
    let now = now_ms();
    let states = state
        .transactions
        .list()
        .into_iter()
        .filter(|m| {
            request.state_filters.is_empty()
                || request
                    .state_filters
                    .iter()
                    .any(|s| s.as_str() == m.status.name())
        })
        .filter(|m| {
            request.producer_id_filters.is_empty()
                || request
                    .producer_id_filters
                    .contains(&ProducerId(m.producer_id))
        })
        .filter(|m| {
            request.duration_filter < 0
                || (m.start_ms >= 0 && now - m.start_ms >= request.duration_filter)
        })
        .map(|m| {
            TransactionState::default()
                .with_transactional_id(StrBytes::from_string(m.transactional_id).into())
                .with_producer_id(ProducerId(m.producer_id))
                .with_transaction_state(StrBytes::from_static_str(m.status.name()))
        })
        .collect();
    encode(
        &ListTransactionsResponse::default()
            .with_unknown_state_filters(unknown)
            .with_transaction_states(states),
        version,
    )
    .map(Some)
}
