//! Which listener brokers reach each other on, and how the replica fetchers secure their
//! connections there, as Kafka decides it:
//!
//! - the listener: `inter.broker.listener.name`; unset, the listener named after
//!   `security.inter.broker.protocol` (Kafka's fallback, PLAINTEXT by default); with no
//!   such listener either, this broker's first listener (kafkalite's leniency for a
//!   single-listener broker whose listener has another name);
//! - its security protocol (`listener.security.protocol.map`): TLS for SSL and SASL_SSL
//!   (`security::tls::client_config` over the listener's `ssl.*` keys), SASL for
//!   SASL_PLAINTEXT and SASL_SSL with `sasl.mechanism.inter.broker.protocol` and the
//!   `username`/`password` of the listener's JAAS config for that mechanism
//!   (`listener.name.<l>.<mechanism>.sasl.jaas.config`, else `sasl.jaas.config`).
//!
//! The leader's address is its registered endpoint of that listener name
//! (`/brokers/ids/<id>`, carried in each snapshot's brokers).

use kafkalite_client::{ClientSecurity, SaslPlain, TlsSettings};

use crate::config::BrokerConfig;
use crate::net::SecurityProtocol;
use crate::security::settings::ListenerKeys;
use crate::security::{jaas, tls};

/// The inter-broker listener and how to connect to it.
#[derive(Clone, Debug)]
pub struct InterBroker {
    pub listener: String,
    pub protocol: SecurityProtocol,
    pub security: ClientSecurity,
}

/// The inter-broker listener's name, as the rules above pick it (`None`: no listeners).
#[must_use]
pub fn listener_name(config: &BrokerConfig) -> Option<String> {
    let settings = &config.settings;
    if let Some(name) = settings
        .get("inter.broker.listener.name")
        .filter(|n| !n.trim().is_empty())
    {
        return Some(name.trim().to_string());
    }
    let by_protocol = settings
        .get("security.inter.broker.protocol")
        .unwrap_or_else(|| "PLAINTEXT".into());
    config
        .listeners
        .iter()
        .find(|l| l.name == by_protocol)
        .or(config.listeners.first())
        .map(|l| l.name.clone())
}

impl InterBroker {
    /// Read the inter-broker settings; an error names the key that is wrong (Python
    /// raises it as InvalidConfigError).
    pub fn from_config(config: &BrokerConfig) -> anyhow::Result<InterBroker> {
        Self::read(config).map_err(crate::security::typed_config_error)
    }

    fn read(config: &BrokerConfig) -> anyhow::Result<InterBroker> {
        let name = listener_name(config)
            .ok_or_else(|| anyhow::anyhow!("a cluster broker needs a listener"))?;
        let listener = config
            .listeners
            .iter()
            .find(|l| l.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = config.listeners.iter().map(|l| l.name.as_str()).collect();
                anyhow::anyhow!(
                    "invalid config inter.broker.listener.name={name}: not one of this \
                     broker's listeners ({})",
                    names.join(", ")
                )
            })?;
        let protocol = listener.security_protocol;
        let keys = ListenerKeys::new(&config.raw, &config.settings, &name);
        let mut security = ClientSecurity::default();
        if matches!(protocol, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl) {
            security.tls = Some(TlsSettings {
                config: tls::client_config(&keys)?,
                server_name: None,
            });
        }
        if matches!(
            protocol,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        ) {
            security.sasl = Some(sasl_credentials(config, &keys)?);
        }
        Ok(InterBroker {
            listener: name,
            protocol,
            security,
        })
    }
}

fn sasl_credentials(config: &BrokerConfig, keys: &ListenerKeys<'_>) -> anyhow::Result<SaslPlain> {
    let key = "sasl.mechanism.inter.broker.protocol";
    let mechanism = config
        .settings
        .get(key)
        .unwrap_or_default()
        .trim()
        .to_uppercase();
    if mechanism != "PLAIN" {
        return Err(anyhow::anyhow!(
            "invalid config {key}={mechanism}: replica fetchers authenticate with PLAIN only \
             (set {key}=PLAIN and give the inter-broker listener a PLAIN JAAS config with \
             username and password)"
        ));
    }
    let jaas_key = "sasl.jaas.config";
    let source = keys.source_of(jaas_key);
    let text = keys
        .get_for_mechanism(&mechanism, jaas_key)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "invalid config {source}: replicating over SASL needs a PLAIN login with \
                 username and password"
            )
        })?;
    let entry = jaas::parse(&text).map_err(|e| anyhow::anyhow!("invalid config {source}: {e}"))?;
    let option = |name: &str| {
        entry.options.get(name).cloned().ok_or_else(|| {
            anyhow::anyhow!(
                "invalid config {source}: the inter-broker listener's PLAIN login needs \
                 {name}=\"...\" (the credentials this broker authenticates with)"
            )
        })
    };
    Ok(SaslPlain {
        username: option("username")?,
        password: option("password")?,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn config(pairs: &[(&str, &str)]) -> BrokerConfig {
        let pairs: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        BrokerConfig::from_pairs(&pairs).unwrap()
    }

    const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                        username=\"broker\" password=\"pw\" user_broker=\"pw\";";

    #[test]
    fn the_listener_is_named_then_by_protocol_then_the_first() {
        let two = "CLIENT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0";
        let map = "CLIENT:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT";
        let c = config(&[("listeners", two), ("listener.security.protocol.map", map)]);
        assert_eq!(listener_name(&c).as_deref(), Some("PLAINTEXT"));
        let only = config(&[
            ("listeners", "CLIENT://127.0.0.1:0"),
            ("listener.security.protocol.map", map),
        ]);
        assert_eq!(listener_name(&only).as_deref(), Some("CLIENT"));
        let named = config(&[
            ("listeners", "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0"),
            ("listener.security.protocol.map", map),
            ("inter.broker.listener.name", "INTERNAL"),
        ]);
        let ib = InterBroker::from_config(&named).unwrap();
        assert_eq!(
            (ib.listener.as_str(), ib.protocol),
            ("INTERNAL", SecurityProtocol::Plaintext)
        );
        assert!(ib.security.tls.is_none() && ib.security.sasl.is_none());
        let missing = config(&[
            ("listeners", "CLIENT://127.0.0.1:0"),
            ("listener.security.protocol.map", map),
            ("inter.broker.listener.name", "REPLICATION"),
        ]);
        let e = InterBroker::from_config(&missing).unwrap_err().to_string();
        assert!(
            e.contains(
                "Invalid value REPLICATION for configuration inter.broker.listener.name: not"
            ),
            "{e}"
        );
    }

    #[test]
    fn sasl_credentials_come_from_the_listeners_plain_jaas_config() {
        let c = config(&[
            ("listeners", "SASL_PLAINTEXT://127.0.0.1:0"),
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS),
        ]);
        let ib = InterBroker::from_config(&c).unwrap();
        let sasl = ib.security.sasl.unwrap();
        assert_eq!(
            (sasl.username.as_str(), sasl.password.as_str()),
            ("broker", "pw")
        );
        let gssapi = config(&[
            ("listeners", "SASL_PLAINTEXT://127.0.0.1:0"),
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS),
        ]);
        let e = InterBroker::from_config(&gssapi).unwrap_err().to_string();
        assert!(
            e.contains(
                "Invalid value GSSAPI for configuration sasl.mechanism.inter.broker.protocol"
            ),
            "{e}"
        );
    }
}
