//! DescribeQuorum (v0-2): the KRaft metadata quorum. A kafkalite cluster has none: its
//! controller is elected through ZooKeeper (or, on a single node, is the node itself), and
//! there is no `__cluster_metadata` log to describe. The answer says so rather than make a
//! quorum up, in Kafka's top-level error shape (no topics): UNSUPPORTED_VERSION (35), with
//! a message naming the controller from v2.
//!
//! The code must be one clients do not retry: the Java admin client retries a retriable
//! error (UNKNOWN_TOPIC_OR_PARTITION, NOT_CONTROLLER, ...) until its deadline and then
//! reports only "Timed out waiting for a node assignment", which is what
//! `kafka-metadata-quorum describe` printed here after a minute. UNSUPPORTED_VERSION is
//! what a ZooKeeper-mode Kafka broker effectively answered (it did not serve the API), and
//! the tool prints the exception with this message at once.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{DescribeQuorumRequest, DescribeQuorumResponse, RequestHeader};
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
    // Decoded for its bounds checks only: whatever it asks, there is no quorum.
    DescribeQuorumRequest::decode(&mut body, version)?;
    let (code, message) = if authz::cluster(state, ctx, authz::operation::DESCRIBE) {
        (codes::UNSUPPORTED_VERSION, no_quorum(state))
    } else {
        (
            codes::CLUSTER_AUTHORIZATION_FAILED,
            "The client is not authorized to describe the quorum".to_string(),
        )
    };
    let mut response = DescribeQuorumResponse::default();
    response.error_code = code;
    if version >= 2 {
        response.error_message = Some(StrBytes::from_string(message));
    }
    encode(&response, version).map(Some)
}

/// Why there is nothing to describe, naming the controller there is instead.
fn no_quorum(state: &BrokerState) -> String {
    let controller = state.controller_id();
    let instead = if state.cluster.is_none() {
        format!("this single node (node {controller}) is its own controller")
    } else if controller < 0 {
        "its controller is elected through ZooKeeper and none is elected at the moment".into()
    } else {
        format!("its controller is broker {controller}, elected through ZooKeeper")
    };
    format!("This cluster has no KRaft metadata quorum to describe: {instead}; there is no __cluster_metadata log")
}
