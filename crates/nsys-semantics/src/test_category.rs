//! A category for tests only (this crate's tests, and other crates' with the
//! feature `test-category`; never in [`crate::registry::STANDARD`]): it shows what
//! adding a category takes. It is written as a new category's module would be,
//! its view beside it, and a test registers it with one line,
//! `Registry::standard().with(&test_category::CATEGORY)`, the same line
//! `STANDARD` would get.
//!
//! It reads `CUBLAS_EVENTS` (cuBLAS calls, a table of Nsight's schema no
//! category of the tool reads) through the reader's plain scan, and makes each
//! call an interval of [`TEST_CALL`] valued by the call's name on its CPU thread.

use nsys_reader::ReadError;
use paraver_writer::{EventPair, ValueLabels};
use rustc_hash::FxHashMap;

use crate::category::{Category, CategoryInfo, Pass, Stage};
use crate::context::ReportContext;
use crate::types::interval;
use crate::view::View;

pub const TEST_CATEGORY: Category = Category::named("test-category");
/// Its event type: far from every type of the tool.
pub const TEST_CALL: u32 = 99_000_001;
pub const TEST_CALL_LABEL: &str = "Test category: cuBLAS call";
/// The table it reads.
pub const TABLE: &str = "CUBLAS_EVENTS";
/// Its view.
pub const VIEW: &str = "views/test_category_calls.cfg";

pub static CATEGORY: CategoryInfo = CategoryInfo {
    category: TEST_CATEGORY,
    aliases: &["test-cublas"],
    bsc_names: &[],
    groups: &[],
    tables: &[TABLE],
    table_prefixes: &[],
    // A begin and an end line of ~40 bytes.
    bytes_per_row: 80,
    background_bytes_per_row: 0,
    launched: false,
    event_types: || vec![interval(TEST_CALL, TEST_CALL_LABEL, ValueLabels::Names)],
    states: &[],
    views: &[View::new(
        VIEW,
        include_str!("test_category.cfg"),
        "Which cuBLAS calls (test category) does each thread make, and when?",
    )],
    names_ranges: None,
    pass: Some(Pass {
        stage: Stage::Activity,
        run: translate,
        also_for: &[],
    }),
};

fn translate(ctx: &mut ReportContext) -> Result<(), ReadError> {
    let export = ctx.export;
    let mut names: FxHashMap<i64, u32> = FxHashMap::default();
    let columns = ["start", "end", "globalTid", "nameId"];
    let mut calls = 0;
    export.scan(TABLE, &columns, |row| {
        let (Some(start), Some(end), Some(tid), Some(name_id)) =
            (row.int(0), row.int(1), row.int(2), row.int(3))
        else {
            return Ok(());
        };
        if !ctx.within_limits(start, end) {
            return Ok(());
        }
        let handle = match names.get(&name_id) {
            Some(&handle) => handle,
            None => {
                let name = ctx
                    .export
                    .string(name_id)?
                    .unwrap_or_else(|| format!("[unknown cuBLAS call {name_id}]"));
                let handle = ctx.run.names.intern(TEST_CALL, &name);
                names.insert(name_id, handle);
                handle
            }
        };
        let thread = ctx.cpu_thread(tid);
        ctx.run
            .interval(thread, start, end, &[EventPair::name(TEST_CALL, handle)]);
        calls += 1;
        Ok(())
    })?;
    if calls > 0 {
        ctx.count(TABLE, calls);
    }
    Ok(())
}
