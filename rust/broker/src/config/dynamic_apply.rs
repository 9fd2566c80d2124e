//! Applying dynamic broker configs (`config::dynamic`): at start (the layers laid over
//! server.properties), on AlterConfigs / IncrementalAlterConfigs of a broker entity, and
//! when cluster mode's Python side pushes what ZooKeeper holds.
//!
//! An alteration of this broker's listener security is checked by building every
//! listener's TLS and SASL settings with it before anything is stored: a keystore that
//! cannot be read, or whose certificate names the broker otherwise than the one in
//! service (unless `ssl.allow.dn.changes` / `ssl.allow.san.changes`), is refused naming the
//! key, and the listeners in service stay. Every refusal is INVALID_REQUEST, as Kafka
//! 4.1.1 answers a refused broker alteration.
//!
//! What else applies at once: connection limits, the topic defaults the `log.*` keys set
//! (`reapply_log_configs`), and the keys read at each use
//! (`dynamic::read_at_each_use`). The rest waits for the broker's next start, and says so.

use std::collections::BTreeMap;

use super::dynamic::{self, hide_value, DEFAULT_ENTITY};
use super::layers::DynamicLayers;
use super::live::{self, LiveConfig};
use super::BrokerConfig;
use crate::cluster::AdminOp;
use crate::errors::{codes, ApiError};
use crate::net::limits::ConnectionLimits;
use crate::state::BrokerState;

const LOGGER: &str = "kafkalite.server.DynamicBrokerConfig";
/// What Kafka logs a log-config change under.
const LOG_CONFIG_LOGGER: &str = "kafkalite.server.DynamicLogConfig";

/// Which entity a broker resource names: this broker (its id) or the cluster default ("").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entity {
    ThisBroker,
    Default,
}

pub fn entity(state: &BrokerState, name: &str) -> Result<Entity, ApiError> {
    let node = state.config.node_id;
    if name.is_empty() {
        return Ok(Entity::Default);
    }
    if name.trim().parse::<i32>() == Ok(node) {
        return Ok(Entity::ThisBroker);
    }
    if name.trim().parse::<i32>().is_err() {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            format!("Broker id must be an integer, but it is: {name}"),
        ));
    }
    Err(ApiError::new(
        codes::INVALID_REQUEST,
        format!("unexpected broker id, expected {node} or empty string, but received {name}"),
    ))
}

/// What an alteration does to the entity's set.
pub enum Change {
    /// AlterConfigs: the entity's whole set.
    Replace(BTreeMap<String, String>),
    /// IncrementalAlterConfigs: keys set and keys deleted.
    Incremental {
        set: BTreeMap<String, String>,
        delete: Vec<String>,
    },
}

