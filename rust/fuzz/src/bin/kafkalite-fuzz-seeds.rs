//! `kafkalite-fuzz-seeds DIR`: write the seeds made in code into `DIR/request`,
//! `DIR/records` and `DIR/recovery` (next to the recorded client traffic the bench copies
//! in), one file each, for the libFuzzer drivers.

fn main() -> std::io::Result<()> {
    let Some(dir) = std::env::args_os().nth(1).map(std::path::PathBuf::from) else {
        eprintln!("usage: kafkalite-fuzz-seeds DIR");
        std::process::exit(2);
    };
    let write = |sub: &str, name: String, bytes: &[u8]| -> std::io::Result<()> {
        let d = dir.join(sub);
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join(name), bytes)
    };
    for (key, version) in kafkalite_fuzz::seeds::served() {
        if let Some(frame) = kafkalite_fuzz::seeds::minimal_frame(key, version) {
            write("request", format!("minimal-{key:?}-v{version}"), &frame)?;
        }
    }
    for (i, batch) in kafkalite_fuzz::seeds::batches().iter().enumerate() {
        write("records", format!("batch-{i}"), batch)?;
    }
    for (i, partition) in kafkalite_fuzz::seeds::partitions().iter().enumerate() {
        write("recovery", format!("partition-{i}"), partition)?;
    }
    Ok(())
}
