//! One config schema for the whole broker: every broker key and every topic key once, with
//! Kafka's type, default, validator, dynamic-update class, sensitivity and synonyms. The
//! broker's `server.properties` validation, topic-config validation, DescribeConfigs, the
//! storage layer's `LogConfig` and the Python binding all read it; no other table of keys
//! exists.

mod broker_keys;
mod error;
mod group_rules;
mod keys;
pub mod schema;
mod server_rules;
mod settings;
#[cfg(test)]
mod tests;
mod topic_keys;
mod value;

pub use broker_keys::{is_internal, BROKER_KEYS, GROUP_PROTOCOLS, RACK_AWARE_REPLICA_SELECTOR};
pub use error::ConfigError;
pub use group_rules::{assignor_short_name, CONSUMER_ASSIGNORS};
pub use keys::{
    broker_key, broker_synonyms, check_broker, default_value, is_sensitive, to_topic_unit,
    topic_key,
};
pub use schema::{Check, ConfigKey, Default, TopicSynonym, Type, Update};
pub use settings::BrokerSettings;
pub use topic_keys::{CLEANUP_POLICIES, TIMESTAMP_TYPES, TOPIC_KEYS};
pub use value::{normalize, Reason};
