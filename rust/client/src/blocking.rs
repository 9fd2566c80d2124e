//! [`BlockingClient`]: the async [`Client`] driven by its own current-thread runtime, for
//! callers without one (the Python binding, which releases the GIL around each call).

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::client::Client;
use crate::cluster::Metadata;
use crate::cluster::TopicPartition;
use crate::config::ClientConfig;
use crate::error::{Error, Result};
use crate::fetch::FetchedPartition;
use crate::produce::Produced;

pub struct BlockingClient {
    runtime: tokio::runtime::Runtime,
    client: Client,
}

impl BlockingClient {
    pub fn new(bootstrap_servers: &str, config: ClientConfig) -> Result<BlockingClient> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| Error::Io {
                broker: bootstrap_servers.to_string(),
                source,
            })?;
        Ok(BlockingClient {
            runtime,
            client: Client::new(bootstrap_servers, config)?,
        })
    }

    pub fn metadata(&mut self, topics: Option<&[String]>) -> Result<Metadata> {
        self.runtime.block_on(self.client.metadata(topics))
    }

    pub fn list_offsets(
        &mut self,
        wanted: &BTreeMap<TopicPartition, i64>,
    ) -> Result<BTreeMap<TopicPartition, i64>> {
        self.runtime.block_on(self.client.list_offsets(wanted))
    }

    pub fn list_offsets_isolated(
        &mut self,
        wanted: &BTreeMap<TopicPartition, i64>,
        isolation_level: i8,
    ) -> Result<BTreeMap<TopicPartition, i64>> {
        self.runtime
            .block_on(self.client.list_offsets_isolated(wanted, isolation_level))
    }

    pub fn fetch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_bytes: i32,
        max_wait_ms: i32,
        isolation_level: i8,
    ) -> Result<FetchedPartition> {
        self.runtime.block_on(self.client.fetch(
            topic,
            partition,
            offset,
            max_bytes,
            max_wait_ms,
            isolation_level,
        ))
    }

    pub fn produce(
        &mut self,
        topic: &str,
        partition: i32,
        records: Bytes,
        acks: i16,
        timeout_ms: i32,
    ) -> Result<Produced> {
        self.runtime.block_on(
            self.client
                .produce(topic, partition, records, acks, timeout_ms),
        )
    }

    pub fn produce_batches(
        &mut self,
        topic: &str,
        batches: Vec<(i32, Bytes)>,
        acks: i16,
        timeout_ms: i32,
    ) -> Result<Vec<(i32, Result<Produced>)>> {
        self.runtime.block_on(
            self.client
                .produce_batches(topic, batches, acks, timeout_ms),
        )
    }

    pub fn init_producer_id(
        &mut self,
        transactional_id: Option<&str>,
        transaction_timeout_ms: i32,
    ) -> Result<(i64, i16)> {
        self.runtime.block_on(
            self.client
                .init_producer_id(transactional_id, transaction_timeout_ms),
        )
    }

    pub fn find_coordinator(&mut self, key: &str, key_type: i8) -> Result<(i32, String, i32)> {
        self.runtime
            .block_on(self.client.find_coordinator(key, key_type))
    }

    /// Close every connection (they reopen on the next request).
    pub fn close(&mut self) {
        self.client.close();
    }
}