/// Alter broker entity `name`.
pub fn alter(
    state: &BrokerState,
    name: &str,
    change: Change,
    validate_only: bool,
) -> Result<(), ApiError> {
    let target = entity(state, name)?;
    let per_broker = target == Entity::ThisBroker;
    let old = state.dynamic.layers();
    let current = match target {
        Entity::ThisBroker => &old.broker,
        Entity::Default => &old.default,
    };
    let (set, mut next) = match change {
        Change::Replace(set) => (set, BTreeMap::new()),
        Change::Incremental { set, delete } => {
            let mut next = current.clone();
            for key in &delete {
                next.remove(key);
            }
            (set, next)
        }
    };
    let mut touched: Vec<String> = current
        .keys()
        .filter(|k| !next.contains_key(*k))
        .cloned()
        .collect();
    for (key, value) in set {
        let stored = dynamic::check(&key, &value, per_broker)?;
        touched.push(key.clone());
        next.insert(key, stored);
    }
    let mut layers = old.clone();
    match target {
        Entity::ThisBroker => layers.broker = next.clone(),
        Entity::Default => layers.default = next.clone(),
    }
    // Every value, and what the layers make of the broker's settings and log defaults,
    // checked before anything is stored.
    let live = derive(state, &layers)?;
    // Build the listeners with the new values first: a bad keystore is refused here.
    let listeners = if touched.iter().any(|k| dynamic::applies_live(k)) {
        let config = effective(state, &live);
        let listeners = state
            .security
            .check_listeners(&config)
            .map_err(invalid_config)?;
        // A replaced keystore keeps the broker's names unless allowed (Kafka's rule).
        state
            .security
            .check_certificates(&listeners, &config)
            .map_err(|why| ApiError::new(codes::INVALID_REQUEST, why))?;
        Some(listeners)
    } else {
        None
    };
    // Connection limits are checked the same way, and applied once stored.
    let limits = if touched.iter().any(|k| dynamic::is_connection_limit(k)) {
        let config = effective(state, &live);
        ConnectionLimits::validate(&config).map_err(invalid_config)?;
        Some(config)
    } else {
        None
    };
    if validate_only {
        return Ok(());
    }
    if state.cluster.is_some() {
        let entity_name = match target {
            Entity::ThisBroker => state.config.node_id.to_string(),
            Entity::Default => DEFAULT_ENTITY.to_string(),
        };
        let args = serde_json::json!({"entity": entity_name, "configs": next});
        state.ask_controller(AdminOp::Controller {
            op: "alter_broker_configs".into(),
            args: args.to_string(),
        })?;
    }
    let logs_change = state.dynamic.live().log_defaults != live.log_defaults;
    state.dynamic.set(live).map_err(|e| {
        ApiError::new(
            codes::UNKNOWN_SERVER_ERROR,
            format!("cannot store the dynamic configs: {e}"),
        )
    })?;
    if let Some(listeners) = listeners {
        state.security.install_listeners(listeners);
        kafkalite_core::logging::info(
            LOGGER,
            "listener security reconfigured: new connections use the new settings",
        );
    }
    if let Some(config) = limits {
        reconfigure_limits(state, &config);
    }
    if logs_change {
        reapply_log_configs(state);
    }
    log_later(&touched);
    Ok(())
}

/// Cluster mode: make the layers what ZooKeeper holds (pushed by the Python side). If a
/// listener security setting changed, the listeners are rebuilt; a value that does not
/// work is logged by key and the listeners in service stay.
pub fn apply_pushed(state: &BrokerState, layers: DynamicLayers) {
    let old = state.dynamic.layers();
    if old == layers {
        return;
    }
    let changed = |test: fn(&str) -> bool| {
        let differs = |a: &BTreeMap<String, String>, b: &BTreeMap<String, String>| {
            a.iter()
                .filter(|(k, v)| b.get(*k) != Some(v))
                .chain(b.iter().filter(|(k, _)| !a.contains_key(*k)))
                .any(|(k, _)| test(k))
        };
        differs(&old.broker, &layers.broker) || differs(&old.default, &layers.default)
    };
    let derived = derive(state, &layers);
    if changed(dynamic::is_connection_limit) {
        match &derived {
            Ok(live) => reconfigure_limits(state, &effective(state, live)),
            Err(e) => kafkalite_core::logging::warn(LOGGER, &e.message),
        }
    }
    if changed(dynamic::applies_live) {
        let rebuilt = derived.clone().and_then(|live| {
            let config = effective(state, &live);
            let listeners = state
                .security
                .check_listeners(&config)
                .map_err(invalid_config)?;
            state
                .security
                .check_certificates(&listeners, &config)
                .map_err(|why| ApiError::new(codes::INVALID_REQUEST, why))?;
            Ok(listeners)
        });
        match rebuilt {
            Ok(listeners) => state.security.install_listeners(listeners),
            Err(e) => kafkalite_core::logging::warn(
                LOGGER,
                &format!(
                    "the dynamic configs in ZooKeeper do not work here, keeping the \
                     listeners in service: {}",
                    e.message
                ),
            ),
        }
    }
    let live = derived.unwrap_or_else(|e| {
        kafkalite_core::logging::warn(
            LOGGER,
            &format!(
                "the dynamic configs in ZooKeeper do not work here, keeping the broker's \
                 settings and log defaults: {}",
                e.message
            ),
        );
        let mut kept = (*state.dynamic.live()).clone();
        kept.layers = layers;
        kept
    });
    let logs_change = state.dynamic.live().log_defaults != live.log_defaults;
    // In memory only (cluster mode): cannot fail.
    let _ = state.dynamic.set(live);
    if logs_change {
        reapply_log_configs(state);
    }
}

