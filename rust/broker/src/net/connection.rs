//! One connection: read a frame, handle its request, write the answer, in order, one at
//! a time (as Kafka does: one request in flight per connection).

use std::sync::Arc;

use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use super::context::{ConnectionContext, RequestContext};
use super::framing::{self, Parsed};
use super::transport::Transport;
use crate::handlers::{self, api_versions};
use crate::response::ResponseBody;
use crate::state::BrokerState;

/// Serve `transport` until the client closes it, a frame cannot be handled, or the broker
/// shuts down (checked between requests).
pub async fn serve(
    mut transport: Transport,
    connection: ConnectionContext,
    state: Arc<BrokerState>,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let max = state.config.socket_request_max_bytes;
    loop {
        let size = tokio::select! {
            r = transport.read_i32() => match r {
                Ok(n) => n,
                Err(_) => return Ok(()),
            },
            _ = shutdown.changed() => return Ok(()),
        };
        let size = framing::check_frame_size(size, max)?;
        let frame = framing::read_frame(&mut transport, size).await?.freeze();
        // Produce with acks=0 expects no response at all.
        if let Some((header_version, correlation_id, body)) =
            handle_frame(&state, &connection, frame).await?
        {
            framing::write_response(&mut transport, header_version, correlation_id, body).await?;
        }
    }
}

/// Parse the request header and dispatch. `Ok(None)`: nothing to send back.
async fn handle_frame(
    state: &Arc<BrokerState>,
    connection: &ConnectionContext,
    frame: Bytes,
) -> anyhow::Result<Option<(i16, i32, ResponseBody)>> {
    let request = match framing::parse_request(frame)? {
        Parsed::Request(request) => request,
        Parsed::ApiVersionsFallback { correlation_id } => {
            let body = api_versions::unsupported_version_response()?;
            return Ok(Some((0, correlation_id, body)));
        }
    };
    let ctx = RequestContext {
        connection,
        client_id: request.header.client_id.as_deref().unwrap_or(""),
        api_key: request.key,
        api_version: request.header.request_api_version,
    };
    let header_version = request.response_header_version();
    let correlation_id = request.header.correlation_id;
    let body = handlers::dispatch(state, &ctx, &request.header, request.key, request.body).await?;
    Ok(body.map(|b| (header_version, correlation_id, b)))
}
