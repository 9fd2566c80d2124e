//! [`SinkError`]: why a write failed, worded for the Spark task's exception (the Java side
//! throws it with this message), with the broker's Kafka error code when it refused.

use kafkalite_client as client;
use kafkalite_core::error_codes;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkError {
    pub message: String,
    /// The Kafka error code a broker answered with, when that is the failure.
    pub code: Option<i16>,
}

impl SinkError {
    #[must_use]
    pub fn new(message: impl Into<String>) -> SinkError {
        SinkError {
            message: message.into(),
            code: None,
        }
    }

    /// A broker's refusal: the message names the code and Kafka's name for it.
    #[must_use]
    pub fn refused(what: &str, code: i16) -> SinkError {
        let name = error_codes::name(code).unwrap_or("an error code Kafka 4.1 does not list");
        SinkError {
            message: format!("{what} failed with error code {code} ({name})"),
            code: Some(code),
        }
    }
}

impl std::fmt::Display for SinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<client::Error> for SinkError {
    fn from(e: client::Error) -> SinkError {
        match e {
            client::Error::Broker { code, ref what, .. } => SinkError::refused(what, code),
            other => SinkError::new(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_code_and_its_name() {
        let e = SinkError::refused("producing 3 records to t-0", 10);
        assert_eq!(
            e.message,
            "producing 3 records to t-0 failed with error code 10 (MESSAGE_TOO_LARGE)"
        );
        assert_eq!(e.code, Some(10));
    }
}
