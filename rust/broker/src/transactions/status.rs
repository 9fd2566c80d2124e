//! Kafka's transaction states (`TransactionState`), a leaf both the record codec
//! (`records`) and the in-memory state (`state`) use.

/// Kafka's `TransactionState` ids (the value's `transaction_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TxnStatus {
    Empty = 0,
    Ongoing = 1,
    PrepareCommit = 2,
    PrepareAbort = 3,
    CompleteCommit = 4,
    CompleteAbort = 5,
    Dead = 6,
    PrepareEpochFence = 7,
}

impl TxnStatus {
    #[must_use]
    pub fn from_i8(v: i8) -> Option<TxnStatus> {
        use TxnStatus::*;
        Some(match v {
            0 => Empty,
            1 => Ongoing,
            2 => PrepareCommit,
            3 => PrepareAbort,
            4 => CompleteCommit,
            5 => CompleteAbort,
            6 => Dead,
            7 => PrepareEpochFence,
            _ => return None,
        })
    }

    /// The names Kafka's DescribeTransactions / ListTransactions use.
    #[must_use]
    pub fn name(self) -> &'static str {
        use TxnStatus::*;
        match self {
            Empty => "Empty",
            Ongoing => "Ongoing",
            PrepareCommit => "PrepareCommit",
            PrepareAbort => "PrepareAbort",
            CompleteCommit => "CompleteCommit",
            CompleteAbort => "CompleteAbort",
            Dead => "Dead",
            PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// A transaction is being completed: requests other than a retry must wait.
    #[must_use]
    pub fn is_preparing(self) -> bool {
        matches!(
            self,
            TxnStatus::PrepareCommit | TxnStatus::PrepareAbort | TxnStatus::PrepareEpochFence
        )
    }
}
