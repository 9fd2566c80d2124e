//! SASL on a connection: which mechanisms a listener offers, and the exchange state of
//! one connection (`Authenticator`). SaslHandshake and SaslAuthenticate change what a
//! connection may do next, so they are answered here, by the connection, rather than by a
//! stateless handler in `handlers/`.

pub mod exchange;
pub mod jwks;
pub mod oauthbearer;
pub mod plain;
pub mod scram;

use std::collections::BTreeMap;
use std::time::Duration;

use scram::{ScramMechanism, ScramServer, Step};

use super::jaas;
use super::settings::ListenerKeys;

/// A mechanism a listener can offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    Plain,
    OAuthBearer,
    Scram(ScramMechanism),
}

impl Mechanism {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::OAuthBearer => "OAUTHBEARER",
            Mechanism::Scram(m) => m.name(),
        }
    }
}

/// What a SASL listener offers.
#[derive(Clone, Debug)]
pub struct SaslConfig {
    pub mechanisms: Vec<Mechanism>,
    /// PLAIN's users (`user_<name>="<password>"` in the PLAIN JAAS config).
    pub plain_users: BTreeMap<String, String>,
    /// How OAUTHBEARER tokens are validated.
    pub oauthbearer: oauthbearer::Validator,
    /// `connections.max.reauth.ms` per mechanism (0: no re-authentication, KIP-368).
    pub max_reauth_ms: BTreeMap<&'static str, i64>,
}

impl SaslConfig {
    /// From `sasl.enabled.mechanisms` and the JAAS configs, for one listener.
    pub fn from_keys(keys: &ListenerKeys<'_>) -> anyhow::Result<SaslConfig> {
        let key = "sasl.enabled.mechanisms";
        let value = keys.get(key).unwrap_or_default();
        let mut mechanisms = Vec::new();
        for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let mechanism = match name {
                "PLAIN" => Mechanism::Plain,
                "OAUTHBEARER" => Mechanism::OAuthBearer,
                other => match ScramMechanism::from_name(other) {
                    Some(m) => Mechanism::Scram(m),
                    None => anyhow::bail!(
                        "invalid config {}={value}: mechanism {other} is not supported \
                         (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER are)",
                        keys.source_of(key)
                    ),
                },
            };
            mechanisms.push(mechanism);
        }
        if mechanisms.is_empty() {
            anyhow::bail!(
                "invalid config {}: no SASL mechanism enabled",
                keys.source_of(key)
            );
        }
        let mut plain_users = BTreeMap::new();
        if mechanisms.contains(&Mechanism::Plain) {
            let jaas_key = "sasl.jaas.config";
            let Some(text) = keys.get_for_mechanism("PLAIN", jaas_key) else {
                anyhow::bail!(
                    "PLAIN needs users: set {}plain.sasl.jaas.config (or sasl.jaas.config) \
                     to a PlainLoginModule entry with user_<name>=\"<password>\" options",
                    keys.source_of("").trim_end_matches('.')
                );
            };
            let entry = jaas::parse(&text)
                .map_err(|e| anyhow::anyhow!("invalid config sasl.jaas.config for PLAIN: {e}"))?;
            plain_users = entry.plain_users();
        }
        let oauthbearer = if mechanisms.contains(&Mechanism::OAuthBearer) {
            oauthbearer_validator(keys)?
        } else {
            oauthbearer::Validator::default()
        };
        let reauth_key = "connections.max.reauth.ms";
        let mut max_reauth_ms = BTreeMap::new();
        for m in &mechanisms {
            let value = keys
                .get_for_mechanism(m.name(), reauth_key)
                .unwrap_or_default();
            let ms = match value.parse::<i64>() {
                Ok(ms) if ms >= 0 => ms,
                _ if value.is_empty() => 0,
                _ => anyhow::bail!(
                    "invalid config {reauth_key}={value}: not a number of milliseconds >= 0"
                ),
            };
            max_reauth_ms.insert(m.name(), ms);
        }
        Ok(SaslConfig {
            mechanisms,
            plain_users,
            oauthbearer,
            max_reauth_ms,
        })
    }

    /// The session lifetime to announce after `mechanism` authenticated at `now_ms`, as
    /// Kafka's `SaslServerAuthenticator` computes it: `connections.max.reauth.ms`, cut
    /// to what is left of an OAUTHBEARER token. 0 (re-authentication off) when the key
    /// is 0, whatever the token says.
    #[must_use]
    pub fn session_lifetime_ms(
        &self,
        mechanism: Mechanism,
        expires_ms: Option<i64>,
        now_ms: i64,
    ) -> i64 {
        let max = self
            .max_reauth_ms
            .get(mechanism.name())
            .copied()
            .unwrap_or(0);
        if max <= 0 {
            return 0;
        }
        match expires_ms {
            Some(exp) => max.min(exp - now_ms).max(0),
            None => max,
        }
    }

    #[must_use]
    pub fn mechanism_names(&self) -> Vec<String> {
        self.mechanisms
            .iter()
            .map(|m| m.name().to_string())
            .collect()
    }
}

