//! Altering a client-metrics subscription (AlterConfigs, IncrementalAlterConfigs): the
//! whole new set is checked (`config::client_metrics::check`), then stored in the data
//! dir on a single node, or through the controller side into ZooKeeper in cluster mode.

use std::collections::BTreeMap;

use super::client_metrics;
use crate::cluster::AdminOp;
use crate::errors::{codes, ApiError};
use crate::state::BrokerState;

/// Make `configs` subscription `name`'s whole set (empty: delete it).
pub fn alter(
    state: &BrokerState,
    name: &str,
    configs: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), ApiError> {
    client_metrics::check(name, &configs)?;
    if validate_only {
        return Ok(());
    }
    let store = &state.client_metrics;
    if store.is_local() {
        return store.set(name, configs).map_err(|e| {
            ApiError::new(
                codes::KAFKA_STORAGE_ERROR,
                format!("cannot store the client metrics configs: {e}"),
            )
        });
    }
    let args = serde_json::json!({"name": name, "configs": configs});
    state.ask_controller(AdminOp::Controller {
        op: "alter_client_metrics".into(),
        args: args.to_string(),
    })
}
