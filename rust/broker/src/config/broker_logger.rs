//! Kafka's BROKER_LOGGER config resource (type 8, named by broker id): every logger with
//! its level, read by DescribeConfigs and set by IncrementalAlterConfigs, so
//! `kafka-configs --entity-type broker-loggers` reads and changes log levels at run time.
//! SET gives a logger (and its descendants) a level, `root` sets the threshold every other
//! logger inherits; DELETE makes a logger inherit again (the root's cannot be removed).
//! Levels live in this process only, as log4j's do in Kafka's.

use kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource;
use kafkalite_core::logging;

use crate::errors::{codes, ApiError};
use crate::state::BrokerState;

pub const RESOURCE_BROKER_LOGGER: i8 = 8;
/// Kafka's `ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG`.
pub const SOURCE: i8 = 6;

const SET: i8 = 0;
const DELETE: i8 = 1;

fn check_broker(state: &BrokerState, name: &str) -> Result<(), ApiError> {
    let ours = state.config.node_id.to_string();
    if name == ours {
        Ok(())
    } else {
        Err(ApiError::new(
            codes::INVALID_REQUEST,
            format!("Unexpected broker id, expected {ours} but received {name}"),
        ))
    }
}

/// (logger, level) of every logger this broker knows.
pub fn describe(state: &BrokerState, name: &str) -> Result<Vec<(String, String)>, ApiError> {
    check_broker(state, name)?;
    Ok(logging::loggers()
        .into_iter()
        .map(|(logger, level)| (logger, level.to_string()))
        .collect())
}

/// Apply `r`'s operations (all checked first: one bad entry changes nothing).
pub fn alter(
    state: &BrokerState,
    r: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), ApiError> {
    check_broker(state, &r.resource_name)?;
    let invalid = |m: String| ApiError::new(codes::INVALID_CONFIG, m);
    let mut changes = Vec::with_capacity(r.configs.len());
    for c in &r.configs {
        let logger = c.name.to_string();
        match c.config_operation {
            SET => {
                let level = c
                    .value
                    .as_deref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                if !logging::LEVEL_NAMES.contains(&level.to_ascii_uppercase().as_str()) {
                    return Err(invalid(format!(
                        "Cannot set the log level of {logger} to {level} as it is not a supported log level. Valid log levels are {}",
                        logging::LEVEL_NAMES.join(", ")
                    )));
                }
                changes.push((logger, Some(level)));
            }
            DELETE if logger == logging::ROOT => {
                return Err(invalid(
                    "Removing the log level of the root logger is not allowed".into(),
                ))
            }
            DELETE => changes.push((logger, None)),
            op => {
                return Err(ApiError::new(
                    codes::INVALID_REQUEST,
                    format!("{op} operation is not allowed for the BROKER_LOGGER resource"),
                ))
            }
        }
    }
    if validate_only {
        return Ok(());
    }
    for (logger, level) in changes {
        let done = match level {
            Some(level) => logging::set_logger_level(&logger, &level),
            None => logging::unset_logger_level(&logger),
        };
        done.map_err(invalid)?;
    }
    Ok(())
}