/// Log the keys kafkalite takes up only at the broker's next start.
fn log_later(touched: &[String]) {
    let later = |k: &&String| {
        !dynamic::applies_live(k)
            && !dynamic::is_connection_limit(k)
            && !live::applies_to_logs(k)
            && !dynamic::read_at_each_use(k)
    };
    for key in touched.iter().filter(later) {
        kafkalite_core::logging::info(
            LOGGER,
            &format!(
                "{key} changed dynamically; kafkalite applies it at the broker's next start \
                 (live: listener security, connection limits, the log.* topic defaults, \
                 producer.id.expiration.ms and transaction.partition.verification.enable)"
            ),
        );
    }
}

/// Apply new connection limits; values that do not work are logged by key and the
/// limits in force stay.
fn reconfigure_limits(state: &BrokerState, config: &BrokerConfig) {
    match state.security.connections.reconfigure(config) {
        Ok(()) => kafkalite_core::logging::info(
            LOGGER,
            "connection limits reconfigured: the acceptors apply them from now on",
        ),
        Err(e) => kafkalite_core::logging::warn(
            LOGGER,
            &format!(
                "the dynamic connection limits do not work here, keeping those in force: {}",
                invalid_config(e).message
            ),
        ),
    }
}

/// What `layers` over server.properties make of the broker's settings; a value that does
/// not work is INVALID_REQUEST naming its key (never the value).
fn derive(state: &BrokerState, layers: &DynamicLayers) -> Result<LiveConfig, ApiError> {
    LiveConfig::derive(&state.dynamic.static_raw, layers).map_err(|e| {
        ApiError::new(
            codes::INVALID_REQUEST,
            hide_value(e.key, e.reason).to_string(),
        )
    })
}

/// The broker's config with the live settings, for building listeners and limits.
fn effective(state: &BrokerState, live: &LiveConfig) -> BrokerConfig {
    let mut config = state.config.clone();
    config.raw = live.layers.merged(&live.static_raw);
    config.settings = live.settings.clone();
    config
}

/// A listener build failure as INVALID_REQUEST naming the key (never the value).
fn invalid_config(e: anyhow::Error) -> ApiError {
    let message = match e.downcast_ref::<kafkalite_core::Error>() {
        Some(kafkalite_core::Error::InvalidConfig { key, reason, .. }) => {
            hide_value(key.clone(), reason.clone()).to_string()
        }
        _ => format!("{e:#}"),
    };
    ApiError::new(codes::INVALID_REQUEST, message)
}

/// Re-derive the log config of every hosted partition from the current defaults and its
/// topic's overrides; logs whose config is unchanged are left alone. Serialised with
/// topic alterations (the admin lock) so a topic's new overrides are never undone.
pub fn reapply_log_configs(state: &BrokerState) {
    state.under_admin_lock(|| reapply_locked(state));
}

fn reapply_locked(state: &BrokerState) {
    let mut changed = 0usize;
    for name in state.topic_names() {
        let Some(topic) = state.topic(&name) else {
            continue;
        };
        let overrides = topic.configs.read().expect("lock").clone();
        let config = match state.log_config(&overrides) {
            Ok(config) => config,
            Err(e) => {
                kafkalite_core::logging::warn(
                    LOG_CONFIG_LOGGER,
                    &format!("{name} keeps its log config: {}", e.message),
                );
                continue;
            }
        };
        for p in topic.hosted() {
            let mut log = p.log.lock().expect("lock");
            if *log.config() != config {
                log.set_config(config.clone());
                changed += 1;
            }
        }
    }
    if changed > 0 {
        kafkalite_core::logging::info(
            LOG_CONFIG_LOGGER,
            &format!("new broker log defaults applied to {changed} hosted partition(s)"),
        );
    }
}
