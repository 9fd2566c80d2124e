//! The client-metrics subscriptions themselves: name -> key -> value, checked by
//! `config::client_metrics`. A single node keeps them in its data dir
//! (`client-metrics.json`); in cluster mode ZooKeeper holds them
//! (`/config/client-metrics/<name>`, written by the Python side as Kafka's ZooKeeper mode
//! did) and the controller side pushes the whole set in with `replace_all`. A subscription
//! whose last key is deleted is gone, as in Kafka.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

pub type Subscriptions = BTreeMap<String, BTreeMap<String, String>>;

const FILE_NAME: &str = "client-metrics.json";

pub struct ClientMetricsStore {
    /// `None` in cluster mode (ZooKeeper holds them).
    path: Option<PathBuf>,
    subscriptions: RwLock<Subscriptions>,
    /// Bumped on every change, so telemetry can tell a client its subscription moved.
    generation: AtomicU64,
}

impl ClientMetricsStore {
    /// The store of a single node, kept in `dir`.
    pub fn open(dir: &Path) -> anyhow::Result<ClientMetricsStore> {
        let path = dir.join(FILE_NAME);
        let subscriptions: Subscriptions = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Subscriptions::new(),
            Err(e) => return Err(anyhow::anyhow!("{}: {e}", path.display())),
        };
        Ok(ClientMetricsStore {
            path: Some(path),
            subscriptions: RwLock::new(subscriptions),
            generation: AtomicU64::new(0),
        })
    }

    /// An empty store filled by the controller side (cluster mode).
    #[must_use]
    pub fn pushed() -> ClientMetricsStore {
        ClientMetricsStore {
            path: None,
            subscriptions: RwLock::default(),
            generation: AtomicU64::new(0),
        }
    }

    #[must_use]
    pub fn is_local(&self) -> bool {
        self.path.is_some()
    }

    #[must_use]
    pub fn all(&self) -> Subscriptions {
        self.subscriptions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// One subscription's keys (empty when it does not exist).
    #[must_use]
    pub fn get(&self, name: &str) -> BTreeMap<String, String> {
        self.subscriptions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Make `configs` subscription `name`'s whole set (empty: remove it); on a single node
    /// the file is written atomically first.
    pub fn set(&self, name: &str, configs: BTreeMap<String, String>) -> anyhow::Result<()> {
        let mut all = self.all();
        if configs.is_empty() {
            all.remove(name);
        } else {
            all.insert(name.to_string(), configs);
        }
        if let Some(path) = &self.path {
            crate::cluster::file_store::write_atomically(path, &serde_json::to_vec_pretty(&all)?)?;
        }
        self.replace_all(all);
        Ok(())
    }

    /// Replace every subscription (cluster mode: what ZooKeeper holds).
    pub fn replace_all(&self, subscriptions: Subscriptions) {
        let mut current = self
            .subscriptions
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *current != subscriptions {
            *current = subscriptions;
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survives_a_reopen_and_the_last_key_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = ClientMetricsStore::open(dir.path()).unwrap();
        let configs: BTreeMap<String, String> = [("interval.ms".to_string(), "1000".to_string())]
            .into_iter()
            .collect();
        store.set("sub", configs.clone()).unwrap();
        assert_eq!(store.generation(), 1);
        let again = ClientMetricsStore::open(dir.path()).unwrap();
        assert_eq!(again.get("sub"), configs);
        again.set("sub", BTreeMap::new()).unwrap();
        assert!(ClientMetricsStore::open(dir.path())
            .unwrap()
            .all()
            .is_empty());
    }
}
