use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;

use super::*;

fn open(path: &std::path::Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .unwrap()
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn decide_honours_env_sysctl_and_probe() {
    let ok = || Ok(());
    let eperm = || Err(io::Error::from_raw_os_error(libc::EPERM));
    assert_eq!(decide(None, None, ok).0, EngineKind::IoUring);
    assert_eq!(
        decide(Some("io_uring"), Some("0\n"), ok).0,
        EngineKind::IoUring
    );
    let (kind, why) = decide(Some("pwritev"), None, ok);
    assert_eq!(kind, EngineKind::Pwritev);
    assert!(why.unwrap().contains("KAFKALITE_IO_ENGINE"));
    assert_eq!(decide(None, Some("2\n"), ok).0, EngineKind::Pwritev);
    let (kind, why) = decide(Some("io_uring"), None, eperm);
    assert_eq!(kind, EngineKind::Pwritev);
    assert!(why.unwrap().contains("io_uring_setup failed"));
    assert_eq!(decide(Some("fallback"), None, ok).0, EngineKind::Pwritev);
    // =1 restricts io_uring to a group: only the probe can tell.
    assert_eq!(decide(None, Some("1\n"), ok).0, EngineKind::IoUring);
    assert_eq!(decide(None, Some("1\n"), eperm).0, EngineKind::Pwritev);
}

#[test]
fn appender_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<Appender>();
}

#[test]
fn iovecs_advance_across_and_inside_buffers() {
    let (a, b, c) = (b"abc".as_slice(), b"".as_slice(), b"defgh".as_slice());
    let mut iov = iovecs::IoVecs::new(&[a, b, c]);
    assert_eq!(iov.remaining().len(), 2, "empty buffers are dropped");
    iov.advance(4);
    let rest = iov.remaining();
    assert_eq!(rest.len(), 1);
    // SAFETY: the iovec points into `c`, which is alive.
    let bytes =
        unsafe { std::slice::from_raw_parts(rest[0].iov_base.cast::<u8>(), rest[0].iov_len) };
    assert_eq!(bytes, b"efgh");
    iov.advance(4);
    assert!(iov.is_empty());
}

#[test]
fn both_engines_write_every_buffer_in_order() {
    for kind in [EngineKind::IoUring, EngineKind::Pwritev] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.log");
        let mut appender = Appender::with_engine(open(&path), 0, kind).unwrap();
        let mut expected = Vec::new();
        // More buffers than ring entries and than IOV_MAX, of mixed sizes.
        let bufs: Vec<Vec<u8>> = (0..2500)
            .map(|i| pattern(1 + (i * 37) % 300, i as u8))
            .collect();
        let refs: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
        for b in &bufs {
            expected.extend_from_slice(b);
        }
        let big = pattern(5 << 20, 7);
        expected.extend_from_slice(&big);
        let end = appender.append(&refs).unwrap();
        let end = {
            assert_eq!(end, appender.position());
            appender.append(&[&big, &[]]).unwrap()
        };
        assert_eq!(end as usize, expected.len(), "{kind:?}");
        assert_eq!(fs::read(&path).unwrap(), expected, "{kind:?}");
    }
}

#[test]
fn one_append_of_more_iovecs_than_a_ring_round_and_single_bytes() {
    for kind in [EngineKind::IoUring, EngineKind::Pwritev] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.log");
        let mut appender = Appender::with_engine(open(&path), 0, kind).unwrap();
        assert_eq!(appender.engine(), kind);
        // 16 SQEs x 1024 iovecs per io_uring round: this needs two rounds.
        let bufs: Vec<Vec<u8>> = (0..20_000).map(|i| pattern(1 + i % 3, i as u8)).collect();
        let refs: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
        let mut expected = bufs.concat();
        appender.append(&refs).unwrap();
        for byte in [b"x", b"y", b"z"] {
            appender.append(&[byte]).unwrap();
            expected.extend_from_slice(byte);
        }
        assert_eq!(appender.append(&[]).unwrap(), expected.len() as u64);
        assert_eq!(fs::read(&path).unwrap(), expected, "{kind:?}");
    }
}

