//! `kafkalite-conformance KAFKALITE_BOOTSTRAP KAFKA_BOOTSTRAP [--quick] [API...]` (or
//! `--fuzz SECONDS`, or `--replay HEX|@CASES.json` to replay saved fuzz cases; `--sasl KAFKALITE,KAFKA` names their SASL_PLAINTEXT listeners; `--record DIR` also writes every request played, one file each, as
//! the coverage-guided fuzzer's seed corpus): the
//! runner against two brokers already running; prints the report data as JSON. The
//! `kafkalite conformance` command starts both brokers and calls the same runner.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: kafkalite-conformance KAFKALITE KAFKA [--quick] [--sasl A,B] [--record DIR] [API...]");
        std::process::exit(2);
    }
    if let Some(hex) = flag_value(&args, "--replay") {
        replay(&args[0], &args[1], &hex);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--fuzz") {
        let seconds: u64 = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(60);
        let duration = std::time::Duration::from_secs(seconds);
        match kafkalite_conformance::fuzz::fuzz_from_scripts(&args[0], &args[1], duration, 10, 1) {
            Ok(report) => println!("{}", serde_json::to_string(&report).expect("serialisable")),
            Err(e) => {
                eprintln!("conformance fuzz: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let options = kafkalite_conformance::Options {
        quick: args.iter().any(|a| a == "--quick"),
        apis: args[2..]
            .iter()
            .enumerate()
            // Flags and the values of the flags that take one.
            .filter(|(i, a)| {
                !a.starts_with("--") && !matches!(args[2 + i - 1].as_str(), "--record" | "--sasl")
            })
            .map(|(_, a)| a.clone())
            .collect(),
        injection: None,
        sasl: flag_value(&args, "--sasl").and_then(|v| {
            v.split_once(',')
                .map(|(a, b)| (a.to_string(), b.to_string()))
        }),
    };
    let record = flag_value(&args, "--record").map(std::path::PathBuf::from);
    match kafkalite_conformance::runner::run_recording(&args[0], &args[1], &options) {
        Ok((report, seeds)) => {
            if let Some(dir) = &record {
                if let Err(e) = write_corpus(dir, &seeds) {
                    eprintln!("conformance: writing {}: {e}", dir.display());
                    std::process::exit(1);
                }
            }
            println!("{}", serde_json::to_string(&report).expect("serialisable"));
        }
        Err(e) => {
            eprintln!("conformance: {e}");
            std::process::exit(1);
        }
    }
}

fn flag_value(args: &[String], flag: &str) -> Option<String> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).cloned()
}

/// One file per recorded request frame (header and body), named by API and version.
fn write_corpus(
    dir: &std::path::Path,
    seeds: &[kafkalite_conformance::session::Seed],
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (i, seed) in seeds.iter().enumerate() {
        let name = format!("{:?}-v{}-{i:04}.bin", seed.api, seed.version);
        std::fs::write(dir.join(name), &seed.frame)?;
    }
    Ok(())
}

/// `--replay HEX`: one saved case's frame (or `@FILE`, a fuzz-cases.json whose every case
/// is replayed), sent to both brokers; the request and both answers, one JSON line each.
fn replay(kafkalite: &str, kafka: &str, arg: &str) {
    let frames: Vec<String> = match arg.strip_prefix('@') {
        Some(path) => {
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
                eprintln!("conformance: {path}: {e}");
                std::process::exit(1);
            });
            let cases: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
            cases
                .iter()
                .filter_map(|c| c["frame_hex"].as_str().map(str::to_string))
                .collect()
        }
        None => vec![arg.to_string()],
    };
    for hex in frames {
        let frame: Vec<u8> = (0..hex.len() / 2)
            .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
            .collect();
        match kafkalite_conformance::triage::replay(kafkalite, kafka, &frame) {
            Ok(r) => println!("{}", serde_json::to_string(&r).expect("serialisable")),
            Err(e) => eprintln!("conformance replay: {e}"),
        }
    }
}
