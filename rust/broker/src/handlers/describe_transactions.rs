//! DescribeTransactions (v0): each id's state, producer, timeout, start time and
//! partitions; TRANSACTIONAL_ID_NOT_FOUND for an id this coordinator does not know,
//! NOT_COORDINATOR for one another broker coordinates. Authorization, as Kafka's: an id the
//! principal may not DESCRIBE is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and the partitions
//! listed are only those of topics it may DESCRIBE.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

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
    let request = DescribeTransactionsRequest::decode(&mut body, version)?;
    let states = request
        .transactional_ids
        .iter()
        .map(|id| {
            let out = TransactionState::default().with_transactional_id(id.clone());
            if !authz::transactional_id(state, ctx, authz::operation::DESCRIBE, id) {
                return out.with_error_code(codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
            }
            if !state.transactions.coordinates(id) {
                // Cluster mode: another broker leads the id's `__transaction_state`
                // partition (or this one is still loading it).
                return out.with_error_code(codes::NOT_COORDINATOR);
            }
            let Some(meta) = state.transactions.describe(id) else {
                // Kafka leaves the other fields at their defaults (0).
                return out.with_error_code(codes::TRANSACTIONAL_ID_NOT_FOUND);
            };
            let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for (t, p) in &meta.partitions {
                by_topic.entry(t.clone()).or_default().push(*p);
            }
            by_topic.retain(|t, _| authz::topic(state, ctx, authz::operation::DESCRIBE, t));
            out.with_transaction_state(StrBytes::from_static_str(meta.status.name()))
                .with_transaction_timeout_ms(meta.timeout_ms)
                .with_transaction_start_time_ms(meta.start_ms)
                .with_producer_id(ProducerId(meta.producer_id))
                .with_producer_epoch(meta.epoch)
                .with_topics(
                    by_topic
                        .into_iter()
                        .map(|(t, ps)| {
                            TopicData::default()
                                .with_topic(StrBytes::from_string(t).into())
                                .with_partitions(ps)
                        })
                        .collect(),
                )
        })
        .collect();
    encode(
        &DescribeTransactionsResponse::default().with_transaction_states(states),
        version,
    )
    .map(Some)
}