#[test]
fn a_failed_append_reports_the_os_error_and_keeps_the_position() {
    for kind in [EngineKind::IoUring, EngineKind::Pwritev] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.log");
        fs::write(&path, b"0123").unwrap();
        let read_only = File::open(&path).unwrap();
        let mut appender = Appender::with_engine(read_only, 4, kind).unwrap();
        let err = appender.append(&[b"more", b"bytes"]).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EBADF), "{kind:?}: {err}");
        assert_eq!(appender.position(), 4);
        // A write error is not a ring failure: the engine stays.
        assert_eq!(appender.engine(), kind);
        assert_eq!(fs::read(&path).unwrap(), b"0123");
    }
}

#[test]
fn set_position_after_truncation_overwrites_the_tail() {
    for kind in [EngineKind::IoUring, EngineKind::Pwritev] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.log");
        let file = open(&path);
        let handle = file.try_clone().unwrap();
        let mut appender = Appender::with_engine(file, 0, kind).unwrap();
        appender.append(&[b"hello world"]).unwrap();
        handle.set_len(5).unwrap();
        appender.set_position(5);
        appender.append(&[b"!"]).unwrap();
        appender.sync().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"hello!");
    }
}

#[test]
fn blocks_are_reserved_ahead_and_released_without_changing_the_size() {
    use std::os::unix::fs::MetadataExt;
    for kind in [EngineKind::IoUring, EngineKind::Pwritev] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.log");
        let mut appender = Appender::with_engine(open(&path), 0, kind).unwrap();
        appender.set_reservation(Reservation::Fixed);
        let data = pattern(1 << 20, 5);
        appender.append(&[&data]).unwrap();
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(meta.len(), 1 << 20, "reservation must not show in the size");
        assert!(
            meta.blocks() * 512 >= PREALLOCATE_BYTES,
            "{kind:?}: {} blocks",
            meta.blocks()
        );
        appender.release_reserved().unwrap();
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(meta.len(), 1 << 20);
        assert!(
            meta.blocks() * 512 < 2 << 20,
            "{kind:?}: {} blocks after release",
            meta.blocks()
        );
        assert_eq!(fs::read(&path).unwrap(), data);
    }
}

#[test]
fn the_adaptive_reservation_follows_the_writes() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seg.log");
    let mut appender = Appender::new(open(&path), 0).unwrap();
    // A record at a time: nothing reserved, the file holds its bytes only.
    let record = pattern(100, 1);
    for _ in 0..10 {
        appender.append(&[&record]).unwrap();
    }
    assert_eq!(appender.reserved_ahead(), 0);
    assert!(fs::metadata(&path).unwrap().blocks() * 512 <= 8 << 10);
    // Streaming: the window doubles with each one used up, up to the fixed maximum.
    let chunk = pattern(256 << 10, 2);
    let mut seen = Vec::new();
    for _ in 0..600 {
        appender.append(&[&chunk]).unwrap();
        let ahead = appender.reserved_ahead();
        if seen.last() != Some(&ahead) {
            seen.push(ahead);
        }
    }
    let max = *seen.iter().max().unwrap();
    assert!(
        max > PREALLOCATE_BYTES / 2 && max <= PREALLOCATE_BYTES,
        "{seen:?}"
    );
    let meta = fs::metadata(&path).unwrap();
    assert!(meta.blocks() * 512 >= meta.len() + appender.reserved_ahead());
    // Idle is measured from the last reservation; a fixed one is never idle.
    assert!(!appender.reservation_idle_for(std::time::Duration::from_secs(3600)));
    assert!(appender.reservation_idle_for(std::time::Duration::ZERO));
    appender.set_reservation(Reservation::Fixed);
    assert!(!appender.reservation_idle_for(std::time::Duration::ZERO));
    appender.release_reserved().unwrap();
    assert!(!appender.reservation_idle_for(std::time::Duration::ZERO));
    let meta = fs::metadata(&path).unwrap();
    assert!(
        meta.blocks() * 512 < meta.len() + (64 << 10),
        "{}",
        meta.blocks()
    );
}

#[test]
fn the_process_engine_is_io_uring_unless_forced_off() {
    let forced = std::env::var(ENGINE_ENV).is_ok_and(|v| v == "pwritev" || v == "fallback");
    if forced {
        assert_eq!(engine_kind(), EngineKind::Pwritev);
    } else if io_uring::IoUring::new(2).is_ok() {
        assert_eq!(engine_kind(), EngineKind::IoUring);
        assert!(engine_fallback_reason().is_none());
    }
}

fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (b, _) = listener.accept().unwrap();
    (a, b)
}

