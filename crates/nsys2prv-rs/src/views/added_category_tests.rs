//! Adding a category is its module, its reader scan and one registry line
//! (issue 33 item 5): the test category of `nsys_semantics::test_category`
//! (a module, its view beside it, the reader's plain scan), registered with one
//! line, reaches the `.pcf`, the trace and the views; nothing else names it.
//! Its rows come from nsys-synth by a small declaration, the table made from
//! Nsight's schema.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use nsys_semantics::catalog::{catalog_with_reports, TypeOwners};
use nsys_semantics::test_category::{self, TEST_CALL, TEST_CALL_LABEL, TEST_CATEGORY, VIEW};
use nsys_semantics::{plan_layout, translate_with, Registry};
use nsys_synth::{Cell, SchemaVersion, SynthSpec, TableRows};
use paraver_writer::{MergeInput, OutputPaths};

use super::{TraceContents, TraceShape};

/// A small synthetic export (CUDA activity of one process) with four cuBLAS
/// calls on its first thread.
fn export(dir: &Path) -> PathBuf {
    let path = dir.join("cublas.sqlite");
    let version = SchemaVersion::V3_24;
    nsys_synth::write_export(&SynthSpec::small(version), &path).unwrap();
    let tid = (1_i64 << 48) | (24_601 << 24) | 24_601;
    let call = |start: i64, name: &str| {
        [
            start.into(),
            (start + 40_000).into(),
            29.into(),
            tid.into(),
            Cell::StringId(name.into()),
        ]
    };
    let rows = TableRows::new(
        test_category::TABLE,
        &["start", "end", "eventClass", "globalTid", "nameId"],
    )
    .row(call(200_000_000, "cublasSgemm_v2"))
    .row(call(200_100_000, "cublasSgemm_v2"))
    .row(call(200_200_000, "cublasDdot_v2"))
    .row(call(200_300_000, "cublasSgemm_v2"));
    nsys_synth::add_rows(&path, version, &[rows]).unwrap();
    path
}

/// What converting `input` with every category of `registry` writes: the
/// `.pcf`, the `.prv` and the views directory.
struct Written {
    pcf: String,
    prv: String,
    views: PathBuf,
}

/// The conversion's steps, as `convert` runs them for one report, with
/// `registry` in place of the standard one: translate, plan, merge into the
/// trace, then the views the trace has data for.
fn convert(registry: &Registry, input: &Path, out: &Path) -> Written {
    let options = registry.options();
    let report = translate_with(registry, input, input, &options).unwrap();
    let reports = [report];
    let plan = plan_layout(&reports, "t");
    let catalog = catalog_with_reports(registry, &reports);
    let owners = TypeOwners::of(registry, &reports);
    let [report] = reports;
    let inputs = [MergeInput {
        run: report.run,
        time_offset: plan.offsets[0],
        threads: plan.threads[0].clone(),
    }];
    std::fs::create_dir(out).unwrap();
    let paths = OutputPaths::for_trace(&out.join("t.prv")).unwrap();
    let summary =
        paraver_writer::write_trace(&paths, &plan.layout, &inputs, &catalog, &mut |_| {}).unwrap();
    let check = paraver_reader::validate::validate_trace(&paths.prv).unwrap();
    assert!(check.is_ok(), "{:?}", check.findings);

    let labels: BTreeMap<u32, &str> = catalog
        .types
        .iter()
        .map(|t| (t.ty, t.label.as_str()))
        .collect();
    let contents = TraceContents {
        types: summary
            .event_types
            .iter()
            .map(|&ty| (ty, labels.get(&ty).copied().unwrap_or_default()))
            .collect(),
        comm_tags: &summary.comm_tags,
        categories: owners.categories_in(&summary.event_types),
        shape: TraceShape {
            span: summary.end_time,
            first_record: 0,
            gpu_stream_rows: Vec::new(),
        },
    };
    let views = out.join("t.cfgs");
    let target = super::Target {
        dir: &views,
        marker: "test",
        trace_name: "t.prv",
        views_name: "t.cfgs",
    };
    super::write(&target, registry, &contents, false).unwrap();
    Written {
        pcf: std::fs::read_to_string(&paths.pcf).unwrap(),
        prv: std::fs::read_to_string(&paths.prv).unwrap(),
        views,
    }
}

