//! The frames of a SASL listener's connection before it has authenticated: only
//! ApiVersions, SaslHandshake and SaslAuthenticate are answered (anything else closes the
//! connection, as Kafka's `SaslServerAuthenticator` does); after a v0 handshake the
//! tokens come as bare frames.
//!
//! Re-authentication (KIP-368): with `connections.max.reauth.ms` set, SaslAuthenticate
//! (v1+) tells the client its session lifetime; before it ends the client runs the
//! exchange again on the same connection (same mechanism, same principal), and a
//! connection whose session ended is closed at its next request.
//!
//! A failed authentication (a bad token, an unsupported mechanism, a renewal that changes
//! mechanism or principal) is answered, and the connection closed, only after
//! `connection.failed.authentication.delay.ms` (KIP-306, Kafka's delayed close), so a
//! client guessing passwords gets one guess per delay per connection.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::io::AsyncWriteExt;

use super::{Authenticator, Mechanism, SaslConfig, TokenOutcome};
use crate::errors::codes;
use crate::net::context::{ConnectionContext, KafkaPrincipal, RequestContext};
use crate::net::framing::{self, Parsed};
use crate::net::transport::Transport;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

/// How ApiVersions is answered before authentication: the handlers' answer, handed in by
/// the connection so the exchange does not depend on `handlers` (which would close an
/// import circle through the dispatcher).
pub struct ApiVersions {
    pub answer: fn(
        &Arc<BrokerState>,
        &RequestContext<'_>,
        &kafka_protocol::messages::RequestHeader,
        Bytes,
        i16,
    ) -> anyhow::Result<ResponseBody>,
    /// The v0 answer to a version this broker does not serve.
    pub unsupported: fn() -> anyhow::Result<ResponseBody>,
}

/// Whether the connection goes on after a frame.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Continue,
    Close,
}

fn log_failure(connection: &ConnectionContext, why: &str) {
    kafkalite_core::logging::log(
        kafkalite_core::logging::Level::Info,
        "kafkalite.security.Authenticator",
        &format!(
            "Failed authentication with {} (listener {}): {why}",
            connection.client_host(),
            connection.listener_name
        ),
    );
}