fn set_sndbuf(sock: &impl AsRawFd, bytes: libc::c_int) {
    set_buffer(sock, libc::SO_SNDBUF, bytes);
}

fn set_buffer(sock: &impl AsRawFd, option: libc::c_int, bytes: libc::c_int) {
    // SAFETY: setsockopt on an open socket, pointing at an int that outlives the call.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "{}", io::Error::last_os_error());
}

#[test]
fn sendfile_all_waits_out_eagain_on_a_non_blocking_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seg.log");
    let data = pattern(3 << 20, 3);
    fs::write(&path, &data).unwrap();
    let file = File::open(&path).unwrap();
    let (tx, mut rx) = tcp_pair();
    set_sndbuf(&tx, 4096);
    tx.set_nonblocking(true).unwrap();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        rx.read_to_end(&mut got).unwrap();
        got
    });
    let sent = sendfile_all(&file, 1000, data.len() - 2000, tx.as_raw_fd(), 10_000).unwrap();
    assert_eq!(sent, data.len() - 2000);
    drop(tx);
    assert_eq!(reader.join().unwrap(), &data[1000..data.len() - 1000]);
}

#[test]
fn sendfile_some_stops_at_eagain_and_at_eof() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seg.log");
    let data = pattern(8 << 20, 9);
    fs::write(&path, &data).unwrap();
    let file = File::open(&path).unwrap();
    let (tx, mut rx) = tcp_pair();
    set_sndbuf(&tx, 4096);
    tx.set_nonblocking(true).unwrap();
    // Nobody reads yet: the socket fills and sendfile_some returns early.
    let first = sendfile_some(&file, 0, data.len(), tx.as_raw_fd()).unwrap();
    assert!(first > 0 && first < data.len(), "sent {first}");
    let mut got = vec![0u8; first];
    rx.read_exact(&mut got).unwrap();
    assert_eq!(got, &data[..first]);
    // Past the end of the file: EOF, nothing sent.
    assert_eq!(
        sendfile_some(&file, data.len() as u64, 100, tx.as_raw_fd()).unwrap(),
        0
    );
}

#[test]
fn sendfile_all_through_a_blocking_unix_socket_with_small_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seg.log");
    let data = pattern(2 << 20, 4);
    fs::write(&path, &data).unwrap();
    let file = File::open(&path).unwrap();
    let (tx, mut rx) = std::os::unix::net::UnixStream::pair().unwrap();
    set_sndbuf(&tx, 4096);
    set_buffer(&rx, libc::SO_RCVBUF, 4096);
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut chunk = [0u8; 3000];
        loop {
            match rx.read(&mut chunk).unwrap() {
                0 => return got,
                n => got.extend_from_slice(&chunk[..n]),
            }
        }
    });
    let sent = sendfile_all(&file, 7, data.len(), tx.as_raw_fd(), 10_000).unwrap();
    // The range runs 7 bytes past the end of the file: EOF ends it early.
    assert_eq!(sent, data.len() - 7);
    drop(tx);
    assert_eq!(reader.join().unwrap(), &data[7..]);
}

#[test]
fn sendfile_all_times_out_when_nobody_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seg.log");
    fs::write(&path, pattern(4 << 20, 6)).unwrap();
    let file = File::open(&path).unwrap();
    let (tx, rx) = tcp_pair();
    set_sndbuf(&tx, 4096);
    set_buffer(&rx, libc::SO_RCVBUF, 4096);
    tx.set_nonblocking(true).unwrap();
    let err = sendfile_all(&file, 0, 4 << 20, tx.as_raw_fd(), 50).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::TimedOut);
}

