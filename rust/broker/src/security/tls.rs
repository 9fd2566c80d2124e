//! TLS listeners: a rustls `ServerConfig` from Kafka's `ssl.*` keys (each one read with its
//! `listener.name.<listener>.` prefix first), and the principal a client certificate
//! maps to.
//!
//! Keystores: PEM, either `ssl.keystore.location` (a file with the private key and the
//! certificate chain) or `ssl.keystore.key` + `ssl.keystore.certificate.chain` given
//! inline; or PKCS12 (`pkcs12.rs`). Truststores: PEM (`ssl.truststore.location` or
//! `ssl.truststore.certificates`) or PKCS12. JKS, Java's own legacy format (Kafka's
//! default type), is refused with a message naming the key and the `keytool` command
//! that converts it: the one Rust reader of JKS is a young single-author crate, and Java
//! itself has written PKCS12 by default since Java 9.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedProtocolVersion};

use super::settings::ListenerKeys;

/// `ssl.client.auth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

/// A failure naming the key (with its listener prefix, if that is where it came from).
fn bad(keys: &ListenerKeys<'_>, key: &str, reason: impl std::fmt::Display) -> anyhow::Error {
    keys.refused(key, reason)
}

fn read_pem_source(keys: &ListenerKeys<'_>, location_key: &str) -> anyhow::Result<Vec<u8>> {
    let path = keys.get(location_key).unwrap_or_default();
    std::fs::read(&path).map_err(|e| bad(keys, location_key, format!("cannot read {path}: {e}")))
}

fn certificates(
    keys: &ListenerKeys<'_>,
    key: &str,
    pem: &[u8],
) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(keys, key, format!("bad PEM certificate: {e}")))?;
    if certs.is_empty() {
        return Err(bad(keys, key, "no PEM certificate found"));
    }
    Ok(certs)
}

fn private_key(
    keys: &ListenerKeys<'_>,
    key: &str,
    pem: &[u8],
) -> anyhow::Result<PrivateKeyDer<'static>> {
    if String::from_utf8_lossy(pem).contains("ENCRYPTED PRIVATE KEY") {
        return Err(bad(
            keys,
            key,
            "encrypted PEM private keys are not supported; give the key unencrypted \
             (file permissions protect it)",
        ));
    }
    PrivateKeyDer::from_pem_slice(pem)
        .map_err(|e| bad(keys, key, format!("no usable PEM private key: {e}")))
}

fn unsupported_type(ty: &str) -> String {
    if ty == "JKS" {
        "JKS stores are not supported (use PKCS12 or PEM; convert with `keytool \
         -importkeystore -srckeystore STORE.jks -destkeystore STORE.p12 -deststoretype PKCS12`)"
            .to_string()
    } else {
        format!("{ty} is not a supported store type (PKCS12 and PEM are)")
    }
}

/// The certificate chain and key of the keystore.
fn keystore(
    keys: &ListenerKeys<'_>,
) -> anyhow::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let ty = keys
        .get("ssl.keystore.type")
        .unwrap_or_default()
        .to_uppercase();
    let location = keys.get("ssl.keystore.location");
    let inline_chain = keys.get("ssl.keystore.certificate.chain");
    let inline_key = keys.get("ssl.keystore.key");
    if inline_chain.is_some() || inline_key.is_some() {
        if ty != "PEM" {
            return Err(bad(
                keys,
                "ssl.keystore.type",
                "must be PEM with ssl.keystore.key",
            ));
        }
        let (Some(chain), Some(key)) = (inline_chain, inline_key) else {
            return Err(bad(
                keys,
                "ssl.keystore.key",
                "ssl.keystore.key and ssl.keystore.certificate.chain go together",
            ));
        };
        let certs = certificates(keys, "ssl.keystore.certificate.chain", chain.as_bytes())?;
        return Ok((
            certs,
            private_key(keys, "ssl.keystore.key", key.as_bytes())?,
        ));
    }
    if location.is_none() {
        return Err(bad(
            keys,
            "ssl.keystore.location",
            "a TLS listener needs a keystore (ssl.keystore.location, or ssl.keystore.key and \
             ssl.keystore.certificate.chain)",
        ));
    }
    match ty.as_str() {
        "PEM" => {
            let pem = read_pem_source(keys, "ssl.keystore.location")?;
            let certs = certificates(keys, "ssl.keystore.location", &pem)?;
            Ok((certs, private_key(keys, "ssl.keystore.location", &pem)?))
        }
        "PKCS12" => super::pkcs12::keystore(keys),
        other => Err(bad(keys, "ssl.keystore.type", unsupported_type(other))),
    }
}

/// Trusted CA certificates (of client certificates, or of a JWKS server), if a
/// truststore is configured.
pub(crate) fn truststore(keys: &ListenerKeys<'_>) -> anyhow::Result<Option<RootCertStore>> {
    let certs = if let Some(inline) = keys.get("ssl.truststore.certificates") {
        certificates(keys, "ssl.truststore.certificates", inline.as_bytes())?
    } else if keys.get("ssl.truststore.location").is_some() {
        let ty = keys
            .get("ssl.truststore.type")
            .unwrap_or_default()
            .to_uppercase();
        match ty.as_str() {
            "PEM" => {
                let pem = read_pem_source(keys, "ssl.truststore.location")?;
                certificates(keys, "ssl.truststore.location", &pem)?
            }
            "PKCS12" => super::pkcs12::truststore(keys)?,
            other => return Err(bad(keys, "ssl.truststore.type", unsupported_type(other))),
        }
    } else {
        return Ok(None);
    };
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| bad(keys, "ssl.truststore.location", format!("bad CA: {e}")))?;
    }
    Ok(Some(roots))
}

