//! [`Client`]: connections to a cluster's brokers, opened on first use and routed by the
//! partition leaders a cached Metadata names. The request kinds live in their own files
//! (`metadata.rs`, `list_offsets.rs`, `fetch.rs`, `produce.rs`,
//! `init_producer_id.rs`) as `impl Client` blocks.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::{Request, VersionRange};

use crate::address::{parse_bootstrap, Address};
use crate::cluster::Metadata;
use crate::config::ClientConfig;
use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::security::ClientSecurity;

pub struct Client {
    bootstrap: Vec<Address>,
    bootstrap_servers: String,
    pub(crate) config: ClientConfig,
    connections: BTreeMap<Address, Connection>,
    /// TLS and/or SASL for every connection (a broker's inter-broker listener).
    security: ClientSecurity,
    /// The last Metadata answer, for routing requests to partition leaders.
    pub(crate) metadata: Option<Metadata>,
}

impl Client {
    /// A client for the cluster `bootstrap_servers` names; connects on first use.
    pub fn new(bootstrap_servers: &str, config: ClientConfig) -> Result<Client> {
        Ok(Client {
            bootstrap: parse_bootstrap(bootstrap_servers)?,
            bootstrap_servers: bootstrap_servers.to_string(),
            config,
            connections: BTreeMap::new(),
            security: ClientSecurity::default(),
            metadata: None,
        })
    }

    /// `new`, with every connection secured as `security` says.
    pub fn with_security(
        bootstrap_servers: &str,
        config: ClientConfig,
        security: ClientSecurity,
    ) -> Result<Client> {
        let mut client = Client::new(bootstrap_servers, config)?;
        client.security = security;
        Ok(client)
    }

    /// Close every connection (they reopen on the next request).
    pub fn close(&mut self) {
        self.connections.clear();
    }

    /// An open connection to `address`, opening it when needed.
    pub(crate) async fn connection(&mut self, address: &Address) -> Result<&mut Connection> {
        if !self.connections.contains_key(address) {
            let conn = Connection::open_secured(address, &self.config, &self.security).await?;
            self.connections.insert(address.clone(), conn);
        }
        Ok(self.connections.get_mut(address).expect("just inserted"))
    }

    /// Any reachable broker: one already connected, else the bootstrap servers in order.
    pub(crate) async fn any_broker(&mut self) -> Result<Address> {
        if let Some(address) = self.connections.keys().next() {
            return Ok(address.clone());
        }
        let mut errors = Vec::new();
        for address in self.bootstrap.clone() {
            match self.connection(&address).await {
                Ok(_) => return Ok(address),
                Err(e) => errors.push(e.to_string()),
            }
        }
        Err(Error::NoBrokerReachable {
            bootstrap: self.bootstrap_servers.clone(),
            errors: errors.join("; "),
        })
    }

    /// The leader of `topic`/`partition` by the cached Metadata (refreshed once when it
    /// does not know the partition); any broker when no leader is known.
    pub(crate) async fn leader_of(&mut self, topic: &str, partition: i32) -> Result<Address> {
        let cached = self
            .metadata
            .as_ref()
            .and_then(|m| m.leader_address(topic, partition));
        let leader = match cached {
            Some(address) => Some(address),
            None => self
                .metadata(Some(&[topic.to_string()]))
                .await?
                .leader_address(topic, partition),
        };
        match leader {
            Some(address) => Ok(address),
            None => self.any_broker().await,
        }
    }

    /// Send one request to `address` at the highest version both sides support, built by
    /// `build` for that version. A connection left unusable by a failure is dropped.
    pub(crate) async fn call<R: Request>(
        &mut self,
        address: &Address,
        key: ApiKey,
        ours: VersionRange,
        extra_wait: Duration,
        build: impl FnOnce(i16) -> R,
    ) -> Result<(String, i16, R::Response)> {
        let conn = self.connection(address).await?;
        let version = conn.version(key, ours)?;
        let broker = conn.broker().to_string();
        let result = conn.call(&build(version), version, extra_wait).await;
        self.keep_if_usable(address, &result);
        result.map(|response| (broker, version, response))
    }

    /// As [`Client::call`] for a request that gets no response (Produce with acks=0).
    pub(crate) async fn send_only<R: Request>(
        &mut self,
        address: &Address,
        key: ApiKey,
        ours: VersionRange,
        build: impl FnOnce(i16) -> R,
    ) -> Result<()> {
        let conn = self.connection(address).await?;
        let version = conn.version(key, ours)?;
        let result = conn.send_only(&build(version), version).await;
        self.keep_if_usable(address, &result);
        result
    }

    fn keep_if_usable<T>(&mut self, address: &Address, result: &Result<T>) {
        if result.as_ref().is_err_and(Error::breaks_connection) {
            self.connections.remove(address);
            // A broker that failed may no longer lead what the cache says it does.
            self.metadata = None;
        }
    }
}
