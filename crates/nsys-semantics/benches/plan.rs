//! Planning the layout of a large job: 1,000 reports, each one rank with 8 CPU
//! threads and 4 GPU streams, on 250 hosts.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use nsys_reader::Metadata;
use nsys_semantics::{plan_layout, ReportTranslation, ThreadKey};
use paraver_writer::RunBuilder;

fn report(rank: u32) -> ReportTranslation {
    let pid = 4000 + rank % 4;
    let mut threads: Vec<ThreadKey> = (0..8).map(|t| ThreadKey::cpu(pid, pid + t)).collect();
    threads.extend((0..4).map(|s| ThreadKey::stream(pid, rank % 4, 7 + s)));
    let mut run = RunBuilder::new();
    run.state(0, 0, 10, 1);
    ReportTranslation {
        path: PathBuf::from(format!("report_{rank}.sqlite")),
        meta: Metadata {
            hostname: Some(format!("node{:04}", rank / 4)),
            session_start_utc_ns: Some(1_700_000_000_000_000_000 + i64::from(rank) * 1000),
            ..Default::default()
        },
        run: run.finish().unwrap(),
        threads,
        thread_names: HashMap::new(),
        process_names: HashMap::from([(pid, "app".to_string())]),
        row_labels: HashMap::new(),
        counts: BTreeMap::new(),
        warnings: Vec::new(),
        extra_types: Vec::new(),
        extra_type_categories: Vec::new(),
        ranks: HashMap::from([(pid, rank)]),
        p2p: Vec::new(),
        nccl_ops: Vec::new(),
        sync_points: Default::default(),
        cpus_seen: 0,
        recorded_tables: Vec::new(),
    }
}

fn bench_plan(c: &mut Criterion) {
    let reports: Vec<ReportTranslation> = (0..1000).map(report).collect();
    c.bench_function("plan_layout 1000 reports x 12 threads", |b| {
        b.iter(|| plan_layout(std::hint::black_box(&reports), "job"))
    });
}

criterion_group!(benches, bench_plan);
criterion_main!(benches);