/// Not a test: `cargo test --release -p kafkalite-core io::tests::throughput -- --ignored --nocapture`.
/// Appends 1 GiB as 1 MiB buffers per engine, three rounds. A 2 GiB file is written and
/// deleted first: on a fresh VM the first touch of page-cache memory is ~10x slower than
/// re-use, and whichever engine ran first would otherwise pay for it.
/// `KAFKALITE_IO_BENCH_COLD=1` measures that first-touch regime instead: no warm-up, and
/// every file is kept until the end so each round needs fresh pages (6 GiB of free memory).
#[test]
#[ignore = "benchmark"]
fn throughput() {
    let dir = std::env::var("KAFKALITE_IO_BENCH_DIR").unwrap_or_else(|_| "/tmp".into());
    let dir = std::path::Path::new(&dir);
    let cold = std::env::var_os("KAFKALITE_IO_BENCH_COLD").is_some();
    let buf = pattern(1 << 20, 1);
    if !cold {
        let warm_up = dir.join("kafkalite-io-bench-warm-up");
        let secs = append_mib(&warm_up, EngineKind::Pwritev, &buf, 2048);
        fs::remove_file(&warm_up).unwrap();
        println!("warm-up pwritev: {:.2} GiB/s", 2.0 / secs);
    }
    let mut kept = Vec::new();
    for round in 0..3 {
        for kind in [EngineKind::IoUring, EngineKind::Pwritev] {
            let path = dir.join(format!("kafkalite-io-bench-{}-{round}", kind.name()));
            let secs = append_mib(&path, kind, &buf, 1024);
            let regime = if cold { "cold" } else { "warm" };
            println!(
                "{regime} round {round} {}: {:.2} GiB/s",
                kind.name(),
                1.0 / secs
            );
            if cold {
                kept.push(path);
            } else {
                fs::remove_file(&path).unwrap();
            }
        }
    }
    for path in kept {
        fs::remove_file(path).unwrap();
    }
}

/// Append `buf` `count` times to a new file at `path`; the seconds taken.
fn append_mib(path: &std::path::Path, kind: EngineKind, buf: &[u8], count: usize) -> f64 {
    let _ = fs::remove_file(path);
    let mut appender = Appender::with_engine(open(path), 0, kind).unwrap();
    assert_eq!(appender.engine(), kind);
    let started = std::time::Instant::now();
    for _ in 0..count {
        appender.append(&[buf]).unwrap();
    }
    started.elapsed().as_secs_f64()
}

#[test]
fn a_failed_verification_appends_nothing_with_either_engine() {
    for kind in [EngineKind::IoUring, EngineKind::Pwritev] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.log");
        let mut appender = Appender::with_engine(open(&path), 0, kind).unwrap();
        let first = pattern(4096, 1);
        appender.append(&[&first]).unwrap();
        let rejected = pattern(1 << 20, 2);
        let mut ran = false;
        let err = appender
            .append_verified(&[&rejected], || {
                ran = true;
                Err(io::Error::other("checksum mismatch"))
            })
            .unwrap_err();
        assert!(ran, "{kind:?}");
        assert_eq!(err.to_string(), "checksum mismatch");
        assert_eq!(appender.position(), 4096, "{kind:?}");
        assert_eq!(fs::metadata(&path).unwrap().len(), 4096, "{kind:?}");
        // Verified bytes land where the rejected ones would have.
        let second = pattern(8192, 3);
        let end = appender
            .append_verified(&[&second], || Ok::<(), io::Error>(()))
            .unwrap();
        assert_eq!(end, 4096 + 8192);
        assert_eq!(
            fs::read(&path).unwrap(),
            [first, second].concat(),
            "{kind:?}"
        );
    }
}

/// Open descriptors of this process whose target starts with `prefix`.
fn fds_to(prefix: &str) -> usize {
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| fs::read_link(e.path()).ok())
        .filter(|t| t.to_string_lossy().starts_with(prefix))
        .count()
}

#[test]
fn many_appenders_on_one_thread_hold_one_descriptor_per_file_and_share_a_ring() {
    let dir = tempfile::tempdir().unwrap();
    let rings_before = fds_to("anon_inode:[io_uring]");
    let files = 50;
    let mut appenders: Vec<Appender> = (0..files)
        .map(|i| {
            let file = std::sync::Arc::new(open(&dir.path().join(format!("{i}.log"))));
            Appender::new(file, 0).unwrap()
        })
        .collect();
    for (i, appender) in appenders.iter_mut().enumerate() {
        appender.append(&[&pattern(100, i as u8)]).unwrap();
    }
    assert_eq!(
        fds_to(&dir.path().to_string_lossy()),
        files,
        "an appender shares its segment's descriptor"
    );
    // Tests on other threads may make their own rings meanwhile; one per file would be 50.
    let rings = fds_to("anon_inode:[io_uring]").saturating_sub(rings_before);
    assert!(
        rings < 10,
        "{rings} rings for {files} files written from one thread"
    );
    for (i, _) in appenders.iter().enumerate() {
        assert_eq!(
            fs::read(dir.path().join(format!("{i}.log"))).unwrap(),
            pattern(100, i as u8)
        );
    }
}
