//! AddOffsetsToTxn (v0–3): the group's `__consumer_offsets` partition joins the
//! transaction, so offsets sent with TxnOffsetCommit commit or abort with it.
//! PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2, as Kafka maps it.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, RequestHeader};
use kafka_protocol::protocol::Decodable;

use crate::errors::codes;
use crate::groups::offsets_topic::partition_for;
use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::{BrokerState, INTERNAL_OFFSETS_TOPIC};

pub async fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = AddOffsetsToTxnRequest::decode(&mut body, version)?;
    let group = request.group_id.as_str();
    let partitions = state.groups.config().offsets_topic_partitions;
    let offsets_partition = (
        INTERNAL_OFFSETS_TOPIC.to_string(),
        partition_for(group, partitions),
    );
    let code = match state.transactions.add_offsets(
        &request.transactional_id,
        request.producer_id.0,
        request.producer_epoch,
        group,
        offsets_partition,
    ) {
        Ok(()) => codes::NONE,
        Err(codes::PRODUCER_FENCED) if version < 2 => codes::INVALID_PRODUCER_EPOCH,
        Err(code) => code,
    };
    encode(
        &AddOffsetsToTxnResponse::default().with_error_code(code),
        version,
    )
    .map(Some)
}
