//! Heartbeat (v0-4): keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to
//! rejoin.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse, RequestHeader};
use kafka_protocol::protocol::Decodable;

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
    let request = HeartbeatRequest::decode(&mut body, version)?;
    let error = state.groups.heartbeat(
        &request.group_id.0,
        &request.member_id,
        request.group_instance_id.as_deref(),
        request.generation_id,
    );
    encode(
        &HeartbeatResponse::default().with_error_code(error),
        version,
    )
    .map(Some)
}
