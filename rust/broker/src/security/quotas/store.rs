//! The client quotas themselves: entity -> key -> value. A single-node broker keeps them in
//! its data dir (`client-quotas.json`); in cluster mode ZooKeeper holds them (written by the
//! Python side, as Kafka kept `/config/users` and `/config/clients`) and the controller
//! side pushes the whole set in with `replace_all`.
//!
//! `matching` is Kafka's precedence (`ClientQuotaManager`): for a request from `user` with
//! `client`, the first of
//! `/config/users/<user>/clients/<client>`, `/config/users/<user>/clients/<default>`,
//! `/config/users/<user>`, `/config/users/<default>/clients/<client>`,
//! `/config/users/<default>/clients/<default>`, `/config/users/<default>`,
//! `/config/clients/<client>`, `/config/clients/<default>` that sets the key wins.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use serde::{Deserialize, Serialize};

use super::entity::{Changes, QuotaEntity, CLIENT_ID, USER};

const FILE_NAME: &str = "client-quotas.json";

pub type Quotas = BTreeMap<QuotaEntity, BTreeMap<String, f64>>;

/// One entity's quotas as stored (and as the controller side pushes them).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StoredEntity {
    /// (entity type, name or null for `<default>`).
    pub entity: Vec<(String, Option<String>)>,
    pub quotas: BTreeMap<String, f64>,
}

/// The sensor a request counts against: Kafka's metric tags (user, client-id), of which
/// the levels a quota does not name are empty, so e.g. a user quota is shared by every
/// client id of that user.
#[derive(Clone, Debug, PartialEq)]
pub struct Matched {
    pub user_tag: String,
    pub client_tag: String,
    pub limit: f64,
}

#[derive(Default)]
struct Inner {
    quotas: Quotas,
    /// Keys some entity sets: a key nobody sets costs a request no lookup.
    keys: BTreeSet<String>,
}

pub struct QuotaStore {
    /// `None` in cluster mode (ZooKeeper holds them).
    path: Option<PathBuf>,
    inner: RwLock<Inner>,
}

fn entity(pairs: &[(&str, Option<&str>)]) -> QuotaEntity {
    pairs
        .iter()
        .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
        .collect()
}

impl QuotaStore {
    /// The store of a single node, kept in `dir`.
    pub fn open(dir: &Path) -> anyhow::Result<QuotaStore> {
        let path = dir.join(FILE_NAME);
        let stored: Vec<StoredEntity> = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(anyhow::anyhow!("{}: {e}", path.display())),
        };
        let store = QuotaStore {
            path: Some(path),
            inner: RwLock::default(),
        };
        store.set_all(from_stored(stored));
        Ok(store)
    }

    /// An empty store filled by the controller side (cluster mode).
    #[must_use]
    pub fn pushed() -> QuotaStore {
        QuotaStore {
            path: None,
            inner: RwLock::default(),
        }
    }

    #[must_use]
    pub fn is_local(&self) -> bool {
        self.path.is_some()
    }

    #[must_use]
    pub fn all(&self) -> Quotas {
        self.read().quotas.clone()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set_all(&self, quotas: Quotas) {
        let keys = quotas.values().flat_map(|q| q.keys().cloned()).collect();
        let mut inner = self
            .inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *inner = Inner { quotas, keys };
    }

    /// Replace every quota (cluster mode: what ZooKeeper holds).
    pub fn replace_all(&self, stored: Vec<StoredEntity>) {
        self.set_all(from_stored(stored));
    }

    /// Apply checked changes (`None` removes the key) and write the file atomically.
    pub fn alter(&self, changes: &[(QuotaEntity, Changes)]) -> anyhow::Result<()> {
        let mut quotas = self.all();
        for (entity, ops) in changes {
            let values = quotas.entry(entity.clone()).or_default();
            for (key, value) in ops {
                match value {
                    Some(v) => {
                        values.insert(key.clone(), *v);
                    }
                    None => {
                        values.remove(key);
                    }
                }
            }
            if values.is_empty() {
                quotas.remove(entity);
            }
        }
        if let Some(path) = &self.path {
            crate::cluster::file_store::write_atomically(
                path,
                &serde_json::to_vec_pretty(&to_stored(&quotas))?,
            )?;
        }
        self.set_all(quotas);
        Ok(())
    }

    /// The `connection_creation_rate` of connections from `ip`: its own, else the
    /// default ip entity's (KIP-612).
    #[must_use]
    pub fn ip_connection_rate(&self, ip: &str) -> Option<f64> {
        let inner = self.read();
        if !inner.keys.contains(super::entity::CONNECTION_CREATION_RATE) {
            return None;
        }
        [Some(ip), None].into_iter().find_map(|name| {
            let e = entity(&[(super::entity::IP, name)]);
            inner
                .quotas
                .get(&e)?
                .get(super::entity::CONNECTION_CREATION_RATE)
                .copied()
        })
    }

    /// The quota on `key` that applies to `user` with `client`, by Kafka's precedence.
    #[must_use]
    pub fn matching(&self, key: &str, user: &str, client: &str) -> Option<Matched> {
        let inner = self.read();
        if !inner.keys.contains(key) {
            return None;
        }
        let (u, c) = (Some(user), Some(client));
        let levels: [(QuotaEntity, &str, &str); 8] = [
            (entity(&[(USER, u), (CLIENT_ID, c)]), user, client),
            (entity(&[(USER, u), (CLIENT_ID, None)]), user, client),
            (entity(&[(USER, u)]), user, ""),
            (entity(&[(USER, None), (CLIENT_ID, c)]), user, client),
            (entity(&[(USER, None), (CLIENT_ID, None)]), user, client),
            (entity(&[(USER, None)]), user, ""),
            (entity(&[(CLIENT_ID, c)]), "", client),
            (entity(&[(CLIENT_ID, None)]), "", client),
        ];
        levels.into_iter().find_map(|(e, user_tag, client_tag)| {
            let limit = *inner.quotas.get(&e)?.get(key)?;
            // An empty user and client id name no sensor (Kafka: no quota applies).
            (!user_tag.is_empty() || !client_tag.is_empty()).then(|| Matched {
                user_tag: user_tag.to_string(),
                client_tag: client_tag.to_string(),
                limit,
            })
        })
    }
}

