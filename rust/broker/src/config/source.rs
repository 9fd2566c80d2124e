//! DescribeConfigs `config_source` values.

pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
pub const STATIC_BROKER_CONFIG: i8 = 4;
pub const DEFAULT_CONFIG: i8 = 5;
