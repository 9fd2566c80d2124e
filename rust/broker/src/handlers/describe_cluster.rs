//! DescribeCluster: this node is the cluster and its controller.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{
    BrokerId, DescribeClusterRequest, DescribeClusterResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let _request = DescribeClusterRequest::decode(&mut body, version)?;
    let node = BrokerId(state.config.node_id);
    let brokers = state
        .advertised_endpoint()
        .map(|(host, port)| {
            vec![DescribeClusterBroker::default()
                .with_broker_id(node)
                .with_host(StrBytes::from_string(host))
                .with_port(port)]
        })
        .unwrap_or_default();
    let mut response = DescribeClusterResponse::default()
        .with_cluster_id(StrBytes::from_string(state.cluster_id.clone()))
        .with_controller_id(node)
        .with_brokers(brokers)
        .with_cluster_authorized_operations(i32::MIN);
    if version >= 1 {
        response = response.with_endpoint_type(1);
    }
    encode(&response, version).map(Some)
}
