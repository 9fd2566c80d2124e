//! The error of a bad config value.

/// A bad value for a known key, named with the key and the value as given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Invalid value {value} for configuration {key}: {reason}")]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub reason: String,
}

impl ConfigError {
    pub fn new(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            key: key.into(),
            value: value.into(),
            reason: reason.into(),
        }
    }
}

impl From<ConfigError> for crate::Error {
    fn from(e: ConfigError) -> Self {
        crate::Error::InvalidConfig {
            key: e.key,
            value: e.value,
            reason: e.reason,
        }
    }
}
