//! The frames of a SASL listener's connection before it has authenticated: only
//! ApiVersions, SaslHandshake and SaslAuthenticate are answered (anything else closes the
//! connection, as Kafka's `SaslServerAuthenticator` does); after a v0 handshake the
//! tokens come as bare frames.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::io::AsyncWriteExt;

use super::{Authenticator, SaslConfig, TokenOutcome};
use crate::errors::codes;
use crate::handlers;
use crate::net::context::{ConnectionContext, KafkaPrincipal, RequestContext};
use crate::net::framing::{self, Parsed};
use crate::net::transport::Transport;
use crate::response::{encode, ResponseBody};
use crate::state::BrokerState;

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

fn authenticated(connection: &mut ConnectionContext, auth: &mut Authenticator, user: String) {
    connection.principal = KafkaPrincipal {
        principal_type: KafkaPrincipal::USER_TYPE.to_string(),
        name: user,
    };
    *auth = Authenticator::Done;
}

/// Answer one frame of a connection that has not authenticated yet.
pub async fn unauthenticated_frame(
    state: &Arc<BrokerState>,
    connection: &mut ConnectionContext,
    auth: &mut Authenticator,
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
                    TokenOutcome::Authenticated { user, reply } => {
                        authenticated(connection, auth, user);
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
                Ok(Next::Close)
            }
        };
    }
    let request = match framing::parse_request(frame)? {
        Parsed::Request(request) => request,
        Parsed::ApiVersionsFallback { correlation_id } => {
            let body = handlers::api_versions::unsupported_version_response()?;
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
            };
            handlers::api_versions::handle(state, &ctx, &request.header, body, version)?
        }
        ApiKey::SaslHandshake => {
            let req = SaslHandshakeRequest::decode(&mut body, version)?;
            let code = match auth.handshake(sasl, &req.mechanism, version) {
                Ok(()) => 0,
                Err(code) => code,
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
                Ok(TokenOutcome::Authenticated { user, reply }) => {
                    authenticated(connection, auth, user);
                    SaslAuthenticateResponse::default().with_auth_bytes(reply.into())
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
    framing::write_response(transport, header_version, correlation_id, response).await?;
    Ok(next)
}

/// SaslHandshake or SaslAuthenticate where no exchange is expected (a PLAINTEXT or SSL
/// listener, or a connection already authenticated: re-authentication is not offered,
/// the session lifetime being 0): ILLEGAL_SASL_STATE, as Kafka answers.
pub fn out_of_place(key: ApiKey, version: i16) -> anyhow::Result<ResponseBody> {
    match key {
        ApiKey::SaslHandshake => encode(
            &SaslHandshakeResponse::default().with_error_code(codes::ILLEGAL_SASL_STATE),
            version,
        ),
        _ => encode(
            &SaslAuthenticateResponse::default()
                .with_error_code(codes::ILLEGAL_SASL_STATE)
                .with_error_message(Some(StrBytes::from_static_str(
                    "Unexpected SASL request: this connection needs no authentication",
                ))),
            version,
        ),
    }
}
