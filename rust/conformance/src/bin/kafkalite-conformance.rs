//! `kafkalite-conformance KAFKALITE_BOOTSTRAP KAFKA_BOOTSTRAP [--quick] [API...]` (or
//! `--fuzz SECONDS`): the
//! runner against two brokers already running; prints the report data as JSON. The
//! `kafkalite conformance` command starts both brokers and calls the same runner.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: kafkalite-conformance KAFKALITE KAFKA [--quick] [API...]");
        std::process::exit(2);
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
            .filter(|a| !a.starts_with("--"))
            .cloned()
            .collect(),
        injection: None,
    };
    match kafkalite_conformance::run(&args[0], &args[1], &options) {
        Ok(report) => println!("{}", serde_json::to_string(&report).expect("serialisable")),
        Err(e) => {
            eprintln!("conformance: {e}");
            std::process::exit(1);
        }
    }
}
