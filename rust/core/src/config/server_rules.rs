//! Rules Kafka 4.1's `KafkaConfig` checks across keys (or on a list's items) when the
//! broker starts, with its words; the first broken one refuses the config.

use super::error::ConfigError;

/// `value(key)` reads an integer key, `list(key)` a list key's items, as the settings hold
/// them (given, or the schema default).
pub fn check(
    value: impl Fn(&str) -> i64,
    list: impl Fn(&str) -> Vec<String>,
) -> Result<(), ConfigError> {
    // A bound below one request would stall the first request larger than the bound.
    let (queued, request_max) = (
        value("queued.max.request.bytes"),
        value("socket.request.max.bytes"),
    );
    if queued > 0 && queued < request_max {
        return Err(ConfigError::new(
            "queued.max.request.bytes",
            &queued.to_string(),
            "queued.max.request.bytes must be larger or equal to socket.request.max.bytes",
        ));
    }
    // The delayed answer to a failed authentication must go out before the connection
    // counts as idle.
    let (delay, idle) = (
        value("connection.failed.authentication.delay.ms"),
        value("connections.max.idle.ms"),
    );
    if idle >= 0 && delay >= idle {
        return Err(ConfigError::new(
            "connection.failed.authentication.delay.ms",
            &delay.to_string(),
            format!(
                "connection.failed.authentication.delay.ms={delay} should always be less than \
                 connections.max.idle.ms={idle} to prevent failed authentication responses \
                 from timing out"
            ),
        ));
    }
    let protocols = list("group.coordinator.rebalance.protocols");
    if !protocols.iter().any(|p| p == "classic") {
        return Err(ConfigError::new(
            "group.coordinator.rebalance.protocols",
            &protocols.join(","),
            "Disabling the 'classic' protocol is not supported.",
        ));
    }
    Ok(())
}