/// Hold a failed authentication's answer and close for
/// `connection.failed.authentication.delay.ms` (below `connections.max.idle.ms`, which
/// bounds the whole exchange: checked when the broker starts).
async fn delay_failure(state: &BrokerState) {
    let delay_ms = state
        .config
        .settings
        .int("connection.failed.authentication.delay.ms");
    if let Ok(ms @ 1..) = u64::try_from(delay_ms) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// An authenticated SASL session.
pub struct Session {
    pub mechanism: Mechanism,
    pub user: String,
    /// When it ends unless the client re-authenticates (`None`: never).
    pub expires: Option<Instant>,
}

impl Session {
    /// Whether the session has ended.
    #[must_use]
    pub fn expired(&self, now: Instant) -> bool {
        self.expires.is_some_and(|e| now >= e)
    }

    /// Whether the client may re-authenticate (it was given a lifetime).
    #[must_use]
    pub fn renewable(&self) -> bool {
        self.expires.is_some()
    }
}

/// The exchange succeeded: set the principal and the session; the lifetime (ms) to tell
/// the client. `Err`: a re-authentication changed the principal (Kafka refuses that).
fn authenticated(
    connection: &mut ConnectionContext,
    auth: &mut Authenticator,
    session: &mut Option<Session>,
    sasl: &SaslConfig,
    outcome: (String, Mechanism, Option<i64>),
) -> Result<i64, String> {
    let (user, mechanism, expires_ms) = outcome;
    *auth = Authenticator::Done;
    if let Some(previous) = session.as_ref() {
        if previous.user != user {
            return Err(format!(
                "Cannot change principals during re-authentication from User:{}: User:{user}",
                previous.user
            ));
        }
    }
    let now_ms = kafkalite_core::storage::clock::now_ms();
    let lifetime_ms = sasl.session_lifetime_ms(mechanism, expires_ms, now_ms);
    if session.is_some() {
        kafkalite_core::logging::log(
            kafkalite_core::logging::Level::Info,
            "kafkalite.security.Authenticator",
            &format!(
                "Re-authenticated User:{user} from {} (listener {}, {}); session lifetime \
                 {lifetime_ms} ms",
                connection.client_host(),
                connection.listener_name,
                mechanism.name()
            ),
        );
    }
    *session = Some(Session {
        mechanism,
        expires: (lifetime_ms > 0)
            .then(|| Instant::now() + Duration::from_millis(lifetime_ms.unsigned_abs())),
        user: user.clone(),
    });
    connection.principal = KafkaPrincipal {
        principal_type: KafkaPrincipal::USER_TYPE.to_string(),
        name: user,
    };
    Ok(lifetime_ms)
}

/// Answer one frame of a connection that has not authenticated yet (or is
/// re-authenticating: `session` is then the one being renewed).
#[allow(clippy::too_many_arguments)]
pub async fn unauthenticated_frame(
    api_versions: &ApiVersions,
    state: &Arc<BrokerState>,
    connection: &mut ConnectionContext,
    auth: &mut Authenticator,
    session: &mut Option<Session>,
    sasl: &SaslConfig,
    transport: &mut Transport,
    frame: Bytes,
) -> anyhow::Result<Next> {
    let lookup = |user: &str, m| state.security.scram.get(user, m);
    if auth.expects_raw_token() {
        return match auth.token(sasl, &frame, lookup) {
            Ok(outcome) => {
                let reply = match outcome {
                    TokenOutcome::Continue(reply) => reply,
                    TokenOutcome::Authenticated {
                        user,
                        reply,
                        mechanism,
                        expires_ms,
                    } => {
                        let outcome = (user, mechanism, expires_ms);
                        if let Err(why) = authenticated(connection, auth, session, sasl, outcome) {
                            log_failure(connection, &why);
                            delay_failure(state).await;
                            return Ok(Next::Close);
                        }
                        reply
                    }
                };
                transport
                    .write_all(&(reply.len() as i32).to_be_bytes())
                    .await?;
                transport.write_all(&reply).await?;
                Ok(Next::Continue)
            }
            Err(why) => {
                log_failure(connection, &why);
                delay_failure(state).await;
                Ok(Next::Close)
            }
        };
    }
    let request = match framing::parse_request(frame)? {
        Parsed::Request(request) => request,
        Parsed::ApiVersionsFallback { correlation_id } => {
            let body = (api_versions.unsupported)()?;
            framing::write_response(transport, 0, correlation_id, body).await?;
            return Ok(Next::Continue);
        }
    };
    let version = request.header.request_api_version;
    let header_version = request.response_header_version();
    let correlation_id = request.header.correlation_id;
    let mut body = request.body;
    let mut next = Next::Continue;
    let response = match request.key {
        ApiKey::ApiVersions => {
            let ctx = RequestContext {
                connection,
                client_id: request.header.client_id.as_deref().unwrap_or(""),
                api_key: request.key,
                api_version: version,
                request_size: 0,
                throttle: &crate::net::Throttle::default(),
            };
            (api_versions.answer)(state, &ctx, &request.header, body, version)?
        }
        ApiKey::SaslHandshake => {
            let req = SaslHandshakeRequest::decode(&mut body, version)?;
            let renewing = session.as_ref().map(|s| s.mechanism.name());
            let code = if renewing.is_some_and(|m| m != req.mechanism.as_str()) {
                // KIP-368: a session is renewed with the mechanism it began with.
                log_failure(
                    connection,
                    &format!(
                        "SASL mechanism '{}' requested by client is not supported for \
                         re-authentication of mechanism '{}'",
                        req.mechanism.as_str(),
                        renewing.unwrap_or_default()
                    ),
                );
                next = Next::Close;
                codes::UNSUPPORTED_SASL_MECHANISM
            } else {
                match auth.handshake(sasl, &req.mechanism, version) {
                    Ok(()) => 0,
                    // Kafka's UnsupportedSaslMechanism / IllegalSaslState: an
                    // authentication failure, answered late and closed.
                    Err(code) => {
                        log_failure(
                            connection,
                            &format!(
                                "SASL handshake for mechanism '{}' refused with error {code}",
                                req.mechanism.as_str()
                            ),
                        );
                        next = Next::Close;
                        code
                    }
                }
            };
            let response = SaslHandshakeResponse::default()
                .with_error_code(code)
                .with_mechanisms(
                    sasl.mechanism_names()
                        .into_iter()
                        .map(StrBytes::from_string)
                        .collect(),
                );
            encode(&response, version)?
        }
        ApiKey::SaslAuthenticate => {
            let req = SaslAuthenticateRequest::decode(&mut body, version)?;
            let response = match auth.token(sasl, &req.auth_bytes, lookup) {
                Ok(TokenOutcome::Continue(reply)) => {
                    SaslAuthenticateResponse::default().with_auth_bytes(reply.into())
                }
                Ok(TokenOutcome::Authenticated {
                    user,
                    reply,
                    mechanism,
                    expires_ms,
                }) => {
                    let outcome = (user, mechanism, expires_ms);
                    match authenticated(connection, auth, session, sasl, outcome) {
                        Ok(lifetime_ms) => {
                            let response =
                                SaslAuthenticateResponse::default().with_auth_bytes(reply.into());
                            // session_lifetime_ms exists from v1 on.
                            if version >= 1 {
                                response.with_session_lifetime_ms(lifetime_ms)
                            } else {
                                response
                            }
                        }
                        Err(why) => {
                            log_failure(connection, &why);
                            next = Next::Close;
                            SaslAuthenticateResponse::default()
                                .with_error_code(codes::SASL_AUTHENTICATION_FAILED)
                                .with_error_message(Some(StrBytes::from_string(why)))
                        }
                    }
                }
                Err(why) => {
                    log_failure(connection, &why);
                    next = Next::Close;
                    SaslAuthenticateResponse::default()
                        .with_error_code(codes::SASL_AUTHENTICATION_FAILED)
                        .with_error_message(Some(StrBytes::from_string(why)))
                }
            };
            encode(&response, version)?
        }
        other => {
            log_failure(
                connection,
                &format!("unexpected {other:?} request before SASL authentication"),
            );
            return Ok(Next::Close);
        }
    };
    if next == Next::Close {
        // Every way to Close above is a failed authentication.
        delay_failure(state).await;
    }
    framing::write_response(transport, header_version, correlation_id, response).await?;
    Ok(next)
}
