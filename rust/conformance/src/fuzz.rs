//! A mutation fuzzer seeded from the requests the scripts recorded: each round takes a
//! seed frame, mutates it (bit flips, byte overwrites, length-field edits, truncation,
//! splices) and sends it to kafkalite and to Kafka on fresh connections. A case is saved
//! when kafkalite dies, hangs (no answer and no close while Kafka did one or the other,
//! and none again when asked on a fresh connection: one it answers there is counted as
//! `slow`, a stall of a busy broker rather than a frame that hangs it),
//! or accepts (answers with every error code 0) what Kafka refuses (closes or answers an
//! error). Answers are decoded with the same codec as the runner's.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use kafka_protocol::messages::*;
use kafka_protocol::protocol::Decodable;
use serde::Serialize;

use crate::session::Seed;
use crate::tree;

const ANSWER_WAIT: Duration = Duration::from_secs(5);

/// How long a frame held past [`ANSWER_WAIT`] is given when asked again on a fresh
/// connection before it counts as hung: the clients' default `request.timeout.ms`. Within
/// it a broker is slow (an admin request queued behind an 8,193-partition CreateTopics),
/// not hung.
const REASK_WAIT: Duration = Duration::from_secs(30);

/// Partitions a frame may ask for and still go to Kafka: more make it run out of file
/// descriptors and exit (one 8,193-partition topic on top of others is enough under a
/// 20,000 limit), and then nothing more is compared. Such frames go to kafkalite alone.
const KAFKA_PARTITIONS_PER_FRAME_MAX: u64 = 1_000;
const FRAME_BYTES_MAX: usize = 64 << 20;

/// What one broker did with one frame.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Outcome {
    /// Decoded; `accepted` when every error code in it is 0. `errors`: the distinct
    /// non-zero codes, so a saved case says how Kafka refused without a replay (its state
    /// may have moved on by then).
    Answered { accepted: bool, errors: Vec<i16> },
    /// An answer the codec cannot decode at that version.
    Undecodable,
    /// The broker closed the connection.
    Closed,
    /// Neither answer nor close within the wait.
    Hung,
    /// Could not connect at all.
    Unreachable,
}

