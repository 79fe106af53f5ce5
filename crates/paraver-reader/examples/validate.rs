//! `cargo run -p paraver-reader --example validate -- TRACE.prv...`: prints the
//! validator's findings and statistics for each trace; exits 1 if any has errors.

fn main() {
    let mut failed = false;
    for arg in std::env::args().skip(1) {
        match paraver_reader::validate::validate_trace(std::path::Path::new(&arg)) {
            Ok(report) => {
                for f in &report.findings {
                    println!("{f}");
                }
                println!("{arg}: {:?}", report.stats);
                failed |= !report.is_ok();
            }
            Err(e) => {
                println!("{arg}: {e}");
                failed = true;
            }
        }
    }
    std::process::exit(i32::from(failed));
}
