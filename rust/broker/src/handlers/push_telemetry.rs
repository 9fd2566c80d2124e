//! PushTelemetry (v0, KIP-714): a client's metrics, checked (instance id, push interval,
//! subscription id, compression type, size, `terminating`) and kept as the instance's
//! latest points for the metrics endpoint (`telemetry`).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{PushTelemetryRequest, PushTelemetryResponse, RequestHeader};
use kafka_protocol::protocol::Decodable;
use uuid::Uuid;

use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;
use crate::telemetry::{ClientMeta, Push};

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = PushTelemetryRequest::decode(&mut body, version)?;
    let push = Push {
        client_instance_id: request.client_instance_id,
        subscription_id: request.subscription_id,
        terminating: request.terminating,
        compression_type: request.compression_type,
        metrics: &request.metrics,
    };
    let meta = client_meta(ctx, request.client_instance_id);
    let code = match state.telemetry.push(&state.client_metrics, &push, meta) {
        Ok(()) => 0,
        Err(e) => e.code,
    };
    encode(
        &PushTelemetryResponse::default().with_error_code(code),
        version,
    )
    .map(Some)
}

/// What the client's `match` selectors see: its ids, the software it named in ApiVersions
/// ("unknown" if it did not), and where it connects from.
#[must_use]
pub fn client_meta(ctx: &RequestContext<'_>, id: Uuid) -> ClientMeta {
    let (name, version) = ctx
        .connection
        .software
        .get()
        .cloned()
        .unwrap_or_else(|| ("unknown".into(), "unknown".into()));
    ClientMeta {
        instance_id: id,
        client_id: ctx.client_id.to_string(),
        software_name: name,
        software_version: version,
        source_address: ctx.peer().ip().to_string(),
        source_port: ctx.peer().port(),
    }
}
