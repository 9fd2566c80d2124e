//! SaslHandshake and SaslAuthenticate outside a SASL exchange. The exchange itself is
//! run by the connection (`security::sasl::exchange`), which answers these APIs while a
//! client authenticates; a request reaching the handlers comes where none is expected.

use kafka_protocol::messages::{ApiKey, SaslAuthenticateResponse, SaslHandshakeResponse};
use kafka_protocol::protocol::StrBytes;

use crate::errors::codes;
use crate::response::{encode, ResponseBody};

/// SaslHandshake or SaslAuthenticate where no exchange is expected (a PLAINTEXT or SSL
/// listener, or an authenticated connection that was given no session lifetime, so may
/// not re-authenticate): ILLEGAL_SASL_STATE, as Kafka answers.
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
                    "SaslAuthenticate request received after successful authentication",
                ))),
            version,
        ),
    }
}
