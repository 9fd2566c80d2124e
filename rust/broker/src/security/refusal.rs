//! What an authorization gate answers (`gate`, `gate_cluster`, `gate_txn`): the response
//! to send instead of handling the request, if the principal may not make it.

use crate::response::ResponseBody;

/// A refusal to answer with, if the request is refused.
pub type Refusal = Option<anyhow::Result<ResponseBody>>;
