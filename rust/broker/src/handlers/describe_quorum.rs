//! DescribeQuorum (v0-2): the KRaft metadata quorum. A kafkalite cluster has none: its
//! controller is elected through ZooKeeper (or, on a single node, is the node itself), and
//! there is no `__cluster_metadata` log to describe. The answer says so rather than make a
//! quorum up: partition 0 of the requested topic gets UNKNOWN_TOPIC_OR_PARTITION (3), with
//! a message naming the controller from v2, which is how `kafka-metadata-quorum` and the
//! admin clients' `describe_metadata_quorum` report it.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::describe_quorum_response::{PartitionData, TopicData};
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
    let request = DescribeQuorumRequest::decode(&mut body, version)?;
    let mut response = DescribeQuorumResponse::default();
    if !authz::cluster(state, ctx, authz::operation::DESCRIBE) {
        response.error_code = codes::CLUSTER_AUTHORIZATION_FAILED;
        if version >= 2 {
            response.error_message = Some(StrBytes::from_static_str(
                "The client is not authorized to describe the quorum",
            ));
        }
        return encode(&response, version).map(Some);
    }
    let controller = state.controller_id();
    let why = format!(
        "This cluster has no KRaft metadata quorum: its controller (broker {controller}) is elected through ZooKeeper, not by a Raft quorum"
    );
    response.topics = request
        .topics
        .iter()
        .map(|t| {
            let mut topic = TopicData::default();
            topic.topic_name = t.topic_name.clone();
            topic.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut out = PartitionData::default();
                    out.partition_index = p.partition_index;
                    out.error_code = codes::UNKNOWN_TOPIC_OR_PARTITION;
                    if version >= 2 {
                        out.error_message = Some(StrBytes::from_string(why.clone()));
                    }
                    out
                })
                .collect();
            topic
        })
        .collect();
    encode(&response, version).map(Some)
}