/// Lines of the `.prv` body with an event of `ty`, as (time, value) pairs.
fn events_of(prv: &str, ty: u32) -> Vec<(u64, u64)> {
    let mut found = Vec::new();
    for line in prv.lines().filter(|l| l.starts_with("2:")) {
        let fields: Vec<&str> = line.split(':').collect();
        let time: u64 = fields[5].parse().unwrap();
        for pair in fields[6..].chunks(2) {
            if pair[0] == ty.to_string() {
                found.push((time, pair[1].parse().unwrap()));
            }
        }
    }
    found
}

#[test]
fn a_category_registered_with_one_line_reaches_the_pcf_the_trace_and_the_views() {
    let dir = tempfile::tempdir().unwrap();
    let input = export(dir.path());
    let registry = Registry::standard().with(&test_category::CATEGORY);
    let written = convert(&registry, &input, &dir.path().join("with"));

    // The .pcf: its type, with the names of the calls as values.
    let pcf = &written.pcf;
    let block = pcf
        .split("EVENT_TYPE")
        .find(|b| b.contains(&format!("{TEST_CALL}   {TEST_CALL_LABEL}")))
        .unwrap_or_else(|| panic!("no type {TEST_CALL} in the .pcf:\n{pcf}"));
    let value_of = |name: &str| -> u64 {
        let line = block
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no value {name}:\n{block}"));
        line.split_whitespace().next().unwrap().parse().unwrap()
    };
    let (sgemm, ddot) = (value_of("cublasSgemm_v2"), value_of("cublasDdot_v2"));

    // The trace: each call begins with its name and ends with 0, in order.
    let events = events_of(&written.prv, TEST_CALL);
    let values: Vec<u64> = events.iter().map(|&(_, v)| v).collect();
    assert_eq!(
        values,
        [sgemm, 0, sgemm, 0, ddot, 0, sgemm, 0],
        "{events:?}"
    );
    let times: Vec<u64> = events.iter().map(|&(t, _)| t).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    assert_eq!(times[1] - times[0], 40_000);

    // The views: its own, with its filter on its type, listed in the index with
    // its question among the views with data.
    let view = std::fs::read_to_string(written.views.join(VIEW)).unwrap();
    assert!(
        view.contains(&format!("window_filter_module evt_type 1 {TEST_CALL}\n")),
        "{view}"
    );
    let declared = test_category::CATEGORY.views[0];
    let index = std::fs::read_to_string(written.views.join("INDEX.md")).unwrap();
    assert!(
        index.contains(VIEW) && index.contains(declared.question),
        "{index}"
    );
    let owners = TypeOwners::of(&registry, &[]);
    let types = BTreeSet::from([TEST_CALL]);
    assert_eq!(
        owners.categories_in(&types),
        BTreeSet::from([TEST_CATEGORY])
    );

    // Without the line, none of it: the same export gives no such type, value
    // or view.
    let without = convert(&Registry::standard(), &input, &dir.path().join("without"));
    assert!(!without.pcf.contains(TEST_CALL_LABEL));
    assert!(!without.pcf.contains("cublasSgemm_v2"));
    assert!(events_of(&without.prv, TEST_CALL).is_empty());
    assert!(!without.views.join(VIEW).exists());
    // The rest of the trace is the same but for the test category's lines.
    let others = |prv: &str| {
        prv.lines()
            .skip(1)
            .filter(|l| !l.contains(&format!(":{TEST_CALL}:")))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(others(&written.prv), others(&without.prv));
}
