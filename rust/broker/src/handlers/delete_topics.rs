//! DeleteTopics.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::RequestHeader;

use crate::response::ResponseBody;
use crate::state::BrokerState;

pub async fn handle(
    state: &Arc<BrokerState>,
    header: &RequestHeader,
    body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let _ = (state, header, body, version);
    todo!()
}
