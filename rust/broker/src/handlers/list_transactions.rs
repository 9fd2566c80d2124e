//! ListTransactions (v0–2): the ids this coordinator knows, filtered by state names
//! (unknown names are echoed in `unknown_state_filters`, as Kafka does), producer ids,
//! (v1) a minimum running time in ms and (v2, KIP-1152) a regular expression the whole id
//! must match (Java's `Matcher.matches`); a pattern that does not compile is answered
//! INVALID_REGULAR_EXPRESSION (128). Only the ids the principal may DESCRIBE are listed,
//! as Kafka lists them.

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
use crate::security::authz;
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
    ctx: &RequestContext<'_>,
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
    // Anchored: Kafka matches the whole id.
    let pattern = match request
        .transactional_id_pattern
        .as_deref()
        .filter(|p| !p.is_empty())
        .map(|p| regex::Regex::new(&format!("^(?:{p})$")))
    {
        Some(Err(_)) => {
            return encode(
                &ListTransactionsResponse::default()
                    .with_error_code(kafkalite_core::error_codes::INVALID_REGULAR_EXPRESSION),
                version,
            )
            .map(Some)
        }
        Some(Ok(re)) => Some(re),
        None => None,
    };
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
        .filter(|m| {
            pattern
                .as_ref()
                .is_none_or(|re| re.is_match(&m.transactional_id))
        })
        .filter(|m| {
            authz::transactional_id(state, ctx, authz::operation::DESCRIBE, &m.transactional_id)
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
