//! FindCoordinator: which broker coordinates a group (or a transactional id), as the broker
//! asked answers (batched keys from v4, one key here).

use std::time::Duration;

use kafka_protocol::messages::{ApiKey, FindCoordinatorRequest};
use kafka_protocol::protocol::StrBytes;
use kafkalite_core::error_codes;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::versions;

impl Client {
    /// The coordinator of `key` (`key_type` 0: group, 1: transaction) as (node id, host,
    /// port), asked of any connected broker (the first bootstrap server on a new client).
    /// An error code (COORDINATOR_NOT_AVAILABLE while it is being placed) fails the call.
    pub async fn find_coordinator(
        &mut self,
        key: &str,
        key_type: i8,
    ) -> Result<(i32, String, i32)> {
        let address = self.any_broker().await?;
        let (broker, _, response) = self
            .call(
                &address,
                ApiKey::FindCoordinator,
                versions::FIND_COORDINATOR,
                Duration::ZERO,
                |version| {
                    let key = StrBytes::from_string(key.to_string());
                    let request = FindCoordinatorRequest::default().with_key_type(key_type);
                    if version >= 4 {
                        request.with_coordinator_keys(vec![key])
                    } else {
                        request.with_key(key)
                    }
                },
            )
            .await?;
        let (code, node, host, port) = match response.coordinators.first() {
            Some(c) => (c.error_code, c.node_id.0, c.host.to_string(), c.port),
            None => (
                response.error_code,
                response.node_id.0,
                response.host.to_string(),
                response.port,
            ),
        };
        if code != error_codes::NONE {
            return Err(Error::Broker {
                broker,
                what: "FindCoordinator".into(),
                code,
            });
        }
        Ok((node, host, port))
    }
}
