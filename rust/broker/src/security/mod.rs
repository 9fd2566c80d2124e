//! Security: TLS listeners (rustls), SASL (PLAIN, SCRAM-SHA-256/512), principals, and the
//! SCRAM credential store. Each listener gets a `ListenerSecurity` built once at start-up
//! from Kafka's keys (per-listener prefixes first); a connection reads it to run its TLS
//! handshake and SASL exchange before its first ordinary request.

pub mod acl;
pub mod authorizer;
pub mod authz;
pub mod cert_identity;
pub mod credentials;
pub mod gate;
pub mod gate_cluster;
pub mod gate_txn;
pub mod jaas;
pub mod ktls;
pub mod pkcs12;
pub mod principal;
pub mod quotas;
pub mod refusal;
pub mod sasl;
pub mod settings;
pub mod shared_store;
pub mod tls;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::config::BrokerConfig;
use crate::net::listeners::SecurityProtocol;
use authorizer::Authorizer;
use credentials::ScramStore;
use principal::PrincipalMapper;
use sasl::SaslConfig;
use settings::ListenerKeys;

/// How one listener secures its connections.
pub struct ListenerSecurity {
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// Who the TLS listener's certificate says the broker is (`cert_identity`).
    pub certificate: Option<cert_identity::CertIdentity>,
    /// Hand TLS sessions to the kernel (kTLS) after the handshake: enabled for the
    /// listener (`kafkalite.ssl.ktls.enable`) and the kernel has it.
    pub ktls: bool,
    pub principal_mapper: PrincipalMapper,
    /// `Some` on SASL_PLAINTEXT and SASL_SSL listeners.
    pub sasl: Option<SaslConfig>,
}

impl ListenerSecurity {
    fn plaintext() -> ListenerSecurity {
        ListenerSecurity {
            tls: None,
            certificate: None,
            ktls: false,
            principal_mapper: PrincipalMapper::parse("DEFAULT").expect("DEFAULT parses"),
            sasl: None,
        }
    }
}

/// Each listener's security, by listener name.
pub type Listeners = HashMap<String, Arc<ListenerSecurity>>;

/// The broker's security settings and state.
pub struct Security {
    /// Swapped whole when a dynamic config changes (`reconfigure`): a connection takes its
    /// listener's `Arc` when accepted, so existing connections keep what they started with.
    listeners: RwLock<Listeners>,
    pub scram: ScramStore,
    pub authorizer: Authorizer,
    /// `sasl.server.max.receive.size`: the largest frame before authentication.
    pub sasl_max_receive_size: usize,
    /// Client quotas (user / client-id byte rates and request percentages).
    pub quotas: quotas::ClientQuotas,
    /// `max.connections` and friends.
    pub connections: crate::net::limits::ConnectionLimits,
}

impl Security {
    /// Build every listener's security from the config. A bad value is a
    /// `kafkalite_core::Error::InvalidConfig` naming the key and value (Python raises it
    /// as InvalidConfigError; the daemon exits 2); other failures (a file that cannot be
    /// read for the credential store) stay as they are.
    pub fn from_config(config: &BrokerConfig) -> anyhow::Result<Security> {
        Self::build(config).map_err(typed_config_error)
    }

    fn build(config: &BrokerConfig) -> anyhow::Result<Security> {
        let listeners = Self::build_listeners(config)?;
        let size = config.settings.int("sasl.server.max.receive.size");
        // Cluster mode: credentials and ACLs live in ZooKeeper and arrive with the
        // controller's pushes (`cluster_sync`); a single node keeps them in its data dir.
        let dir = config
            .zookeeper_connect
            .is_none()
            .then(|| config.metadata_dir());
        Ok(Security {
            listeners: RwLock::new(listeners),
            scram: ScramStore::open(dir)?,
            authorizer: Authorizer::open(
                &config
                    .settings
                    .get("authorizer.class.name")
                    .unwrap_or_default(),
                &config.settings.get("super.users").unwrap_or_default(),
                config.settings.boolean("allow.everyone.if.no.acl.found"),
                dir,
            )?,
            sasl_max_receive_size: usize::try_from(size).unwrap_or(512 * 1024),
            quotas: quotas::ClientQuotas::new(
                if config.zookeeper_connect.is_some() {
                    quotas::store::QuotaStore::pushed()
                } else {
                    quotas::store::QuotaStore::open(config.metadata_dir())?
                },
                quotas::rate::Windows {
                    samples: usize::try_from(config.settings.int("quota.window.num")).unwrap_or(11),
                    window_ms: i64::from(config.settings.int("quota.window.size.seconds")) * 1000,
                },
            ),
            connections: crate::net::limits::ConnectionLimits::from_config(config)?,
        })
    }

