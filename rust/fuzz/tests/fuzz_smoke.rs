//! The fuzz targets on stable Rust with no extra tools: the corpus recorded from real
//! client traffic, the seeds made here and every saved regression input run through the
//! targets under the allocation cap, hostile array counts at every position of every
//! served request, and a short mutation run (the coverage-guided run is `bench/fuzz.py`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;
use kafkalite_fuzz::alloc_cap::{with_bound, CappedAlloc};
use kafkalite_fuzz::seeds;
use kafkalite_fuzz::targets::{bound, record_batches, request_frame, segment_recovery, Reached};

#[global_allocator]
static ALLOC: CappedAlloc = CappedAlloc;

/// The cap is process-wide: tests take turns.
static SERIAL: Mutex<()> = Mutex::new(());

fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, Vec<u8>)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).expect("readable corpus file");
            (p, bytes)
        })
        .collect();
    out.sort();
    out
}

fn here(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(sub)
}

type Target = fn(&[u8]) -> Reached;

/// Run `target` on `input` under its bound; the largest allocation it made.
fn capped(target: fn(&[u8]) -> Reached, input: &[u8]) -> (Reached, usize) {
    let limit = if std::ptr::fn_addr_eq(target, segment_recovery as fn(&[u8]) -> Reached) {
        // Opening a log reads whole files and maps indexes: bounded by the files' sizes.
        bound(input.len()) + (16 << 20)
    } else {
        bound(input.len())
    };
    with_bound(limit, || target(input))
}

#[test]
fn a_frame_claiming_two_billion_resources_is_refused_without_allocating_for_them() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // IncrementalAlterConfigs v0: header (key 44, version 0, correlation 1, no client
    // id), then a resources array claiming i32::MAX entries and nothing after it. The
    // published codec reserved 2^31 * sizeof(resource) (~164 GB) here.
    let mut frame = vec![0, 44, 0, 0, 0, 0, 0, 1, 0xff, 0xff];
    frame.extend_from_slice(&i32::MAX.to_be_bytes());
    let (reached, largest) = capped(request_frame, &frame);
    assert_eq!(reached, Reached::Refused);
    assert!(largest < 4096, "largest allocation {largest} bytes");
}

#[test]
fn hostile_counts_at_every_position_of_every_served_request_stay_within_bound() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut missing = Vec::new();
    let mut largest = 0;
    let recorded = files(&here("corpus/request"));
    for (key, version) in seeds::served() {
        // A minimal frame, or else a recorded one of that API and version (no filler
        // decodes as Fetch v12: its tagged fields need real structure).
        let name = format!("{key:?}-v{version}-");
        let recorded_frame = || {
            recorded
                .iter()
                .find(|(p, _)| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(&name))
                })
                .map(|(_, b)| b.clone())
        };
        // Produce v0-2 are advertised (as Kafka 4 does) but refused before any decode; the
        // codec cannot write them.
        if key == ApiKey::Produce && version < 3 {
            continue;
        }
        let Some(frame) = seeds::minimal_frame(key, version).or_else(recorded_frame) else {
            missing.push(format!("{key:?} v{version}"));
            continue;
        };
        let (reached, _) = capped(request_frame, &frame);
        assert_eq!(
            reached,
            Reached::Accepted,
            "{key:?} v{version} minimal frame"
        );
        // Overwrite every position after the api key/version with a huge Int32 count and a
        // huge unsigned varint (compact arrays of flexible versions).
        let hostile: [&[u8]; 2] = [&i32::MAX.to_be_bytes(), &[0xff, 0xff, 0xff, 0xff, 0x0f]];
        for h in hostile {
            for at in 4..frame.len() {
                let mut f = frame.clone();
                let end = (at + h.len()).min(f.len());
                f.splice(at..end, h.iter().copied());
                let (_, big) = capped(request_frame, &f);
                largest = largest.max(big);
            }
        }
    }
    assert!(missing.is_empty(), "no minimal request for {missing:?}");
    assert!(largest < 1 << 20, "largest allocation {largest} bytes");
}

#[test]
fn recorded_client_requests_decode_and_regressions_pass() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let recorded = files(&here("corpus/request"));
    assert!(recorded.len() > 100, "{} recorded requests", recorded.len());
    let mut apis = std::collections::BTreeSet::new();
    for (path, frame) in &recorded {
        let (reached, _) = capped(request_frame, frame);
        let key = i16::from_be_bytes([frame[0], frame[1]]);
        // A Produce step may carry a deliberately bad batch (the scripts' invalid-record
        // cases): its records are refused, the request itself decodes.
        if key != ApiKey::Produce as i16 {
            assert_eq!(reached, Reached::Accepted, "{}", path.display());
        }
        apis.insert(key);
    }
    assert!(apis.len() >= 20, "recorded APIs: {apis:?}");
    let targets: [(&str, Target); 3] = [
        ("request", request_frame),
        ("records", record_batches),
        ("recovery", segment_recovery),
    ];
    for (name, target) in targets {
        for (_, input) in files(&here(&format!("regressions/{name}"))) {
            capped(target, &input);
        }
    }
}

#[test]
fn made_seeds_reach_the_deep_paths() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for batch in seeds::batches() {
        assert_eq!(capped(record_batches, &batch).0, Reached::Accepted);
    }
    for partition in seeds::partitions() {
        assert_eq!(capped(segment_recovery, &partition).0, Reached::Accepted);
    }
    assert!(seeds::served().contains(&(ApiKey::Produce, 12)));
}

/// xorshift64*: reproducible mutations without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(4) {
        if out.is_empty() {
            break;
        }
        let i = rng.below(out.len());
        match rng.below(4) {
            0 => out[i] ^= 1 << rng.below(8),
            1 => out[i] = [0, 0xff, 0x7f, 0x80][rng.below(4)],
            2 => out.truncate(i),
            _ => {
                let n = rng.below(8).min(out.len() - i);
                let copy: Vec<u8> = out[i..i + n].to_vec();
                out.splice(i..i, copy);
            }
        }
    }
    out
}

#[test]
fn a_short_mutation_run_finds_nothing() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut requests: Vec<Vec<u8>> = files(&here("corpus/request"))
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    requests.extend(
        seeds::served()
            .into_iter()
            .filter_map(|(k, v)| seeds::minimal_frame(k, v)),
    );
    let batches = seeds::batches();
    let partitions = seeds::partitions();
    let mut rng = Rng(0x5eed_f022);
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut runs = 0u64;
    while Instant::now() < deadline {
        let i = rng.below(requests.len());
        let r = mutate(&mut rng, &requests[i]);
        capped(request_frame, &r);
        let i = rng.below(batches.len());
        let b = mutate(&mut rng, &batches[i]);
        capped(record_batches, &b);
        if runs.is_multiple_of(20) {
            let i = rng.below(partitions.len());
            let p = mutate(&mut rng, &partitions[i]);
            capped(segment_recovery, &p);
        }
        runs += 1;
    }
    assert!(runs > 1000, "{runs} rounds");
}
