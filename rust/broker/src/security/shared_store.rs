//! Credentials, ACLs and dynamic broker configs in cluster mode, where ZooKeeper keeps
//! them as Kafka did (`/config/users/<user>`, `/kafka-acl/...`, `/config/brokers/...`).
//! A change a client sends any broker is handed to its Python side (`AdminOp::Controller`),
//! which writes ZooKeeper and its change notifications; every broker's Python side then
//! pushes the whole state back in (`apply`), so all brokers authenticate and authorize
//! alike. On a single node the stores keep their own files and nothing passes here.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::acl::{AclBinding, AclFilter};
use super::sasl::scram::{ScramCredential, ScramMechanism};
use crate::cluster::AdminOp;
use crate::config::dynamic_apply;
use crate::config::layers::DynamicLayers;
use crate::state::BrokerState;

/// What the Python side pushes: everything the security of a broker reads from ZooKeeper,
/// secrets already decrypted.
#[derive(Debug, Default, Deserialize)]
pub struct SharedSecurity {
    #[serde(default)]
    pub dynamic: DynamicLayers,
    /// user -> mechanism name -> Kafka's credential string.
    #[serde(default)]
    pub users: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default)]
    pub acls: Vec<AclBinding>,
}

/// Make this broker's credentials, ACLs and dynamic configs what ZooKeeper holds.
pub fn apply(state: &BrokerState, shared: SharedSecurity) {
    state.security.scram.replace_all(&shared.users);
    state.security.authorizer.replace_all(shared.acls);
    dynamic_apply::apply_pushed(state, shared.dynamic);
}

fn controller(state: &BrokerState, op: &str, args: &serde_json::Value) -> anyhow::Result<()> {
    state
        .ask_controller(AdminOp::Controller {
            op: op.into(),
            args: args.to_string(),
        })
        .map_err(|e| anyhow::anyhow!("{}", e.message))
}

/// Upsert and delete SCRAM credentials (already validated): in the data dir, or in
/// ZooKeeper. Whether each deletion found its entry.
pub fn alter_scram(
    state: &BrokerState,
    upserts: Vec<(String, ScramMechanism, ScramCredential)>,
    deletions: &[(String, ScramMechanism)],
) -> anyhow::Result<Vec<bool>> {
    let store = &state.security.scram;
    if store.is_local() {
        return store.alter(upserts, deletions);
    }
    let found = deletions
        .iter()
        .map(|(user, m)| store.get(user, *m).is_some())
        .collect();
    let upserts: Vec<_> = upserts
        .iter()
        .map(|(user, m, c)| (user, m.name(), c.to_kafka_string()))
        .collect();
    let deletions: Vec<_> = deletions.iter().map(|(user, m)| (user, m.name())).collect();
    let args = serde_json::json!({"upserts": upserts, "deletions": deletions});
    controller(state, "alter_scram_credentials", &args)?;
    Ok(found)
}

/// Store new ACLs (already validated).
pub fn create_acls(state: &BrokerState, bindings: &[AclBinding]) -> anyhow::Result<()> {
    let authorizer = &state.security.authorizer;
    if authorizer.is_local() || bindings.is_empty() {
        return authorizer.create(bindings);
    }
    controller(
        state,
        "create_acls",
        &serde_json::json!({ "acls": bindings }),
    )
}

/// Remove what each filter matches; what each removed.
pub fn delete_acls(
    state: &BrokerState,
    filters: &[AclFilter],
) -> anyhow::Result<Vec<Vec<AclBinding>>> {
    let authorizer = &state.security.authorizer;
    if authorizer.is_local() {
        return authorizer.delete(filters);
    }
    let removed: Vec<Vec<AclBinding>> = filters.iter().map(|f| authorizer.describe(f)).collect();
    let mut all: Vec<&AclBinding> = removed.iter().flatten().collect();
    all.dedup();
    if !all.is_empty() {
        controller(state, "delete_acls", &serde_json::json!({ "acls": all }))?;
    }
    Ok(removed)
}
