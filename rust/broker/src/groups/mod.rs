//! Consumer group state. For now: committed offsets of simple (assign()-mode) consumers,
//! which commit with generation -1 and no member id. The classic join/sync protocol comes
//! with the group coordinator.

pub mod offsets;

pub use offsets::{Committed, CommittedOffsets};
