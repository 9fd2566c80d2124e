//! The ACL authorizer (Kafka's `AclAuthorizer` / `StandardAuthorizer` rules): super users
//! may do anything; a resource no ACL covers is open only with
//! `allow.everyone.if.no.acl.found`; a matching DENY wins over any ALLOW; READ, WRITE,
//! DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS.
//! A single node keeps its ACLs in the data dir (`acls.json`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use super::acl::{op, permission, AclBinding, AclFilter, WILDCARD};
use crate::net::KafkaPrincipal;

/// The class names Kafka's brokers are configured with; both mean "ACLs apply".
pub const ACCEPTED_CLASSES: [&str; 2] = [
    "kafka.security.authorizer.AclAuthorizer",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
];

const FILE_NAME: &str = "acls.json";

pub struct Authorizer {
    /// `authorizer.class.name` set: ACLs are enforced.
    pub enabled: bool,
    super_users: HashSet<String>,
    allow_if_no_acl: bool,
    /// `None` in cluster mode: ZooKeeper keeps the ACLs (`replace_all`).
    path: Option<PathBuf>,
    acls: RwLock<Vec<AclBinding>>,
}

fn poisoned<T>(e: std::sync::PoisonError<T>) -> T {
    e.into_inner()
}

impl Authorizer {
    /// From `authorizer.class.name`, `super.users` ("User:a;User:b") and
    /// `allow.everyone.if.no.acl.found`; ACLs loaded from `dir`.
    pub fn open(
        class_name: &str,
        super_users: &str,
        allow_if_no_acl: bool,
        dir: Option<&Path>,
    ) -> anyhow::Result<Authorizer> {
        let class_name = class_name.trim();
        let enabled = !class_name.is_empty();
        if enabled && !ACCEPTED_CLASSES.contains(&class_name) {
            anyhow::bail!(
                "invalid config authorizer.class.name={class_name}: kafkalite has its own ACL \
                 authorizer; use {} or {}",
                ACCEPTED_CLASSES[0],
                ACCEPTED_CLASSES[1]
            );
        }
        let super_users = super_users
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let path = dir.map(|d| d.join(FILE_NAME));
        let acls = match path.as_ref().map(std::fs::read) {
            None => Vec::new(),
            Some(Ok(bytes)) => serde_json::from_slice(&bytes)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.as_ref().expect("read").display()))?,
            Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Some(Err(e)) => {
                return Err(anyhow::anyhow!(
                    "{}: {e}",
                    path.as_ref().expect("read").display()
                ))
            }
        };
        Ok(Authorizer {
            enabled,
            super_users,
            allow_if_no_acl,
            path,
            acls: RwLock::new(acls),
        })
    }

    /// Whether `principal` connecting from `host` may do `operation` on the resource.
    #[must_use]
    pub fn authorize(
        &self,
        principal: &KafkaPrincipal,
        host: &str,
        operation: i8,
        resource_type: i8,
        name: &str,
    ) -> bool {
        if !self.enabled {
            return true;
        }
        let who = principal.to_string();
        if self.super_users.contains(&who) {
            return true;
        }
        let acls = self.acls.read().unwrap_or_else(poisoned);
        let covering: Vec<&AclBinding> = acls
            .iter()
            .filter(|b| b.covers(resource_type, name))
            .collect();
        if covering.is_empty() {
            return self.allow_if_no_acl;
        }
        let wildcard_principal = format!("{}:{WILDCARD}", principal.principal_type);
        let applies = |b: &&&AclBinding| {
            (b.principal == who || b.principal == wildcard_principal)
                && (b.host == host || b.host == WILDCARD)
        };
        let denied = covering.iter().filter(applies).any(|b| {
            b.permission == permission::DENY && (b.operation == operation || b.operation == op::ALL)
        });
        if denied {
            return false;
        }
        let implied: &[i8] = match operation {
            op::DESCRIBE => &[op::DESCRIBE, op::READ, op::WRITE, op::DELETE, op::ALTER],
            op::DESCRIBE_CONFIGS => &[op::DESCRIBE_CONFIGS, op::ALTER_CONFIGS],
            _ => std::slice::from_ref(&operation),
        };
        covering.iter().filter(applies).any(|b| {
            b.permission == permission::ALLOW
                && (b.operation == op::ALL || implied.contains(&b.operation))
        })
    }

    /// Whether the principal may do `operation` on some resource of the type (Kafka's
    /// `authorizeByResourceType`, used for idempotent producers since KIP-679): an
    /// applicable ALLOW exists and no applicable DENY on the literal wildcard cancels it.
    #[must_use]
    pub fn may_on_some(
        &self,
        principal: &KafkaPrincipal,
        host: &str,
        operation: i8,
        resource_type: i8,
    ) -> bool {
        if !self.enabled || self.super_users.contains(&principal.to_string()) {
            return true;
        }
        let who = principal.to_string();
        let wildcard_principal = format!("{}:{WILDCARD}", principal.principal_type);
        let acls = self.acls.read().unwrap_or_else(poisoned);
        let of_type: Vec<&AclBinding> = acls
            .iter()
            .filter(|b| b.resource_type == resource_type)
            .collect();
        if of_type.is_empty() {
            return self.allow_if_no_acl;
        }
        let applies = |b: &&&AclBinding| {
            (b.principal == who || b.principal == wildcard_principal)
                && (b.host == host || b.host == WILDCARD)
                && (b.operation == operation || b.operation == op::ALL)
        };
        let denied_everywhere = of_type.iter().filter(applies).any(|b| {
            b.permission == permission::DENY
                && b.resource_name == WILDCARD
                && b.pattern_type == super::acl::pattern::LITERAL
        });
        !denied_everywhere
            && of_type
                .iter()
                .filter(applies)
                .any(|b| b.permission == permission::ALLOW)
    }

    #[must_use]
    pub fn describe(&self, filter: &AclFilter) -> Vec<AclBinding> {
        let acls = self.acls.read().unwrap_or_else(poisoned);
        acls.iter().filter(|b| filter.matches(b)).cloned().collect()
    }

    /// Add bindings (already validated); existing ones are kept once.
    pub fn create(&self, bindings: &[AclBinding]) -> anyhow::Result<()> {
        let mut acls = self.acls.write().unwrap_or_else(poisoned);
        for b in bindings {
            if !acls.contains(b) {
                acls.push(b.clone());
            }
        }
        self.save(&acls)
    }

    /// Remove every binding each filter matches; what each removed.
    pub fn delete(&self, filters: &[AclFilter]) -> anyhow::Result<Vec<Vec<AclBinding>>> {
        let mut acls = self.acls.write().unwrap_or_else(poisoned);
        let removed: Vec<Vec<AclBinding>> = filters
            .iter()
            .map(|f| acls.iter().filter(|b| f.matches(b)).cloned().collect())
            .collect();
        acls.retain(|b| !filters.iter().any(|f| f.matches(b)));
        self.save(&acls)?;
        Ok(removed)
    }

    /// Whether changes are stored here (single node) rather than in ZooKeeper.
    #[must_use]
    pub fn is_local(&self) -> bool {
        self.path.is_some()
    }

    /// Cluster mode: make the ACLs what ZooKeeper holds.
    pub fn replace_all(&self, bindings: Vec<AclBinding>) {
        *self.acls.write().unwrap_or_else(poisoned) = bindings;
    }

    fn save(&self, acls: &[AclBinding]) -> anyhow::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        crate::cluster::file_store::write_atomically(path, &serde_json::to_vec_pretty(acls)?)?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "authorizer_tests.rs"]
mod tests;
