//! FindCoordinator: on a single node this broker coordinates every group. Transactions are
//! not supported, so a transaction coordinator is never available.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorRequest, FindCoordinatorResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::codes;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

pub async fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = FindCoordinatorRequest::decode(&mut body, version)?;
    let node = BrokerId(state.config.node_id);
    let (host, port) = state.advertised_endpoint().unwrap_or_default();
    let available = request.key_type == KEY_TYPE_GROUP;
    // Kafka: a key type it does not know (neither group nor transaction) is a bad
    // request; a known one it cannot serve is an unavailable coordinator.
    let known = request.key_type == KEY_TYPE_GROUP || request.key_type == KEY_TYPE_TRANSACTION;
    let (error, message) = if available {
        // Kafka names success with an empty message in the per-key answers (v4+).
        (0, (version >= 4).then(|| StrBytes::from_static_str("")))
    } else if known {
        let text = "transactions are not supported";
        (
            codes::COORDINATOR_NOT_AVAILABLE,
            Some(StrBytes::from_static_str(text)),
        )
    } else {
        let text = format!("unknown key type {}", request.key_type);
        (codes::INVALID_REQUEST, Some(StrBytes::from_string(text)))
    };
    let response = if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .iter()
            .map(|key| {
                Coordinator::default()
                    .with_key(key.clone())
                    .with_node_id(if available { node } else { BrokerId(-1) })
                    .with_host(StrBytes::from_string(if available {
                        host.clone()
                    } else {
                        String::new()
                    }))
                    .with_port(if available { port } else { -1 })
                    .with_error_code(error)
                    .with_error_message(message.clone())
            })
            .collect();
        FindCoordinatorResponse::default().with_coordinators(coordinators)
    } else if available {
        FindCoordinatorResponse::default()
            .with_node_id(node)
            .with_host(StrBytes::from_string(host))
            .with_port(port)
    } else {
        FindCoordinatorResponse::default()
            .with_error_code(error)
            .with_error_message(message)
            .with_node_id(BrokerId(-1))
            .with_port(-1)
    };
    encode(&response, version).map(Some)
}
