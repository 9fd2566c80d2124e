//! DescribeCluster (v0-2): the live brokers and the controller (on a single node, this node
//! is both; in cluster mode, as ZooKeeper last said). v2's `include_fenced_brokers` (KIP-1073)
//! changes nothing here: a ZooKeeper-registered broker is never fenced, so every listed
//! broker has `is_fenced` false.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{
    BrokerId, DescribeClusterRequest, DescribeClusterResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::errors::codes;
use crate::handlers::metadata::{CLUSTER_OPERATIONS, OPERATIONS_NOT_REQUESTED};
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

const ENDPOINT_BROKERS: i8 = 1;
const ENDPOINT_CONTROLLERS: i8 = 2;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = DescribeClusterRequest::decode(&mut body, version)?;
    let mut response = DescribeClusterResponse::default()
        .with_cluster_id(StrBytes::from_string(state.cluster_id()))
        .with_controller_id(BrokerId(state.controller_id()))
        .with_cluster_authorized_operations(if request.include_cluster_authorized_operations {
            CLUSTER_OPERATIONS
        } else {
            OPERATIONS_NOT_REQUESTED
        });
    if version >= 1 {
        response = response.with_endpoint_type(ENDPOINT_BROKERS);
        // Admin clients bootstrapping from controllers (KIP-919) must be told this is a broker.
        let error = match request.endpoint_type {
            ENDPOINT_BROKERS => None,
            ENDPOINT_CONTROLLERS => Some((
                codes::MISMATCHED_ENDPOINT_TYPE,
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint \
                 of type CONTROLLER"
                    .to_string(),
            )),
            other => Some((
                codes::UNSUPPORTED_ENDPOINT_TYPE,
                format!("unsupported endpoint type {other}"),
            )),
        };
        if let Some((code, message)) = error {
            // Kafka's refusal names no controller.
            return encode(
                &response
                    .with_controller_id(BrokerId(-1))
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_string(message))),
                version,
            )
            .map(Some);
        }
    }
    let brokers = state
        .live_brokers_on(ctx.listener_name())
        .into_iter()
        .map(|b| {
            DescribeClusterBroker::default()
                .with_broker_id(BrokerId(b.node_id))
                .with_host(StrBytes::from_string(b.host))
                .with_port(b.port)
                .with_rack(b.rack.map(StrBytes::from_string))
        })
        .collect();
    encode(&response.with_brokers(brokers), version).map(Some)
}
