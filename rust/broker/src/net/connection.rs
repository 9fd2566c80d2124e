//! One connection: read a frame, handle its request, write the answer, in order, one at
//! a time (as Kafka does: one request in flight per connection).
//!
//! `connections.max.idle.ms` bounds every wait on the client: for the size of the
//! next request (Kafka's idle expiry), for the rest of a frame once its size came,
//! and for a response to be taken. Kafka's idle timer restarts on any byte, so a client
//! sending one byte a second holds its connection forever; here a started frame must be
//! whole within the same time instead. That cuts no real client: a Kafka client gives up
//! on a request after `request.timeout.ms` (30 s by default), far inside the 10 minutes.
//! The time a handler takes (a long-poll fetch waiting `max.wait.ms`) is not counted.
//!
//! A frame's bytes are reserved from `queued.max.request.bytes` (`request_memory`) once its
//! size is read and given back once it is answered; while none are free the connection
//! waits before reading the body (that wait is not idleness either).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use super::context::{ConnectionContext, RequestContext, Throttle};
use super::framing::{self, Parsed};
use super::transport::Transport;
use crate::handlers::{self, api_versions};
use crate::metrics::requests::Timing;
use crate::response::{throttle, ResponseBody};
use crate::security::quotas::QuotaKind;
use crate::security::sasl::exchange::{self, Next, Session};
use crate::security::sasl::Authenticator;
use crate::security::ListenerSecurity;
use crate::state::BrokerState;

const API_VERSIONS: exchange::ApiVersions = exchange::ApiVersions {
    answer: api_versions::handle,
    unsupported: api_versions::unsupported_version_response,
};

/// Serve `transport` until the client closes it, a frame cannot be handled, or the broker
/// shuts down (checked between requests). On a SASL listener, frames before
/// authentication are capped at `sasl.server.max.receive.size` and only the SASL exchange
/// and ApiVersions are answered (CVE-2022-34917). A SASL session given a lifetime
/// (KIP-368) is renewed by a new exchange starting with SaslHandshake; a request after
/// it ended closes the connection.
pub async fn serve(
    mut transport: Transport,
    mut connection: ConnectionContext,
    state: Arc<BrokerState>,
    mut shutdown: watch::Receiver<bool>,
    security: Arc<ListenerSecurity>,
) -> anyhow::Result<()> {
    let limit = state.config.connections_max_idle;
    let mut auth = security.sasl.as_ref().map(|_| Authenticator::Start);
    let mut session: Option<Session> = None;
    loop {
        // Idle: no (whole) size of a next request yet.
        let size = tokio::select! {
            r = within(limit, transport.read_i32()) => match r {
                Some(Ok(n)) => n,
                // Closed by the client, or idle too long.
                Some(Err(_)) | None => return Ok(()),
            },
            _ = shutdown.changed() => return Ok(()),
        };
        let authenticating = auth.as_ref().is_some_and(|a| !a.is_done());
        let max = if authenticating {
            state.security.sasl_max_receive_size
        } else {
            state.config.socket_request_max_bytes
        };
        let size = framing::check_frame_size(size, max)?;
        let reserved = tokio::select! {
            r = state.request_memory.reserve(size) => r,
            _ = shutdown.changed() => return Ok(()),
        };
        let frame = within(limit, framing::read_frame(&mut transport, size))
            .await
            .ok_or_else(|| anyhow::anyhow!("request frame not received within {limit:?}"))??
            .freeze();
        let mut authenticating = authenticating;
        if let (false, Some(auth), Some(current)) = (authenticating, auth.as_mut(), &session) {
            let key = frame.get(..2).map(|b| i16::from_be_bytes([b[0], b[1]]));
            if current.renewable() && key == Some(ApiKey::SaslHandshake as i16) {
                *auth = Authenticator::Start;
                authenticating = true;
            } else if current.expired(Instant::now()) {
                log_expired(&connection);
                return Ok(());
            }
        }
        if let (true, Some(auth), Some(sasl)) = (authenticating, auth.as_mut(), &security.sasl) {
            let exchange = exchange::unauthenticated_frame(
                &API_VERSIONS,
                &state,
                &mut connection,
                auth,
                &mut session,
                sasl,
                &mut transport,
                frame,
            );
            match within(limit, exchange).await {
                Some(Ok(Next::Continue)) => continue,
                Some(Ok(Next::Close)) | None => return Ok(()),
                Some(Err(e)) => return Err(e),
            }
        }
        let started = Instant::now();
        let key = framing::api_key_of(&frame);
        let throttle = Throttle::default();
        // Produce with acks=0 expects no response at all.
        let handled = handle_frame(&state, &connection, frame, &throttle).await;
        let local = started.elapsed();
        let muted_until = Instant::now() + Duration::from_millis(throttle.ms().max(0) as u64);
        let record = |send, failed| {
            if let Some(key) = key {
                (state.metrics.requests).record(
                    key,
                    Timing {
                        local,
                        send,
                        failed,
                    },
                );
            }
        };
        let answer = handled.inspect_err(|_| {
            record(Duration::ZERO, true);
        })?;
        match answer {
            None => record(Duration::ZERO, false),
            Some((header_version, correlation_id, body)) => {
                let sending = Instant::now();
                let write =
                    framing::write_response(&mut transport, header_version, correlation_id, body);
                let written = within(limit, write).await;
                record(sending.elapsed(), !matches!(written, Some(Ok(()))));
                written.ok_or_else(|| anyhow::anyhow!("response not taken within {limit:?}"))??;
            }
        }
        // Answered: its bytes go back to the pool (before any quota mute).
        drop(reserved);
        // KIP-219: the client over its quota has its answer (with throttle_time_ms) first;
        // then its channel is muted — nothing more is read from it — for that long.
        if throttle.ms() > 0 {
            tokio::select! {
                () = tokio::time::sleep_until(muted_until.into()) => {}
                _ = shutdown.changed() => return Ok(()),
            }
        }
    }
}