const UNSECURED_HANDLERS: [&str; 1] = [
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler",
];
const JWKS_HANDLERS: [&str; 2] = [
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
];

/// OAUTHBEARER's validation, chosen as Kafka chooses it: the server callback handler
/// (unsecured JWTs by default, or JWKS-checked signed JWTs), configured from the JAAS
/// options (unsecured) or the `sasl.oauthbearer.*` keys (JWKS from a `file:` or
/// `https:` URL).
fn oauthbearer_validator(keys: &ListenerKeys<'_>) -> anyhow::Result<oauthbearer::Validator> {
    let get = |key: &str| keys.get_for_mechanism("OAUTHBEARER", key);
    let handler = get("sasl.server.callback.handler.class").unwrap_or_default();
    if handler.is_empty() || UNSECURED_HANDLERS.contains(&handler.as_str()) {
        let options = oauthbearer_jaas_options(keys)?;
        return Ok(oauthbearer::Validator::Unsecured(
            oauthbearer::UnsecuredValidator::from_options(&options),
        ));
    }
    if !JWKS_HANDLERS.contains(&handler.as_str()) {
        anyhow::bail!(
            "invalid config sasl.server.callback.handler.class={handler} for OAUTHBEARER: \
             kafkalite validates with Kafka's {} or {}",
            UNSECURED_HANDLERS[0],
            JWKS_HANDLERS[0]
        );
    }
    let url_key = "sasl.oauthbearer.jwks.endpoint.url";
    let url = get(url_key).unwrap_or_default();
    let keys = jwks_keys(keys, &url)
        .map_err(|e| anyhow::anyhow!("invalid config {url_key}={url}: {e}"))?;
    let skew_key = "sasl.oauthbearer.clock.skew.seconds";
    let skew: i64 = get(skew_key)
        .unwrap_or_default()
        .parse()
        .map_err(|_| anyhow::anyhow!("invalid config {skew_key}: not a number"))?;
    Ok(oauthbearer::Validator::Jwks(oauthbearer::JwksValidator {
        keys,
        audience: get("sasl.oauthbearer.expected.audience")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(String::from)
            .collect(),
        issuer: get("sasl.oauthbearer.expected.issuer").filter(|i| !i.is_empty()),
        sub_claim: get("sasl.oauthbearer.sub.claim.name").unwrap_or_else(|| "sub".into()),
        clock_skew_ms: skew * 1000,
    }))
}

/// The JWKS at `url`: a `file:` document read once, or an `https:` one kept fresh.
fn jwks_keys(keys: &ListenerKeys<'_>, url: &str) -> Result<std::sync::Arc<jwks::KeySet>, String> {
    if url.starts_with("https://") {
        let get = |key: &str| keys.get_for_mechanism("OAUTHBEARER", key);
        let ms = |key: &str, default: u64| {
            get(key)
                .and_then(|v| v.parse::<u64>().ok())
                .map_or(Duration::from_millis(default), Duration::from_millis)
        };
        let roots = jwks_truststore(keys)
            .map_err(|e| e.to_string())?
            .ok_or(
            "an https JWKS URL needs ssl.truststore.location (or certificates) to check the server, \
             as an option of the OAUTHBEARER sasl.jaas.config or a listener key",
        )?;
        let endpoint = jwks::Endpoint {
            url: url.to_string(),
            tls: jwks::client_config(roots),
            refresh: ms("sasl.oauthbearer.jwks.endpoint.refresh.ms", 3_600_000),
            backoff: ms("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", 100),
            backoff_max: ms(
                "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
                10_000,
            ),
        };
        return jwks::refreshing(endpoint);
    }
    let Some(path) = url
        .strip_prefix("file://")
        .or_else(|| url.strip_prefix("file:"))
    else {
        return Err("only file: and https: URLs are supported".into());
    };
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    Ok(jwks::KeySet::fixed(jwks::parse(&text)?))
}

/// The CAs an https JWKS server is checked against. Kafka reads them from `ssl.*` options
/// of the OAUTHBEARER JAAS entry, so those win, read from there alone; without such an
/// option kafkalite takes the listener's truststore (Kafka would take the JVM's CAs).
fn jwks_truststore(keys: &ListenerKeys<'_>) -> anyhow::Result<Option<rustls::RootCertStore>> {
    let options = oauthbearer_jaas_options(keys)?;
    if options.keys().any(|k| k.starts_with("ssl.truststore.")) {
        super::tls::truststore(&keys.jaas_options("OAUTHBEARER", &options))
    } else {
        super::tls::truststore(keys)
    }
}

