//! GetTelemetrySubscriptions (v0, KIP-714): the client's instance id (a new one for the
//! zero id), and what the client-metrics subscriptions it matches ask it to push
//! (`telemetry`). Kafka 4.1.1 serves this API only with a telemetry receiver plugin;
//! kafkalite is its own receiver (the metrics endpoint shows what clients push).

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{
    GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use crate::net::RequestContext;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;
use crate::telemetry::ACCEPTED_COMPRESSION;

pub async fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext<'_>,
    _header: &RequestHeader,
    mut body: Bytes,
    version: i16,
) -> anyhow::Result<Option<ResponseBody>> {
    let request = GetTelemetrySubscriptionsRequest::decode(&mut body, version)?;
    let asked = request.client_instance_id;
    let meta = crate::handlers::push_telemetry::client_meta(ctx, asked);
    let response = match state
        .telemetry
        .subscriptions(&state.client_metrics, asked, meta)
    {
        Ok(s) => GetTelemetrySubscriptionsResponse::default()
            .with_client_instance_id(s.client_instance_id)
            .with_subscription_id(s.subscription_id)
            .with_accepted_compression_types(ACCEPTED_COMPRESSION.to_vec())
            .with_push_interval_ms(s.push_interval_ms)
            .with_telemetry_max_bytes(state.telemetry.max_bytes())
            .with_delta_temporality(true)
            .with_requested_metrics(
                s.requested_metrics
                    .into_iter()
                    .map(StrBytes::from_string)
                    .collect(),
            ),
        Err(e) => GetTelemetrySubscriptionsResponse::default().with_error_code(e.code),
    };
    encode(&response, version).map(Some)
}
