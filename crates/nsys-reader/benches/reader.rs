//! Row scan speed of the typed readers over a generated export of about a million
//! rows (schema 3.24): `Export::kernels` and `Export::api_calls`, in rows per second
//! of their table. The export is written once, with nsys-synth, into a temporary
//! directory that is removed at the end.

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nsys_reader::cuda::{KERNEL, RUNTIME};
use nsys_reader::Export;
use nsys_synth::{write_export, SchemaVersion, SynthProcess, SynthSpec};

/// About 1M activity rows: 300k kernels, ~570k runtime/driver calls, and copies,
/// memsets and syncs, from one process with 4 CPU threads on 2 devices x 4 streams.
fn spec() -> SynthSpec {
    SynthSpec {
        processes: vec![SynthProcess {
            pid: 31_000,
            name: "./bench_app".to_owned(),
            cpu_threads: 4,
            devices: vec![0, 1],
            streams_per_device: 4,
            kernels: 300_000,
            memcpys: 50_000,
            memsets: 20_000,
            syncs: 20_000,
            extra_api_calls: 100_000,
        }],
        ..SynthSpec::small(SchemaVersion::V3_24)
    }
}

struct TempExport {
    dir: PathBuf,
    path: PathBuf,
}

impl TempExport {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("nsys-reader-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating the temporary directory");
        let path = dir.join("bench.sqlite");
        let counts = write_export(&spec(), &path).expect("generating the export");
        eprintln!(
            "generated {}: {} rows ({} kernels, {} runtime)",
            path.display(),
            counts.total(),
            counts.kernels,
            counts.runtime_rows
        );
        TempExport { dir, path }
    }
}

impl Drop for TempExport {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn bench_reader(c: &mut Criterion) {
    let input = TempExport::new();
    let export = Export::open(&input.path).expect("opening the export");
    let kernel_rows = export.count(KERNEL).expect("counting kernels");
    let api_rows = export.count(RUNTIME).expect("counting API calls");

    let mut group = c.benchmark_group("nsys-reader");
    group.sample_size(10);

    group.throughput(Throughput::Elements(kernel_rows));
    group.bench_function(format!("Export::kernels ({kernel_rows} rows)"), |b| {
        b.iter(|| {
            let mut sum = 0i64;
            let scan = export
                .kernels(|k| {
                    sum = sum.wrapping_add(k.place.start ^ k.grid[0]);
                    Ok(())
                })
                .expect("scanning kernels");
            assert_eq!(scan.rows, kernel_rows);
            std::hint::black_box(sum)
        })
    });

    group.throughput(Throughput::Elements(api_rows));
    group.bench_function(format!("Export::api_calls ({api_rows} rows)"), |b| {
        b.iter(|| {
            let mut sum = 0i64;
            let scan = export
                .api_calls(|a| {
                    sum = sum.wrapping_add(a.start ^ a.name_id);
                    Ok(())
                })
                .expect("scanning API calls");
            assert_eq!(scan.rows, api_rows);
            std::hint::black_box(sum)
        })
    });

    // The floors: SQLite's own scan of the same columns through the generic scanner,
    // every column read as an integer, without building the typed rows.
    let floors: [(&str, u64, &[&str]); 2] = [
        (
            KERNEL,
            kernel_rows,
            &[
                "start",
                "end",
                "deviceId",
                "contextId",
                "streamId",
                "correlationId",
                "globalPid",
                "shortName",
                "demangledName",
                "gridX",
                "gridY",
                "gridZ",
                "blockX",
                "blockY",
                "blockZ",
                "staticSharedMemory",
                "dynamicSharedMemory",
                "localMemoryTotal",
                "registersPerThread",
                "graphNodeId",
            ],
        ),
        (
            RUNTIME,
            api_rows,
            &[
                "start",
                "end",
                "globalTid",
                "correlationId",
                "nameId",
                "eventClass",
                "returnValue",
            ],
        ),
    ];
    for (table, rows, cols) in floors {
        group.throughput(Throughput::Elements(rows));
        let name = format!("Export::scan {table}, {} columns ({rows} rows)", cols.len());
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut sum = 0i64;
                export
                    .scan(table, cols, |row| {
                        for i in 0..cols.len() {
                            sum = sum.wrapping_add(row.int(i).unwrap_or(0));
                        }
                        Ok(())
                    })
                    .expect("scanning");
                std::hint::black_box(sum)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_reader);
criterion_main!(benches);
