//! Altering a group's configs (AlterConfigs, IncrementalAlterConfigs on a GROUP
//! resource), once checked: stored in the data dir on a single node, or through the
//! controller side into ZooKeeper in cluster mode, so every broker, and the coordinator
//! the group moves to, knows them.

use std::collections::BTreeMap;

use crate::cluster::AdminOp;
use crate::errors::ApiError;
use crate::state::BrokerState;

/// Make `overrides` (already validated) group `name`'s whole set (empty: delete it).
pub fn alter(
    state: &BrokerState,
    name: &str,
    overrides: BTreeMap<String, String>,
) -> Result<(), ApiError> {
    let store = &state.group_configs;
    if store.is_local() {
        return store.set(name, overrides);
    }
    let args = serde_json::json!({"name": name, "configs": overrides});
    state.ask_controller(AdminOp::Controller {
        op: "alter_group_configs".into(),
        args: args.to_string(),
    })
}
