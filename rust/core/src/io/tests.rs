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

fn set_sndbuf(sock: &TcpStream, bytes: libc::c_int) {
    // SAFETY: setsockopt with a valid int option value.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

#[test]
fn sendfile_all_delivers_a_range_through_a_small_blocking_buffer() {
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

/// Not a test: `cargo test --release -p kafkalite-core io::tests::throughput -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark"]
fn throughput() {
    let dir = std::env::var("KAFKALITE_IO_BENCH_DIR").unwrap_or_else(|_| "/tmp".into());
    let buf = pattern(1 << 20, 1);
    for round in 0..3 {
        for kind in [EngineKind::IoUring, EngineKind::Pwritev] {
            let path =
                std::path::Path::new(&dir).join(format!("kafkalite-io-bench-{}", kind.name()));
            let mut appender = Appender::with_engine(open(&path), 0, kind).unwrap();
            let started = std::time::Instant::now();
            for _ in 0..1024 {
                appender.append(&[&buf]).unwrap();
            }
            let secs = started.elapsed().as_secs_f64();
            println!("round {round} {}: {:.0} MiB/s", kind.name(), 1024.0 / secs);
            fs::remove_file(&path).unwrap();
        }
    }
}
