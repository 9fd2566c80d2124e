//! The broker's failure type: a Kafka error code (named in the core's one table,
//! re-exported here as `codes`) and a message for the client.

pub use kafkalite_core::error_codes as codes;

/// A failure with the Kafka error code to return and a message for the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (error code {code})")]
pub struct ApiError {
    pub code: i16,
    pub message: String,
}

impl ApiError {
    pub fn new(code: i16, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }
}

impl From<kafkalite_core::Error> for ApiError {
    fn from(e: kafkalite_core::Error) -> Self {
        ApiError {
            code: e.kafka_code(),
            message: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::ResponseError;

    use super::*;

    /// Kafka's name from the codec crate's variant ("UnknownTopicOrPartition").
    fn screaming_snake(camel: &str) -> String {
        let mut out = String::new();
        for (i, c) in camel.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_uppercase());
        }
        out
    }

    #[test]
    fn every_code_agrees_with_the_codec_crate() {
        for &(name, code) in codes::ALL {
            match ResponseError::try_from_code(code) {
                None => assert_eq!((name, code), ("NONE", 0)),
                Some(e) => assert_eq!(screaming_snake(&e.to_string()), name, "code {code}"),
            }
        }
        assert!(codes::ALL.len() > 100);
    }

    #[test]
    fn core_errors_carry_their_codes() {
        let e = ApiError::from(kafkalite_core::Error::OffsetOutOfRange {
            offset: 9,
            log_start: 0,
            log_end: 3,
        });
        assert_eq!(e.code, codes::OFFSET_OUT_OF_RANGE);
        assert_eq!(
            ApiError::from(kafkalite_core::Error::Closed).code,
            codes::KAFKA_STORAGE_ERROR
        );
    }
}
