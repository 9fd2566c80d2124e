//! SCRAM credentials of a single-node broker, kept in the data dir as Kafka keeps them in
//! ZooKeeper's `/config/users/<user>`: per user, per mechanism, Kafka's
//! `salt=…,stored_key=…,server_key=…,iterations=…` string. Never a password.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use super::sasl::scram::{ScramCredential, ScramMechanism};

const FILE_NAME: &str = "scram-credentials.json";

pub struct ScramStore {
    /// `None` in cluster mode: ZooKeeper keeps the credentials (`replace_all`).
    path: Option<PathBuf>,
    users: RwLock<BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>>,
}

impl ScramStore {
    /// Load the store in `dir` (empty when the file does not exist yet); without a dir,
    /// an empty store filled by `replace_all` (cluster mode).
    pub fn open(dir: Option<&Path>) -> anyhow::Result<ScramStore> {
        let Some(dir) = dir else {
            return Ok(ScramStore {
                path: None,
                users: RwLock::new(BTreeMap::new()),
            });
        };
        let path = dir.join(FILE_NAME);
        let mut users = BTreeMap::new();
        match std::fs::read(&path) {
            Ok(bytes) => {
                let stored: BTreeMap<String, BTreeMap<String, String>> =
                    serde_json::from_slice(&bytes)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                for (user, mechanisms) in stored {
                    let mut creds = BTreeMap::new();
                    for (name, text) in mechanisms {
                        let mechanism = ScramMechanism::from_name(&name).ok_or_else(|| {
                            anyhow::anyhow!("{}: unknown mechanism {name}", path.display())
                        })?;
                        let credential =
                            ScramCredential::from_kafka_string(&text).ok_or_else(|| {
                                anyhow::anyhow!("{}: bad credential of {user}", path.display())
                            })?;
                        creds.insert(mechanism, credential);
                    }
                    users.insert(user, creds);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(anyhow::anyhow!("{}: {e}", path.display())),
        }
        Ok(ScramStore {
            path: Some(path),
            users: RwLock::new(users),
        })
    }

    /// Whether alterations are stored here (single node) rather than in ZooKeeper.
    #[must_use]
    pub fn is_local(&self) -> bool {
        self.path.is_some()
    }

    /// Cluster mode: make the credentials what ZooKeeper holds (user -> mechanism name ->
    /// Kafka's credential string). A malformed entry is skipped with its user named.
    pub fn replace_all(&self, stored: &BTreeMap<String, BTreeMap<String, String>>) {
        let mut users = BTreeMap::new();
        for (user, mechanisms) in stored {
            let mut creds = BTreeMap::new();
            for (name, text) in mechanisms {
                let parsed =
                    ScramMechanism::from_name(name).zip(ScramCredential::from_kafka_string(text));
                match parsed {
                    Some((m, c)) => {
                        creds.insert(m, c);
                    }
                    None => kafkalite_core::logging::warn(
                        "kafkalite.security.ScramStore",
                        &format!("skipping an unreadable {name} credential of user {user}"),
                    ),
                }
            }
            if !creds.is_empty() {
                users.insert(user.clone(), creds);
            }
        }
        *self
            .users
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = users;
    }

    #[must_use]
    pub fn get(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        let users = self
            .users
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        users.get(user)?.get(&mechanism).cloned()
    }

    /// Every user with their mechanisms and iteration counts.
    #[must_use]
    pub fn describe(&self) -> BTreeMap<String, Vec<(ScramMechanism, i32)>> {
        let users = self
            .users
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        users
            .iter()
            .map(|(u, m)| {
                (
                    u.clone(),
                    m.iter().map(|(k, c)| (*k, c.iterations)).collect(),
                )
            })
            .collect()
    }

    /// Apply upserts and deletions together, then write the file (atomically: a crash
    /// leaves the old file or the new one). Returns whether each deletion found its entry.
    pub fn alter(
        &self,
        upserts: Vec<(String, ScramMechanism, ScramCredential)>,
        deletions: &[(String, ScramMechanism)],
    ) -> anyhow::Result<Vec<bool>> {
        let mut users = self
            .users
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut found = Vec::with_capacity(deletions.len());
        for (user, mechanism) in deletions {
            let removed = users
                .get_mut(user)
                .is_some_and(|m| m.remove(mechanism).is_some());
            if users.get(user).is_some_and(BTreeMap::is_empty) {
                users.remove(user);
            }
            found.push(removed);
        }
        for (user, mechanism, credential) in upserts {
            users.entry(user).or_default().insert(mechanism, credential);
        }
        let stored: BTreeMap<&String, BTreeMap<&str, String>> = users
            .iter()
            .map(|(u, m)| {
                (
                    u,
                    m.iter()
                        .map(|(k, c)| (k.name(), c.to_kafka_string()))
                        .collect(),
                )
            })
            .collect();
        if let Some(path) = &self.path {
            crate::cluster::file_store::write_private_atomically(
                path,
                &serde_json::to_vec_pretty(&stored)?,
            )?;
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_survive_a_reopen_and_deletions_report_what_they_found() {
        let dir = tempfile::tempdir().unwrap();
        let store = ScramStore::open(Some(dir.path())).unwrap();
        let c = ScramCredential::from_password(ScramMechanism::Sha256, "pw", b"salt", 4096);
        store
            .alter(
                vec![("alice".into(), ScramMechanism::Sha256, c.clone())],
                &[],
            )
            .unwrap();
        let text = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert!(!text.contains("\"pw\""), "no password on disk: {text}");
        let reopened = ScramStore::open(Some(dir.path())).unwrap();
        assert_eq!(reopened.get("alice", ScramMechanism::Sha256), Some(c));
        assert_eq!(reopened.get("alice", ScramMechanism::Sha512), None);
        let found = reopened
            .alter(
                vec![],
                &[
                    ("alice".into(), ScramMechanism::Sha256),
                    ("bob".into(), ScramMechanism::Sha256),
                ],
            )
            .unwrap();
        assert_eq!(found, [true, false]);
        assert!(ScramStore::open(Some(dir.path()))
            .unwrap()
            .describe()
            .is_empty());
    }
}