fn protocol_versions(
    keys: &ListenerKeys<'_>,
) -> anyhow::Result<Vec<&'static SupportedProtocolVersion>> {
    let value = keys.get("ssl.enabled.protocols").unwrap_or_default();
    let mut out = Vec::new();
    for p in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match p {
            "TLSv1.2" => out.push(&rustls::version::TLS12),
            "TLSv1.3" => out.push(&rustls::version::TLS13),
            other => {
                return Err(bad(
                    keys,
                    "ssl.enabled.protocols",
                    format!("{other} is not supported (TLSv1.2 and TLSv1.3 are)"),
                ))
            }
        }
    }
    if out.is_empty() {
        return Err(bad(keys, "ssl.enabled.protocols", "no protocol enabled"));
    }
    Ok(out)
}

/// The IANA name of a rustls suite (rustls writes TLS 1.3 suites as `TLS13_...`).
fn iana_name(suite: rustls::SupportedCipherSuite) -> String {
    let name = suite.suite().as_str().unwrap_or_default();
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name.to_string(),
    }
}

fn provider(keys: &ListenerKeys<'_>) -> anyhow::Result<rustls::crypto::CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    let wanted: Vec<String> = keys
        .get("ssl.cipher.suites")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if !wanted.is_empty() {
        for name in &wanted {
            if !provider
                .cipher_suites
                .iter()
                .any(|s| &iana_name(*s) == name)
            {
                let known: Vec<String> = provider
                    .cipher_suites
                    .iter()
                    .map(|s| iana_name(*s))
                    .collect();
                return Err(bad(
                    keys,
                    "ssl.cipher.suites",
                    format!("{name} is not supported (supported: {})", known.join(", ")),
                ));
            }
        }
        provider
            .cipher_suites
            .retain(|s| wanted.contains(&iana_name(*s)));
    }
    Ok(provider)
}

/// `ssl.client.auth` for this listener.
pub fn client_auth(keys: &ListenerKeys<'_>) -> anyhow::Result<ClientAuth> {
    match keys.get("ssl.client.auth").unwrap_or_default().trim() {
        "" | "none" => Ok(ClientAuth::None),
        "requested" => Ok(ClientAuth::Requested),
        "required" => Ok(ClientAuth::Required),
        other => Err(bad(
            keys,
            "ssl.client.auth",
            format!("{other:?} is not one of none, requested, required"),
        )),
    }
}

/// The rustls server config for a TLS listener, and the leaf certificate it serves.
pub fn server_config(
    keys: &ListenerKeys<'_>,
) -> anyhow::Result<(Arc<ServerConfig>, CertificateDer<'static>)> {
    let provider = Arc::new(provider(keys)?);
    let versions = protocol_versions(keys)?;
    let (certs, key) = keystore(keys)?;
    let leaf = certs.first().cloned().ok_or_else(|| {
        bad(
            keys,
            "ssl.keystore.location",
            "no certificate in the keystore",
        )
    })?;
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| bad(keys, "ssl.enabled.protocols", e))?;
    let auth = client_auth(keys)?;
    let builder = match (auth, truststore(keys)?) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (_, None) => {
            return Err(bad(
                keys,
                "ssl.client.auth",
                "verifying client certificates needs a truststore (ssl.truststore.location)",
            ))
        }
        (auth, Some(roots)) => {
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider));
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(
                verifier
                    .build()
                    .map_err(|e| bad(keys, "ssl.truststore.location", e))?,
            )
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| bad(keys, "ssl.keystore.location", e))?;
    // Session tickets would be extra records after the handshake, in the way of handing
    // the session to the kernel (kTLS); clients reconnect rarely enough to do without.
    config.send_tls13_tickets = 0;
    config.enable_secret_extraction = true;
    Ok((Arc::new(config), leaf))
}

/// The rustls client config of a broker's replica fetchers on a TLS inter-broker listener
/// (`inter.broker.listener.name`): the listener's truststore verifies the leader's
/// certificate (and its name, as Kafka's default `ssl.endpoint.identification.algorithm`
/// does); the listener's keystore is presented as client certificate when the listener
/// asks its clients for one (`ssl.client.auth`), as the leader's listener then will.
pub fn client_config(keys: &ListenerKeys<'_>) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let provider = Arc::new(provider(keys)?);
    let versions = protocol_versions(keys)?;
    let Some(roots) = truststore(keys)? else {
        return Err(bad(
            keys,
            "ssl.truststore.location",
            "replicating over a TLS inter-broker listener needs a truststore to verify the \
             leader's certificate",
        ));
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| bad(keys, "ssl.enabled.protocols", e))?
        .with_root_certificates(roots);
    let config = if client_auth(keys)? == ClientAuth::None {
        builder.with_no_client_auth()
    } else {
        let (certs, key) = keystore(keys)?;
        builder
            .with_client_auth_cert(certs, key)
            .map_err(|e| bad(keys, "ssl.keystore.location", e))?
    };
    Ok(Arc::new(config))
}