    /// Build every listener's security from `config` (its keys with the dynamic layers
    /// over them) without serving it yet: a bad value is an `InvalidConfig` naming the key.
    pub fn check_listeners(&self, config: &BrokerConfig) -> anyhow::Result<Listeners> {
        Self::build_listeners(config).map_err(typed_config_error)
    }

    /// Kafka's rule for a keystore replaced while the broker runs: each TLS listener's new
    /// certificate keeps the subject and alternative names of the one it serves, unless
    /// the listener's `ssl.allow.dn.changes` / `ssl.allow.san.changes` allow a change. The
    /// refusal names the listener's keystore key.
    pub fn check_certificates(&self, new: &Listeners, config: &BrokerConfig) -> Result<(), String> {
        for (name, security) in new {
            let (Some(old), Some(new)) = (&self.listener(name).certificate, &security.certificate)
            else {
                continue;
            };
            let keys = ListenerKeys::new(&config.raw, &config.settings, name);
            let allowed = |key: &str| {
                keys.get(key)
                    .is_some_and(|v| v.eq_ignore_ascii_case("true"))
            };
            let checked = cert_identity::check_change(
                old,
                new,
                allowed("ssl.allow.dn.changes"),
                allowed("ssl.allow.san.changes"),
            );
            if let Err(why) = checked {
                let key = format!(
                    "listener.name.{}.ssl.keystore.location",
                    name.to_lowercase()
                );
                return Err(format!(
                    "Validation of dynamic config update of {key} failed: {why}"
                ));
            }
        }
        Ok(())
    }

    /// Serve new connections with `listeners`; connections already open keep theirs.
    pub fn install_listeners(&self, listeners: Listeners) {
        *self
            .listeners
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = listeners;
    }

    fn build_listeners(config: &BrokerConfig) -> anyhow::Result<Listeners> {
        let mut listeners = HashMap::new();
        let mut tls_listeners = Vec::new();
        for listener in &config.listeners {
            let keys = ListenerKeys::new(&config.raw, &config.settings, &listener.name);
            let protocol = listener.security_protocol;
            let mut security = ListenerSecurity::plaintext();
            if matches!(protocol, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl) {
                let (config, leaf) = tls::server_config(&keys)?;
                security.tls = Some(tokio_rustls::TlsAcceptor::from(config));
                security.certificate = cert_identity::CertIdentity::of(&leaf);
                let rules = keys.get("ssl.principal.mapping.rules").unwrap_or_default();
                security.principal_mapper = PrincipalMapper::parse(&rules).map_err(|e| {
                    anyhow::anyhow!(
                        "invalid config {}: {e}",
                        keys.source_of("ssl.principal.mapping.rules")
                    )
                })?;
                let ktls_enabled = ktls_enabled(&keys)?;
                security.ktls = ktls::wanted(ktls_enabled);
                tls_listeners.push((listener.name.clone(), ktls_enabled));
            }
            if matches!(
                protocol,
                SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
            ) {
                security.sasl = Some(SaslConfig::from_keys(&keys)?);
            }
            listeners.insert(listener.name.clone(), Arc::new(security));
        }
        if !tls_listeners.is_empty() {
            ktls::log_choice(&tls_listeners);
        }
        Ok(listeners)
    }

    /// The security of listener `name` (plaintext for a listener not configured here).
    #[must_use]
    pub fn listener(&self, name: &str) -> Arc<ListenerSecurity> {
        self.listeners
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .cloned()
            .unwrap_or_else(|| Arc::new(ListenerSecurity::plaintext()))
    }
}

/// "invalid config KEY[=VALUE]: REASON" (how this module words a bad setting) as the
/// core's typed config error; anything else unchanged.
pub(crate) fn typed_config_error(e: anyhow::Error) -> anyhow::Error {
    let text = e.to_string();
    let Some(rest) = text.strip_prefix("invalid config ") else {
        return e;
    };
    let Some((setting, reason)) = rest.split_once(": ") else {
        return e;
    };
    let (key, value) = match setting.split_once('=') {
        Some((k, v)) => (k, if v.is_empty() { "null" } else { v }),
        None => (setting, "null"),
    };
    kafkalite_core::Error::InvalidConfig {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    }
    .into()
}

/// `kafkalite.ssl.ktls.enable` for a listener (its `listener.name.<l>.` value first).
fn ktls_enabled(keys: &ListenerKeys<'_>) -> anyhow::Result<bool> {
    match keys
        .get(ktls::ENABLE_KEY)
        .map(|v| v.to_ascii_lowercase())
        .as_deref()
    {
        None | Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => Err(anyhow::anyhow!(
            "invalid config {}: {other:?} is not true or false",
            keys.source_of(ktls::ENABLE_KEY)
        )),
    }
}
