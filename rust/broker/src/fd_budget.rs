//! File descriptors as a budget. Every hosted partition keeps its active segment open, so a
//! broker asked for tens of thousands of partitions can use up its `RLIMIT_NOFILE`; after
//! that it cannot accept a connection, not even the one that would delete a topic (Kafka in
//! that state dies). New partitions are refused while they would eat into a reserve kept for
//! connections, with an error that names the limit.

use crate::errors::{codes, ApiError};

/// Files a new partition opens: its active segment (the indexes are mapped, then closed; the
/// appender shares the segment's descriptor, and io_uring rings are per thread).
const FILES_PER_PARTITION: usize = 1;

/// Raise the soft open-file limit to the hard one, as Go's runtime and many daemons do: the
/// soft limit is often 1024, a few hundred partitions' worth. The limit in force afterwards.
pub fn raise_soft_limit() -> Option<u64> {
    let mut limit = nofile()?;
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: a valid pointer to an rlimit; lowering never fails, raising to the
        // hard limit is allowed to any process.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    Some(limit.rlim_cur)
}

/// Descriptors kept free for connections under a soft limit of `limit`: a tenth, at least
/// 64 (a small broker still takes its admin client), at most 4096.
fn reserve(limit: u64) -> u64 {
    (limit / 10).clamp(64, 4096)
}

/// Whether `new_files` more descriptors leave the reserve free, given `open` in use under
/// `limit`; the refusal names the figures.
fn check(open: u64, limit: u64, new_files: u64, what: &str) -> Result<(), ApiError> {
    let keep = reserve(limit);
    if open.saturating_add(new_files).saturating_add(keep) <= limit {
        return Ok(());
    }
    Err(ApiError::new(
        codes::POLICY_VIOLATION,
        format!(
            "{what} would need {new_files} more open files; the broker has {open} open of its \
             limit of {limit} (RLIMIT_NOFILE) and keeps {keep} for connections: delete \
             topics or raise the limit (ulimit -n) and restart the broker"
        ),
    ))
}

/// Refuse `partitions` new partitions (named by `what` in the error) when their files would
/// leave less than the reserve free. Where the figures cannot be read (no `/proc`), allowed.
pub fn check_room_for_partitions(partitions: i32, what: &str) -> Result<(), ApiError> {
    let Ok(new) = u64::try_from(partitions) else {
        return Ok(());
    };
    let Some(limit) = soft_limit() else {
        return Ok(());
    };
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Ok(());
    };
    let open = entries.count() as u64;
    check(open, limit, new * FILES_PER_PARTITION as u64, what)
}

fn soft_limit() -> Option<u64> {
    nofile()
        .map(|l| l.rlim_cur)
        .filter(|&l| l != libc::RLIM_INFINITY)
}

fn nofile() -> Option<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid pointer to an rlimit.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0).then_some(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_that_would_eat_into_the_reserve_are_refused_with_the_figures() {
        assert!(check(1_000, 20_000, 16_000, "x").is_ok());
        let err = check(1_000, 20_000, 17_001, "topic 't' with 17001 partitions").unwrap_err();
        assert_eq!(err.code, codes::POLICY_VIOLATION);
        for figure in ["17001", "1000 open", "20000", "keeps 2000"] {
            assert!(err.message.contains(figure), "{figure}: {}", err.message);
        }
    }

    #[test]
    fn the_reserve_is_a_tenth_within_bounds() {
        assert_eq!(reserve(1024), 102);
        assert_eq!(reserve(256), 64);
        assert_eq!(reserve(1 << 20), 4096);
    }

    #[test]
    fn this_process_has_room_for_one_partition() {
        assert!(raise_soft_limit().is_some());
        assert!(check_room_for_partitions(1, "one").is_ok());
    }
}