#[derive(Clone, Debug, Serialize)]
pub struct Case {
    pub api: String,
    pub version: i16,
    pub why: String,
    pub kafkalite: Outcome,
    pub kafka: Option<Outcome>,
    /// The mutated frame, hex (header + body, no size prefix).
    pub frame_hex: String,
    /// The mutated request as the codec reads it (`request_text::request_debug`): what the
    /// fuzz allowlist's patterns match.
    pub request: String,
    /// For a crash: the frames sent to kafkalite just before (oldest first), since the one
    /// that killed it may be any of them.
    pub previous_hex: Vec<String>,
    /// Seconds into the run: cases bunched in time point at the broker, not the frame.
    pub at_seconds: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FuzzReport {
    pub seeds: usize,
    pub kafkalite_requests: u64,
    /// Frames also sent to Kafka (attempts, Kafka unreachable included).
    pub kafka_requests: u64,
    /// Of those, the ones Kafka answered or closed on: the frames really compared. Kafka
    /// can go down under the fuzzer's thousands of partitions (out of file descriptors).
    pub kafka_answered: u64,
    /// Frames not sent to Kafka because they ask for more partitions than it can hold open
    /// (`KAFKA_PARTITIONS_PER_FRAME_MAX`); kafkalite got them.
    pub kafka_spared: u64,
    pub crashes: u64,
    pub hangs: u64,
    pub accepted_where_kafka_refuses: u64,
    /// Frames kafkalite held past the wait on its kept connection but answered (or closed
    /// on) within `REASK_WAIT` when asked again on a fresh one: the broker was busy, the
    /// frame did not hang it.
    pub slow: u64,
    /// Fuzz-made topics the janitor deleted to keep each broker under its file limit.
    pub kafkalite_topics_deleted: u64,
    pub kafka_topics_deleted: u64,
    pub cases: Vec<Case>,
    pub seconds: f64,
}

/// xorshift64*: a reproducible stream from `seed`, no dependency.
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One mutation of `frame`, keeping the 8 header bytes of key, version and correlation id
/// intact in most rounds so the broker parses past the header into the body.
fn mutate(rng: &mut Rng, frame: &[u8], seeds: &[Seed]) -> Vec<u8> {
    let mut out = frame.to_vec();
    let start = if rng.below(8) == 0 {
        0
    } else {
        8.min(out.len())
    };
    for _ in 0..=rng.below(4) {
        match rng.below(6) {
            0 if out.len() > start => {
                let i = start + rng.below(out.len() - start);
                out[i] ^= 1 << rng.below(8);
            }
            1 if out.len() > start => {
                let i = start + rng.below(out.len() - start);
                out[i] = [0x00, 0xff, 0x7f, 0x80, 0x01][rng.below(5)];
            }
            2 if out.len() >= start + 4 => {
                // A length or count field: 4 bytes set to a hostile value.
                let i = start + rng.below(out.len() - start - 3);
                let v: i32 = [-1, -2, 0, 1, i32::MAX, i32::MIN, 0x7fff][rng.below(7)];
                out[i..i + 4].copy_from_slice(&v.to_be_bytes());
            }
            3 if out.len() > start => {
                let keep = start + rng.below(out.len() - start);
                out.truncate(keep);
            }
            4 => {
                let other = &seeds[rng.below(seeds.len())].frame;
                if other.len() > 8 {
                    let from = 8 + rng.below(other.len() - 8);
                    let take = rng.below(other.len() - from + 1);
                    let at = start + rng.below(out.len().saturating_sub(start) + 1);
                    let at = at.min(out.len());
                    out.splice(at..at, other[from..from + take].iter().copied());
                }
            }
            _ if out.len() > start => {
                let i = start + rng.below(out.len() - start);
                let n = rng.below(16).min(out.len() - i);
                out.drain(i..i + n);
            }
            _ => {}
        }
    }
    out
}

pub(crate) fn resolve(bootstrap: &str) -> Result<SocketAddr, String> {
    bootstrap
        .to_socket_addrs()
        .map_err(|e| format!("{bootstrap}: {e}"))?
        .next()
        .ok_or_else(|| format!("{bootstrap}: no address"))
}

/// Close without TIME_WAIT (an RST): a million short connections from one host would
/// otherwise use up the ephemeral ports.
pub(crate) fn close_hard(stream: TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket and a correctly sized option value.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::addr_of!(linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

pub(crate) fn connect(addr: SocketAddr) -> Option<TcpStream> {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(3)).ok()?;
    let _ = stream.set_read_timeout(Some(ANSWER_WAIT));
    let _ = stream.set_nodelay(true);
    Some(stream)
}

/// Send one frame on a fresh connection and classify what comes back.
fn send(addr: SocketAddr, api: ApiKey, version: i16, frame: &[u8]) -> Outcome {
    send_waiting(addr, api, version, frame, ANSWER_WAIT)
}

/// `send`, waiting up to `wait` for the answer.
fn send_waiting(
    addr: SocketAddr,
    api: ApiKey,
    version: i16,
    frame: &[u8],
    wait: Duration,
) -> Outcome {
    let mut conn = connect(addr);
    if let Some(stream) = &conn {
        let _ = stream.set_read_timeout(Some(wait));
    }
    let outcome = send_on(&mut conn, addr, api, version, frame);
    if let Some(stream) = conn {
        close_hard(stream);
    }
    outcome
}

/// Send one frame on `conn` (connecting first if it is closed) and classify the answer.
/// The connection is kept after an answer and closed after anything else, so a broker
/// that hung or closed is always met on a fresh one.
fn send_on(
    conn: &mut Option<TcpStream>,
    addr: SocketAddr,
    api: ApiKey,
    version: i16,
    frame: &[u8],
) -> Outcome {
    if conn.is_none() {
        *conn = connect(addr);
    }
    let Some(stream) = conn.as_mut() else {
        return Outcome::Unreachable;
    };
    let outcome = exchange(stream, api, version, frame);
    if !matches!(outcome, Outcome::Answered { .. }) {
        if let Some(stream) = conn.take() {
            close_hard(stream);
        }
    }
    outcome
}

fn exchange(stream: &mut TcpStream, api: ApiKey, version: i16, frame: &[u8]) -> Outcome {
    match exchange_raw(stream, frame) {
        Ok(body) => classify(api, version, body),
        Err(outcome) => outcome,
    }
}

/// Send one frame and read one answer's bytes (response header and body), or what
/// happened instead.
pub(crate) fn exchange_raw(stream: &mut TcpStream, frame: &[u8]) -> Result<Vec<u8>, Outcome> {
    let mut out = Vec::with_capacity(frame.len() + 4);
    out.extend_from_slice(&(frame.len() as i32).to_be_bytes());
    out.extend_from_slice(frame);
    if stream.write_all(&out).is_err() {
        return Err(Outcome::Closed);
    }
    let mut size = [0u8; 4];
    match stream.read_exact(&mut size) {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            return Err(Outcome::Hung)
        }
        Err(_) => return Err(Outcome::Closed),
    }
    let len = i32::from_be_bytes(size);
    let Ok(len) = usize::try_from(len) else {
        return Err(Outcome::Undecodable);
    };
    if len > FRAME_BYTES_MAX {
        return Err(Outcome::Undecodable);
    }
    let mut body = vec![0u8; len];
    if stream.read_exact(&mut body).is_err() {
        return Err(Outcome::Closed);
    }
    Ok(body)
}

pub(crate) fn classify(api: ApiKey, version: i16, body: Vec<u8>) -> Outcome {
    let mut bytes = bytes::Bytes::from(body);
    if ResponseHeader::decode(&mut bytes, api.response_header_version(version)).is_err() {
        return Outcome::Undecodable;
    }
    // ApiVersions answers an unparsable request at v0 (KIP-511).
    let decoded = debug_of(api, &mut bytes.clone(), version).or_else(|| {
        (api == ApiKey::ApiVersions)
            .then(|| debug_of(api, &mut bytes, 0))
            .flatten()
    });
    let Some(rendering) = decoded else {
        return Outcome::Undecodable;
    };
    let Ok(node) = tree::parse(&rendering) else {
        return Outcome::Answered {
            accepted: false,
            errors: Vec::new(),
        };
    };
    let mut errors: Vec<i16> = tree::flatten(&node)
        .iter()
        .filter(|(path, _)| crate::normalize::field_of(path) == "error_code")
        .filter(|(_, v)| v != "0")
        .map(|(_, v)| v.parse().unwrap_or(i16::MIN))
        .collect();
    errors.sort_unstable();
    errors.dedup();
    Outcome::Answered {
        accepted: errors.is_empty(),
        errors,
    }
}

/// The `Debug` rendering of a decoded `api` response: the APIs kafkalite serves (the
/// codec's `ResponseKind` needs a feature the other crates do not build with).
pub(crate) fn debug_of(api: ApiKey, bytes: &mut bytes::Bytes, version: i16) -> Option<String> {
    fn render<T: Decodable + std::fmt::Debug>(
        bytes: &mut bytes::Bytes,
        version: i16,
    ) -> Option<String> {
        T::decode(bytes, version).ok().map(|r| format!("{r:?}"))
    }
    match api {
        ApiKey::Produce => render::<ProduceResponse>(bytes, version),
        ApiKey::Fetch => render::<FetchResponse>(bytes, version),
        ApiKey::ListOffsets => render::<ListOffsetsResponse>(bytes, version),
        ApiKey::Metadata => render::<MetadataResponse>(bytes, version),
        ApiKey::OffsetCommit => render::<OffsetCommitResponse>(bytes, version),
        ApiKey::OffsetFetch => render::<OffsetFetchResponse>(bytes, version),
        ApiKey::FindCoordinator => render::<FindCoordinatorResponse>(bytes, version),
        ApiKey::JoinGroup => render::<JoinGroupResponse>(bytes, version),
        ApiKey::Heartbeat => render::<HeartbeatResponse>(bytes, version),
        ApiKey::LeaveGroup => render::<LeaveGroupResponse>(bytes, version),
        ApiKey::SyncGroup => render::<SyncGroupResponse>(bytes, version),
        ApiKey::DescribeGroups => render::<DescribeGroupsResponse>(bytes, version),
        ApiKey::ListGroups => render::<ListGroupsResponse>(bytes, version),
        ApiKey::ApiVersions => render::<ApiVersionsResponse>(bytes, version),
        ApiKey::CreateTopics => render::<CreateTopicsResponse>(bytes, version),
        ApiKey::DeleteTopics => render::<DeleteTopicsResponse>(bytes, version),
        ApiKey::InitProducerId => render::<InitProducerIdResponse>(bytes, version),
        ApiKey::DescribeConfigs => render::<DescribeConfigsResponse>(bytes, version),
        ApiKey::AlterConfigs => render::<AlterConfigsResponse>(bytes, version),
        ApiKey::CreatePartitions => render::<CreatePartitionsResponse>(bytes, version),
        ApiKey::IncrementalAlterConfigs => {
            render::<IncrementalAlterConfigsResponse>(bytes, version)
        }
        ApiKey::DescribeCluster => render::<DescribeClusterResponse>(bytes, version),
        ApiKey::DeleteGroups => render::<DeleteGroupsResponse>(bytes, version),
        ApiKey::OffsetDelete => render::<OffsetDeleteResponse>(bytes, version),
        _ => None,
    }
}

/// Kafka answered or closed: a frame it could not be asked (unreachable: the JVM busy
/// with the fuzzer's thousands of topics and partitions) says nothing about kafkalite's.
fn kafka_did_something(o: &Outcome) -> bool {
    !matches!(o, Outcome::Hung | Outcome::Unreachable)
}

fn refused(o: &Outcome) -> bool {
    matches!(
        o,
        Outcome::Closed
            | Outcome::Answered {
                accepted: false,
                ..
            }
            | Outcome::Undecodable
    )
}

/// Play the quick scripts to record seeds, then fuzz for `duration`.
pub fn fuzz_from_scripts(
    kafkalite: &str,
    kafka: &str,
    duration: Duration,
    compare_every: u64,
    seed: u64,
) -> Result<FuzzReport, String> {
    let options = crate::Options {
        quick: true,
        ..crate::Options::default()
    };
    let (_, seeds) = crate::runner::run_recording(kafkalite, kafka, &options)?;
    fuzz(kafkalite, kafka, &seeds, duration, compare_every, seed)
}

/// Worker threads: a frame a broker holds (a JoinGroup waiting for its rebalance, acks=0)
/// costs its thread the whole answer wait, Kafka's every Nth frame included, so many run
/// at once (16 ran 913 frames/s with Kafka up the whole run).
pub const THREADS: usize = 32;

/// Fuzz for `duration`, comparing every `compare_every`-th frame against Kafka too.
pub fn fuzz(
    kafkalite: &str,
    kafka: &str,
    seeds: &[Seed],
    duration: Duration,
    compare_every: u64,
    seed: u64,
) -> Result<FuzzReport, String> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    use std::sync::Mutex;
    if seeds.is_empty() {
        return Err("no seed requests".into());
    }
    let (ours, theirs) = (resolve(kafkalite)?, resolve(kafka)?);
    let started = Instant::now();
    let counters: [AtomicU64; 8] = Default::default();
    let [sent_ours, sent_theirs, answered_theirs, crashes, hangs, accepted, slow, spared] =
        &counters;
    let stop = AtomicBool::new(false);
    let cases: Mutex<Vec<Case>> = Mutex::new(Vec::new());
    let hex = |frame: &[u8]| frame.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let worker = |index: u64| {
        let mut rng = Rng((seed ^ (index + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1);
        let mut conn: Option<TcpStream> = None;
        let mut recent: std::collections::VecDeque<String> = std::collections::VecDeque::new();
        while started.elapsed() < duration && !stop.load(Relaxed) {
            let s = &seeds[rng.below(seeds.len())];
            let before = rng.clone();
            let frame = mutate(&mut rng, &s.frame, seeds);
            // Kafka gets the same mutation of its own request (its topic ids, member ids):
            // kafkalite's ids would only be unknown there. Where the two requests differ
            // in length the same mutation cannot be applied, and Kafka is not asked.
            let theirs_frame = (s.kafka_frame.len() == s.frame.len()).then(|| {
                if s.kafka_frame == s.frame {
                    frame.clone()
                } else {
                    mutate(&mut before.clone(), &s.kafka_frame, seeds)
                }
            });
            let ours_did = send_on(&mut conn, ours, s.api, s.version, &frame);
            let n = sent_ours.fetch_add(1, Relaxed) + 1;
            let compare = n.is_multiple_of(compare_every.max(1));
            // A frame kafkalite holds is always asked of Kafka too: a JoinGroup waiting for
            // its rebalance or a Produce with acks=0 holds there just the same.
            let spare_kafka = theirs_frame.as_ref().is_some_and(|f| {
                crate::request_text::partitions_asked(f) > KAFKA_PARTITIONS_PER_FRAME_MAX
            });
            if spare_kafka && (compare || ours_did == Outcome::Hung) {
                spared.fetch_add(1, Relaxed);
            }
            let ask_kafka =
                theirs_frame.is_some() && !spare_kafka && (compare || ours_did == Outcome::Hung);
            let theirs_did = theirs_frame
                .as_ref()
                .filter(|_| ask_kafka)
                .map(|f| send(theirs, s.api, s.version, f))
                .map(|outcome| match outcome {
                    // A close as Kafka goes down is no refusal of the frame.
                    Outcome::Closed if connect(theirs).is_none() => Outcome::Unreachable,
                    outcome => outcome,
                });
            if ask_kafka {
                sent_theirs.fetch_add(1, Relaxed);
            }
            if theirs_did.as_ref().is_some_and(kafka_did_something) {
                answered_theirs.fetch_add(1, Relaxed);
            }
            // A frame kafkalite held on the kept connection while Kafka answered or closed is
            // asked again on a fresh connection, as Kafka was: if kafkalite now answers or
            // closes, it was busy (a stall under the fuzzer's load), not hung on the frame.
            let stalled = matches!((&ours_did, &theirs_did), (Outcome::Hung, Some(t)) if kafka_did_something(t))
                && send_waiting(ours, s.api, s.version, &frame, REASK_WAIT) != Outcome::Hung;
            if stalled {
                slow.fetch_add(1, Relaxed);
            }
            let why = match (&ours_did, &theirs_did) {
                (Outcome::Unreachable, _) => Some("kafkalite unreachable: crashed"),
                (Outcome::Hung, Some(t)) if kafka_did_something(t) && !stalled => {
                    Some("kafkalite hung")
                }
                (Outcome::Answered { accepted: true, .. }, Some(t)) if refused(t) => {
                    Some("kafkalite accepted what Kafka refused")
                }
                _ => None,
            };
            if let Some(why) = why {
                match why {
                    w if w.contains("crash") => crashes.fetch_add(1, Relaxed),
                    w if w.contains("hung") => hangs.fetch_add(1, Relaxed),
                    _ => accepted.fetch_add(1, Relaxed),
                };
                let mut cases = cases
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if cases.len() < 1000 {
                    cases.push(Case {
                        api: format!("{:?}", s.api),
                        version: s.version,
                        why: why.into(),
                        kafkalite: ours_did.clone(),
                        kafka: theirs_did.clone(),
                        frame_hex: hex(&frame),
                        request: crate::request_text::request_debug(&frame),
                        previous_hex: if matches!(ours_did, Outcome::Unreachable) {
                            recent.iter().cloned().collect()
                        } else {
                            Vec::new()
                        },
                        at_seconds: started.elapsed().as_secs_f64(),
                    });
                }
                if matches!(ours_did, Outcome::Unreachable) {
                    stop.store(true, Relaxed);
                }
            }
            if recent.len() == 8 {
                recent.pop_front();
            }
            recent.push_back(hex(&frame));
        }
        if let Some(stream) = conn {
            close_hard(stream);
        }
    };
    let janitor_stop = AtomicBool::new(false);
    let deleted = std::thread::scope(|scope| {
        let janitor = scope.spawn(|| crate::janitor::run(kafkalite, kafka, &janitor_stop));
        let workers: Vec<_> = (0..THREADS as u64)
            .map(|i| {
                let worker = &worker;
                scope.spawn(move || worker(i))
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
        janitor_stop.store(true, Relaxed);
        janitor
            .join()
            .map_err(|_| "the janitor panicked".to_string())?
    })?;
    Ok(FuzzReport {
        seeds: seeds.len(),
        kafkalite_requests: sent_ours.load(Relaxed),
        kafka_requests: sent_theirs.load(Relaxed),
        kafka_answered: answered_theirs.load(Relaxed),
        kafka_spared: spared.load(Relaxed),
        crashes: crashes.load(Relaxed),
        hangs: hangs.load(Relaxed),
        accepted_where_kafka_refuses: accepted.load(Relaxed),
        slow: slow.load(Relaxed),
        kafkalite_topics_deleted: deleted[0],
        kafka_topics_deleted: deleted[1],
        cases: cases.into_inner().unwrap_or_default(),
        seconds: started.elapsed().as_secs_f64(),
    })
}
