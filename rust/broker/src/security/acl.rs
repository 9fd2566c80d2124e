//! Kafka's ACL model: a binding is a resource pattern (type, name, literal or prefixed)
//! and an entry (principal, host, operation, allow/deny). Codes are Kafka's wire codes.

use serde::{Deserialize, Serialize};

pub mod resource {
    pub const ANY: i8 = 1;
    pub const TOPIC: i8 = 2;
    pub const GROUP: i8 = 3;
    pub const CLUSTER: i8 = 4;
    pub const TRANSACTIONAL_ID: i8 = 5;
    pub const DELEGATION_TOKEN: i8 = 6;
    pub const USER: i8 = 7;
}

pub mod pattern {
    pub const ANY: i8 = 1;
    pub const MATCH: i8 = 2;
    pub const LITERAL: i8 = 3;
    pub const PREFIXED: i8 = 4;
}

pub mod op {
    pub const ANY: i8 = 1;
    pub const ALL: i8 = 2;
    pub const READ: i8 = 3;
    pub const WRITE: i8 = 4;
    pub const CREATE: i8 = 5;
    pub const DELETE: i8 = 6;
    pub const ALTER: i8 = 7;
    pub const DESCRIBE: i8 = 8;
    pub const CLUSTER_ACTION: i8 = 9;
    pub const DESCRIBE_CONFIGS: i8 = 10;
    pub const ALTER_CONFIGS: i8 = 11;
    pub const IDEMPOTENT_WRITE: i8 = 12;
    pub const CREATE_TOKENS: i8 = 13;
    pub const DESCRIBE_TOKENS: i8 = 14;
}

pub mod permission {
    pub const ANY: i8 = 1;
    pub const DENY: i8 = 2;
    pub const ALLOW: i8 = 3;
}

/// The one cluster resource's name.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// A literal name or principal or host matching every one.
pub const WILDCARD: &str = "*";

/// The operations each resource type has (Kafka's `AclEntry.supportedOperations`), for
/// validation and for `authorized_operations`.
#[must_use]
pub fn operations_of(resource_type: i8) -> &'static [i8] {
    use op::*;
    match resource_type {
        resource::TOPIC => &[
            READ,
            WRITE,
            CREATE,
            DESCRIBE,
            DELETE,
            ALTER,
            DESCRIBE_CONFIGS,
            ALTER_CONFIGS,
        ],
        // Kafka 4 (KIP-848 group configs) added DESCRIBE_CONFIGS and ALTER_CONFIGS.
        resource::GROUP => &[READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS],
        resource::CLUSTER => &[
            CREATE,
            CLUSTER_ACTION,
            DESCRIBE_CONFIGS,
            ALTER_CONFIGS,
            IDEMPOTENT_WRITE,
            ALTER,
            DESCRIBE,
        ],
        resource::TRANSACTIONAL_ID => &[DESCRIBE, WRITE],
        resource::DELEGATION_TOKEN => &[DESCRIBE],
        resource::USER => &[CREATE_TOKENS, DESCRIBE_TOKENS],
        _ => &[],
    }
}

/// One ACL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AclBinding {
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission: i8,
}

impl AclBinding {
    /// Why this binding cannot be stored, if it cannot (Kafka's checks on CreateAcls).
    #[must_use]
    pub fn invalid(&self) -> Option<String> {
        if !matches!(
            self.resource_type,
            resource::TOPIC
                | resource::GROUP
                | resource::CLUSTER
                | resource::TRANSACTIONAL_ID
                | resource::DELEGATION_TOKEN
                | resource::USER
        ) {
            return Some(format!("Invalid resource type {}", self.resource_type));
        }
        if !matches!(self.pattern_type, pattern::LITERAL | pattern::PREFIXED) {
            return Some(format!("Invalid pattern type {}", self.pattern_type));
        }
        if self.resource_name.is_empty() {
            return Some("Resource name must not be empty".into());
        }
        if self.resource_type == resource::CLUSTER
            && (self.resource_name != CLUSTER_NAME || self.pattern_type != pattern::LITERAL)
        {
            return Some(format!(
                "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
            ));
        }
        if self.pattern_type == pattern::PREFIXED && self.resource_name == WILDCARD {
            return Some("A prefixed pattern cannot be the wildcard".into());
        }
        match self.principal.split_once(':') {
            Some((t, n)) if !t.is_empty() && !n.is_empty() => {}
            _ => {
                return Some(format!(
                    "Could not parse principal from `{}` (no colon is present separating the \
                     principal type from the principal name)",
                    self.principal
                ))
            }
        }
        if self.host.is_empty() {
            return Some("Host must not be empty (use * for any host)".into());
        }
        if self.operation != op::ALL && !operations_of(self.resource_type).contains(&self.operation)
        {
            return Some(format!(
                "Operation {} is not valid for resource type {}",
                self.operation, self.resource_type
            ));
        }
        if !matches!(self.permission, permission::ALLOW | permission::DENY) {
            return Some(format!("Invalid permission type {}", self.permission));
        }
        None
    }

    /// Whether this binding's pattern covers the resource `name` of `resource_type`.
    #[must_use]
    pub fn covers(&self, resource_type: i8, name: &str) -> bool {
        self.resource_type == resource_type
            && match self.pattern_type {
                pattern::LITERAL => self.resource_name == name || self.resource_name == WILDCARD,
                pattern::PREFIXED => name.starts_with(&self.resource_name),
                _ => false,
            }
    }
}

/// A DescribeAcls / DeleteAcls filter: `None` and the ANY codes match everything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclFilter {
    pub resource_type: i8,
    pub resource_name: Option<String>,
    pub pattern_type: i8,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: i8,
    pub permission: i8,
}

impl AclFilter {
    /// Kafka's rules: resource type ANY matches all; pattern ANY matches any pattern with
    /// that exact name; MATCH matches the literal name, the literal wildcard, and every
    /// prefix of the name.
    #[must_use]
    pub fn matches(&self, b: &AclBinding) -> bool {
        let type_ok = self.resource_type == resource::ANY || self.resource_type == b.resource_type;
        let pattern_ok = match (self.pattern_type, &self.resource_name) {
            (pattern::MATCH, Some(name)) => match b.pattern_type {
                pattern::LITERAL => &b.resource_name == name || b.resource_name == WILDCARD,
                pattern::PREFIXED => name.starts_with(&b.resource_name),
                _ => false,
            },
            (pattern::MATCH | pattern::ANY, None) => true,
            (pattern::ANY, Some(name)) => &b.resource_name == name,
            (p, name) => p == b.pattern_type && name.as_ref().is_none_or(|n| n == &b.resource_name),
        };
        type_ok
            && pattern_ok
            && self.principal.as_ref().is_none_or(|p| p == &b.principal)
            && self.host.as_ref().is_none_or(|h| h == &b.host)
            && (self.operation == op::ANY || self.operation == b.operation)
            && (self.permission == permission::ANY || self.permission == b.permission)
    }

    /// Why the filter is unusable (unknown codes), if it is.
    #[must_use]
    pub fn invalid(&self) -> Option<String> {
        (self.resource_type < resource::ANY
            || self.pattern_type < pattern::ANY
            || self.operation < op::ANY
            || self.permission < permission::ANY)
            .then(|| "The filter has an UNKNOWN element".to_string())
    }
}

#[cfg(test)]
#[path = "acl_tests.rs"]
mod tests;