fn from_stored(stored: Vec<StoredEntity>) -> Quotas {
    stored
        .into_iter()
        .filter(|s| !s.quotas.is_empty())
        .map(|s| (s.entity.into_iter().collect(), s.quotas))
        .collect()
}

#[must_use]
pub fn to_stored(quotas: &Quotas) -> Vec<StoredEntity> {
    quotas
        .iter()
        .map(|(e, q)| StoredEntity {
            entity: e.iter().map(|(t, n)| (t.clone(), n.clone())).collect(),
            quotas: q.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(store: &QuotaStore, pairs: &[(&str, Option<&str>)], value: f64) {
        store
            .alter(&[(
                entity(pairs),
                vec![("producer_byte_rate".into(), Some(value))],
            )])
            .unwrap();
    }

    fn limit(store: &QuotaStore, user: &str, client: &str) -> Option<(String, String, f64)> {
        store
            .matching("producer_byte_rate", user, client)
            .map(|m| (m.user_tag, m.client_tag, m.limit))
    }

    #[test]
    fn precedence_is_kafkas() {
        let dir = tempfile::tempdir().unwrap();
        let store = QuotaStore::open(dir.path()).unwrap();
        assert_eq!(limit(&store, "alice", "app"), None);
        set(&store, &[(CLIENT_ID, None)], 8.0);
        assert_eq!(
            limit(&store, "alice", "app"),
            Some(("".into(), "app".into(), 8.0))
        );
        assert_eq!(
            limit(&store, "alice", ""),
            None,
            "no client id, no client quota"
        );
        set(&store, &[(CLIENT_ID, Some("app"))], 7.0);
        assert_eq!(limit(&store, "alice", "app").unwrap().2, 7.0);
        set(&store, &[(USER, None)], 6.0);
        assert_eq!(
            limit(&store, "alice", "app"),
            Some(("alice".into(), "".into(), 6.0))
        );
        set(&store, &[(USER, None), (CLIENT_ID, None)], 5.0);
        assert_eq!(limit(&store, "alice", "app").unwrap().2, 5.0);
        set(&store, &[(USER, None), (CLIENT_ID, Some("app"))], 4.0);
        assert_eq!(limit(&store, "alice", "app").unwrap().2, 4.0);
        set(&store, &[(USER, Some("alice"))], 3.0);
        assert_eq!(
            limit(&store, "alice", "app"),
            Some(("alice".into(), "".into(), 3.0))
        );
        set(&store, &[(USER, Some("alice")), (CLIENT_ID, None)], 2.0);
        assert_eq!(limit(&store, "alice", "app").unwrap().2, 2.0);
        set(
            &store,
            &[(USER, Some("alice")), (CLIENT_ID, Some("app"))],
            1.0,
        );
        assert_eq!(
            limit(&store, "alice", "app"),
            Some(("alice".into(), "app".into(), 1.0))
        );
        assert_eq!(limit(&store, "bob", "other").unwrap().2, 5.0);
        assert_eq!(store.matching("consumer_byte_rate", "alice", "app"), None);
        // Survives a reopen; removing the last key removes the entity.
        let reopened = QuotaStore::open(dir.path()).unwrap();
        assert_eq!(reopened.all().len(), 8);
        reopened
            .alter(&[(
                entity(&[(CLIENT_ID, None)]),
                vec![("producer_byte_rate".into(), None)],
            )])
            .unwrap();
        assert_eq!(QuotaStore::open(dir.path()).unwrap().all().len(), 7);
    }
}
