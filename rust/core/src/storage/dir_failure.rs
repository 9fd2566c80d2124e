//! Storage errors of a log dir, told to the operator: a full disk or a failing device
//! otherwise reaches clients only as a retriable KAFKA_STORAGE_ERROR, which an idempotent
//! producer answers by retrying until it times out. Every failing append would repeat the
//! same line, so each log dir gets one line per `REPORT_INTERVAL`.

use std::path::Path;
use std::time::Duration;

use crate::error::Error;
use crate::logging::{self, Level};

/// At most one line per log dir this often.
pub const REPORT_INTERVAL: Duration = Duration::from_secs(30);

/// Log `e` if it is an I/O error of the log in `partition_dir` (whose parent is the log dir)
/// while `doing` something; other errors (bad records, ...) are the client's, not the disk's.
/// Returns `e`.
pub(crate) fn report(partition_dir: &Path, doing: &str, e: Error) -> Error {
    let Error::Io(io) = &e else {
        return e;
    };
    let log_dir = partition_dir.parent().unwrap_or(partition_dir);
    let partition = partition_dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let hint = if io.raw_os_error() == Some(libc::ENOSPC) {
        " The file system is full: appends fail until space is freed; what was \
         acknowledged stays on disk."
    } else {
        ""
    };
    logging::every(
        &format!("log dir {}", log_dir.display()),
        REPORT_INTERVAL,
        Level::Error,
        "kafkalite.log.LogDirFailureChannel",
        || {
            format!(
                "Error while {doing} partition {partition} in log dir {}: {io}. Its \
                 partitions answer KAFKA_STORAGE_ERROR while this lasts (one line per {} s \
                 per log dir).{hint}",
                log_dir.display(),
                REPORT_INTERVAL.as_secs()
            )
        },
    );
    e
}