fn log_expired(connection: &ConnectionContext) {
    kafkalite_core::logging::log(
        kafkalite_core::logging::Level::Info,
        "kafkalite.security.Authenticator",
        &format!(
            "Closing the connection of {} ({}, listener {}): its SASL session expired \
             without re-authentication",
            connection.client_host(),
            connection.principal,
            connection.listener_name
        ),
    );
}

/// `work`'s output, or `None` if `limit` passed first (no limit: wait as long as it takes).
async fn within<T>(limit: Option<Duration>, work: impl Future<Output = T>) -> Option<T> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, work).await.ok(),
        None => Some(work.await),
    }
}

/// Parse the request header and dispatch. `Ok(None)`: nothing to send back.
async fn handle_frame(
    state: &Arc<BrokerState>,
    connection: &ConnectionContext,
    frame: Bytes,
    throttle: &Throttle,
) -> anyhow::Result<Option<(i16, i32, ResponseBody)>> {
    let request_size = frame.len();
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
        request_size,
        throttle,
    };
    let header_version = request.response_header_version();
    let correlation_id = request.header.correlation_id;
    // The time spent in the handler's polls: its share of a thread, which
    // `request_percentage` bounds (waits — a long-poll fetch, acks=all — cost nothing).
    let mut busy = Duration::ZERO;
    let mut body = {
        let mut work = std::pin::pin!(handlers::dispatch(
            state,
            &ctx,
            &request.header,
            request.key,
            request.body
        ));
        std::future::poll_fn(|cx| {
            let started = Instant::now();
            let polled = work.as_mut().poll(cx);
            busy += started.elapsed();
            polled
        })
        .await?
    };
    if !matches!(request.key, ApiKey::ApiVersions) {
        let percent = busy.as_secs_f64() * 100.0;
        let t = state.security.quotas.record(
            QuotaKind::Request,
            &connection.principal.name,
            ctx.client_id,
            percent,
        );
        throttle.at_least(t);
        // Reported as Kafka reports it: the larger throttle in the response itself.
        if let Some(body) = body.as_mut() {
            throttle::raise(body, request.key, ctx.api_version, t);
        }
    }
    Ok(body.map(|b| (header_version, correlation_id, b)))
}
