//! SASL on a connection: which mechanisms a listener offers, and the exchange state of
//! one connection (`Authenticator`). SaslHandshake and SaslAuthenticate change what a
//! connection may do next, so they are answered here, by the connection, rather than by a
//! stateless handler in `handlers/`.

pub mod exchange;
pub mod plain;
pub mod scram;

use std::collections::BTreeMap;

use scram::{ScramMechanism, ScramServer, Step};

use super::jaas;
use super::settings::ListenerKeys;

/// A mechanism a listener can offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    Plain,
    Scram(ScramMechanism),
}

impl Mechanism {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
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
                other => match ScramMechanism::from_name(other) {
                    Some(m) => Mechanism::Scram(m),
                    None => anyhow::bail!(
                        "invalid config {}={value}: mechanism {other} is not supported \
                         (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are)",
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
        Ok(SaslConfig {
            mechanisms,
            plain_users,
        })
    }

    #[must_use]
    pub fn mechanism_names(&self) -> Vec<String> {
        self.mechanisms
            .iter()
            .map(|m| m.name().to_string())
            .collect()
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
        raw: bool,
    },
    Done,
}

/// What one SASL token led to.
pub enum TokenOutcome {
    Continue(Vec<u8>),
    Authenticated { user: String, reply: Vec<u8> },
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
                })
            }
            Authenticator::Chosen {
                mechanism: Mechanism::Scram(m),
                raw,
            } => {
                *self = Authenticator::Scram {
                    server: Box::new(ScramServer::new(m)),
                    raw,
                };
                self.token(config, token, scram_lookup)
            }
            Authenticator::Scram { mut server, raw } => match server.step(token, scram_lookup)? {
                Step::Continue(reply) => {
                    *self = Authenticator::Scram { server, raw };
                    Ok(TokenOutcome::Continue(reply))
                }
                Step::Done { user, reply } => Ok(TokenOutcome::Authenticated { user, reply }),
            },
            Authenticator::Start | Authenticator::Done => {
                Err("SaslAuthenticate without a SaslHandshake first".into())
            }
        }
    }
}