/// The options of the OAUTHBEARER JAAS entry (none without one): the unsecured
/// validator's settings and the JWKS client's `ssl.*`.
fn oauthbearer_jaas_options(keys: &ListenerKeys<'_>) -> anyhow::Result<BTreeMap<String, String>> {
    match keys.get_for_mechanism("OAUTHBEARER", "sasl.jaas.config") {
        Some(text) => Ok(jaas::parse(&text)
            .map_err(|e| anyhow::anyhow!("invalid config sasl.jaas.config for OAUTHBEARER: {e}"))?
            .options),
        None => Ok(BTreeMap::new()),
    }
}

/// Where a connection is in its SASL exchange.
pub enum Authenticator {
    /// Nothing yet: a SaslHandshake must come first.
    Start,
    /// Mechanism chosen; `raw` when the handshake was v0 (tokens then come as bare
    /// frames, without Kafka headers).
    Chosen {
        mechanism: Mechanism,
        raw: bool,
    },
    Scram {
        server: Box<ScramServer>,
        mechanism: ScramMechanism,
        raw: bool,
    },
    Done,
}

/// What one SASL token led to.
pub enum TokenOutcome {
    Continue(Vec<u8>),
    Authenticated {
        user: String,
        reply: Vec<u8>,
        mechanism: Mechanism,
        /// When the credential expires (an OAUTHBEARER token's `exp`), ms since the epoch.
        expires_ms: Option<i64>,
    },
}

impl Authenticator {
    #[must_use]
    pub fn is_done(&self) -> bool {
        matches!(self, Authenticator::Done)
    }

    /// Whether the next frame is a bare SASL token (after a v0 handshake).
    #[must_use]
    pub fn expects_raw_token(&self) -> bool {
        matches!(
            self,
            Authenticator::Chosen { raw: true, .. } | Authenticator::Scram { raw: true, .. }
        )
    }

    /// SaslHandshake: choose `mechanism` if offered (else the error code to answer).
    pub fn handshake(&mut self, config: &SaslConfig, name: &str, version: i16) -> Result<(), i16> {
        use crate::errors::codes;
        if !matches!(self, Authenticator::Start) {
            return Err(codes::ILLEGAL_SASL_STATE);
        }
        let Some(&mechanism) = config.mechanisms.iter().find(|m| m.name() == name) else {
            return Err(codes::UNSUPPORTED_SASL_MECHANISM);
        };
        *self = Authenticator::Chosen {
            mechanism,
            raw: version == 0,
        };
        Ok(())
    }

    /// One client token. `Err` carries the message for SASL_AUTHENTICATION_FAILED.
    pub fn token(
        &mut self,
        config: &SaslConfig,
        token: &[u8],
        scram_lookup: impl Fn(&str, ScramMechanism) -> Option<scram::ScramCredential>,
    ) -> Result<TokenOutcome, String> {
        match std::mem::replace(self, Authenticator::Done) {
            Authenticator::Chosen {
                mechanism: Mechanism::Plain,
                ..
            } => {
                let user = plain::authenticate(token, &config.plain_users)?;
                Ok(TokenOutcome::Authenticated {
                    user,
                    reply: Vec::new(),
                    mechanism: Mechanism::Plain,
                    expires_ms: None,
                })
            }
            Authenticator::Chosen {
                mechanism: Mechanism::OAuthBearer,
                ..
            } => {
                let now = kafkalite_core::storage::clock::now_ms();
                let (user, expires) = config.oauthbearer.authenticate(token, now)?;
                Ok(TokenOutcome::Authenticated {
                    user,
                    reply: Vec::new(),
                    mechanism: Mechanism::OAuthBearer,
                    expires_ms: Some(expires),
                })
            }
            Authenticator::Chosen {
                mechanism: Mechanism::Scram(m),
                raw,
            } => {
                *self = Authenticator::Scram {
                    server: Box::new(ScramServer::new(m)),
                    mechanism: m,
                    raw,
                };
                self.token(config, token, scram_lookup)
            }
            Authenticator::Scram {
                mut server,
                mechanism,
                raw,
            } => match server.step(token, scram_lookup)? {
                Step::Continue(reply) => {
                    *self = Authenticator::Scram {
                        server,
                        mechanism,
                        raw,
                    };
                    Ok(TokenOutcome::Continue(reply))
                }
                Step::Done { user, reply } => Ok(TokenOutcome::Authenticated {
                    user,
                    reply,
                    mechanism: Mechanism::Scram(mechanism),
                    expires_ms: None,
                }),
            },
            Authenticator::Start | Authenticator::Done => {
                Err("SaslAuthenticate without a SaslHandshake first".into())
            }
        }
    }
}
