//! InitProducerId: a producer id and epoch for an idempotent producer, which stamps them
//! (with per-partition sequence numbers) on the batches it sends.

use std::time::Duration;

use kafka_protocol::messages::{ApiKey, InitProducerIdRequest, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use kafkalite_core::error_codes;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::versions;

impl Client {
    /// A new producer id and its epoch. `transactional_id` `None` asks for an idempotent
    /// producer, which any broker serves; a transactional id belongs to a transaction
    /// coordinator, and a broker without transactions refuses it with its error code.
    /// `transaction_timeout_ms` only matters to transactions. An error code fails the call.
    pub async fn init_producer_id(
        &mut self,
        transactional_id: Option<&str>,
        transaction_timeout_ms: i32,
    ) -> Result<(i64, i16)> {
        let address = self.any_broker().await?;
        let (broker, _, response) = self
            .call(
                &address,
                ApiKey::InitProducerId,
                versions::INIT_PRODUCER_ID,
                Duration::ZERO,
                |_| {
                    // The codec's default transactional id is "", not null: set it either way.
                    InitProducerIdRequest::default()
                        .with_transactional_id(
                            transactional_id
                                .map(|id| TransactionalId(StrBytes::from_string(id.to_string()))),
                        )
                        .with_transaction_timeout_ms(transaction_timeout_ms)
                },
            )
            .await?;
        if response.error_code != error_codes::NONE {
            return Err(Error::Broker {
                broker,
                what: "InitProducerId".into(),
                code: response.error_code,
            });
        }
        Ok((response.producer_id.0, response.producer_epoch))
    }
}
