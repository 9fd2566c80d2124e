//! How a connection is secured, as a Kafka client's `security.protocol` says: TLS
//! (SSL, SASL_SSL) with the caller's rustls config, then SASL PLAIN (SASL_PLAINTEXT,
//! SASL_SSL) right after ApiVersions: SaslHandshake naming the mechanism, then one
//! SaslAuthenticate carrying `\0username\0password` (RFC 4616). The broker's replica
//! fetchers use it to reach their leaders over `inter.broker.listener.name`.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

/// A byte stream a connection runs over: plain TCP or TLS over it.
pub trait Transport: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Transport for T {}

/// TLS: the client config (roots, client certificate) and the name the server's
/// certificate must carry.
#[derive(Clone)]
pub struct TlsSettings {
    pub config: Arc<rustls::ClientConfig>,
    pub server_name: Option<rustls::pki_types::ServerName<'static>>,
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// SASL credentials (PLAIN is the one mechanism spoken).
#[derive(Clone)]
pub struct SaslPlain {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for SaslPlain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password.
        f.debug_struct("SaslPlain")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// What secures a connection; the default is PLAINTEXT.
#[derive(Clone, Debug, Default)]
pub struct ClientSecurity {
    pub tls: Option<TlsSettings>,
    pub sasl: Option<SaslPlain>,
}

impl ClientSecurity {
    /// The PLAIN mechanism's initial response: authzid (empty), username, password.
    #[must_use]
    pub fn plain_auth_bytes(sasl: &SaslPlain) -> Vec<u8> {
        let mut out = Vec::with_capacity(sasl.username.len() + sasl.password.len() + 2);
        out.push(0);
        out.extend_from_slice(sasl.username.as_bytes());
        out.push(0);
        out.extend_from_slice(sasl.password.as_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_response_is_rfc_4616_and_debug_hides_the_password() {
        let sasl = SaslPlain {
            username: "broker".into(),
            password: "s3cret".into(),
        };
        assert_eq!(ClientSecurity::plain_auth_bytes(&sasl), b"\0broker\0s3cret");
        assert!(!format!("{sasl:?}").contains("s3cret"));
    }
}
