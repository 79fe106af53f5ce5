//! The Paraver views (`.cfg`) bundled in the binary and installed next to each
//! trace: the views the trace has data for (every view with `--all-views`),
//! views made from templates for its NVTX domains and metrics, and `INDEX.md`
//! listing them with the question each answers. Which views there are, their
//! text, what each is for and what it needs come from the categories'
//! declarations (`nsys_semantics::View`), through the registry.

#[cfg(test)]
mod added_category_tests;
mod cfg;
mod fit;
mod index;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};
use nsys_semantics::view::file_stem;
use nsys_semantics::{Category, DeclaredView, Registry, View};

pub use cfg::{fit_filters, has_data, leave_out_nccl_lines};
pub use fit::TraceShape;

/// What a trace holds, as far as its views go.
pub struct TraceContents<'a> {
    /// Every event type in the body, and its `.pcf` label.
    pub types: BTreeMap<u32, &'a str>,
    /// Every communication tag in the body.
    pub comm_tags: &'a BTreeSet<i64>,
    /// The categories it has events of.
    pub categories: BTreeSet<Category>,
    /// Its length, first record and GPU stream rows.
    pub shape: TraceShape,
}

impl TraceContents<'_> {
    fn type_set(&self) -> BTreeSet<u32> {
        self.types.keys().copied().collect()
    }
}

/// Whether `rel` (under a views directory) is where a view the tool bundles is
/// written.
pub fn is_bundled(rel: &Path) -> bool {
    Registry::standard()
        .views()
        .any(|d| Path::new(d.view.path) == rel)
}

/// A view made for a trace.
struct Planned {
    /// Path under the views directory, `/`-separated.
    path: String,
    text: String,
    entry: index::Entry,
}

/// Where the views go and what the index says about the trace.
pub struct Target<'a> {
    pub dir: &'a Path,
    /// Contents of the marker file.
    pub marker: &'a str,
    /// The trace and the views directory, as the index names them.
    pub trace_name: &'a str,
    pub views_name: &'a str,
}

/// Creates `target.dir` and writes in it the marker, the views of `registry`
/// for a trace with `contents` (those it has data for, or every one with
/// `all`), each with the event types the trace lacks left out of its filters,
/// and `INDEX.md`. Nothing is created recursively: if an interrupt removes the
/// staging directory meanwhile, it stays removed (see `interrupt`).
pub fn write(
    target: &Target,
    registry: &Registry,
    contents: &TraceContents,
    all: bool,
) -> Result<()> {
    let dir = target.dir;
    let planned: Vec<Planned> = plan(registry, contents)
        .into_iter()
        .filter(|p| all || p.entry.has_data)
        .collect();
    create_dir(dir)?;
    std::fs::write(dir.join(atomic_output::MARKER), target.marker)
        .with_context(|| format!("{}: cannot write the views", dir.display()))?;
    let mut made = BTreeSet::new();
    for view in &planned {
        let rel = Path::new(&view.path);
        if let Some(parent) = rel.parent() {
            for ancestor in parent.ancestors().collect::<Vec<_>>().into_iter().rev() {
                if !ancestor.as_os_str().is_empty() && made.insert(ancestor.to_path_buf()) {
                    create_dir(&dir.join(ancestor))?;
                }
            }
        }
        atomic_output::cleanup::checkpoint("writing views");
        let path = dir.join(rel);
        std::fs::write(&path, &view.text)
            .with_context(|| format!("{}: cannot write view", path.display()))?;
    }
    let entries: Vec<index::Entry> = planned.into_iter().map(|p| p.entry).collect();
    let text = index::render(
        target.trace_name,
        target.views_name,
        &entries,
        &contents.shape,
    );
    let path = dir.join(index::FILE);
    std::fs::write(&path, text).with_context(|| format!("{}: cannot write", path.display()))
}

fn create_dir(d: &Path) -> Result<()> {
    match std::fs::create_dir(d) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(e).with_context(|| format!("{}: cannot create directory", d.display()))
        }
        _ => Ok(()),
    }
}

/// Every view `registry` declares, made for a trace with `contents`: the
/// bundled ones fitted to its types, the templates once per type of their
/// family in it; sorted by path.
fn plan(registry: &Registry, contents: &TraceContents) -> Vec<Planned> {
    let types = contents.type_set();
    let mut planned = Vec::new();
    for declared in registry.views() {
        let needs: Vec<&'static str> = declared.needs().map(Category::name).collect();
        let has_categories = declared.needs().all(|c| contents.categories.contains(&c));
        if declared.view.per_type.is_some() {
            planned.extend(instances(&declared, contents, &needs, has_categories));
            continue;
        }
        let tagged = leave_out_nccl_lines(declared.view.text, contents.comm_tags);
        let text = tagged.as_deref().unwrap_or(declared.view.text);
        let fitted = fit_filters(text, &types);
        planned.push(Planned {
            path: declared.view.path.to_string(),
            text: fit_to_trace(fitted.as_deref().unwrap_or(text), declared.view, contents),
            entry: index::Entry {
                path: declared.view.path.to_string(),
                question: declared.view.question.to_string(),
                needs,
                has_data: has_categories && has_data(text, &types, contents.comm_tags),
            },
        });
    }
    planned.sort_by(|a, b| a.path.cmp(&b.path));
    planned
}

/// The views a template makes for the types of its family in the trace.
fn instances(
    declared: &DeclaredView,
    contents: &TraceContents,
    needs: &[&'static str],
    has_categories: bool,
) -> Vec<Planned> {
    let view = declared.view;
    let Some(family) = view.per_type else {
        return Vec::new();
    };
    let template = view.text;
    let types = contents.type_set();
    let mut taken = BTreeSet::new();
    let mut made = Vec::new();
    for (&ty, &label) in &contents.types {
        let Some(name) = (family.name_of)(ty, label) else {
            continue;
        };
        let stem = match family.numbered {
            true => format!("{ty}_{}", file_stem(&name)),
            false => file_stem(&name),
        };
        // Two names may make one file name (`a b` and `a_b`): the type tells them apart.
        let stem = match taken.insert(stem.clone()) {
            true => stem,
            false => format!("{stem}_{ty}"),
        };
        let path = format!("{}/{stem}.cfg", family.dir);
        let text = cfg::instantiate(template, ty, label, &name);
        let text = fit_to_trace(&text, view, contents);
        made.push(Planned {
            entry: index::Entry {
                path: path.clone(),
                question: view.question_for(&name),
                needs: needs.to_vec(),
                has_data: has_categories && has_data(&text, &types, contents.comm_tags),
            },
            path,
            text,
        });
    }
    made
}

/// `cfg`, the text of `view` (its filters fitted), fitted to the trace's time
/// and rows.
fn fit_to_trace(cfg: &str, view: &View, contents: &TraceContents) -> String {
    fit::fit_to_trace(cfg, &contents.shape, view.gpu_stream_rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents<'a>(
        types: &[(u32, &'a str)],
        tags: &'a BTreeSet<i64>,
        categories: &[&str],
    ) -> TraceContents<'a> {
        let registry = Registry::standard();
        TraceContents {
            types: types.iter().copied().collect(),
            comm_tags: tags,
            categories: categories
                .iter()
                .map(|c| registry.select(c).unwrap()[0])
                .collect(),
            shape: TraceShape::default(),
        }
    }

    fn paths(planned: &[Planned], with_data: bool) -> Vec<&str> {
        planned
            .iter()
            .filter(|p| p.entry.has_data == with_data)
            .map(|p| p.path.as_str())
            .collect()
    }

    #[test]
    fn a_cuda_trace_gets_cuda_views_only() {
        let tags = BTreeSet::from([55_001]);
        let c = contents(
            &[
                (63_000_000, "CUDA library call"),
                (63_000_006, "CUDA kernel"),
                (9110, "Kernel registers per thread"),
            ],
            &tags,
            &["cuda-api", "kernels"],
        );
        let planned = plan(&Registry::standard(), &c);
        let with = paths(&planned, true);
        for view in [
            "views/kernels.cfg",
            "views/cuda_activities.cfg",
            "analysis/kernels_in_flight.cfg",
            "views/start-here/where_gpu_time_goes.cfg",
            "views/states.cfg",
        ] {
            assert!(with.contains(&view), "{view}: {with:?}");
        }
        let without = paths(&planned, false);
        for view in [
            "views/mpi_calls.cfg",
            "views/mpi_messages.cfg",
            "views/nccl_kernels.cfg",
            "analysis/memcpy_bandwidth.cfg",
            "basics/kernel_grid_x.cfg",
        ] {
            assert!(without.contains(&view), "{view}");
        }
        // Templates make nothing without their types.
        assert!(planned.iter().all(|p| !p.path.contains("nvtx_domains")));
    }

    #[test]
    fn templates_make_one_view_per_domain_and_metric() {
        let tags = BTreeSet::new();
        let c = contents(
            &[
                (9700, "NVTX push/pop ranges (domain io)"),
                (9800, "NVTX push/pop ranges (domain my app)"),
                (9801, "NVTX payload (domain my app)"),
                (9406, "GPU metric SMs Active [Throughput %] x100"),
                (63_000_006, "CUDA kernel"),
            ],
            &tags,
            &["nvtx", "gpu-metrics", "kernels"],
        );
        let planned = plan(&Registry::standard(), &c);
        let with = paths(&planned, true);
        for view in [
            "views/nvtx_domains/io.cfg",
            "views/nvtx_domains/my_app.cfg",
            "analysis/nvtx_domains/my_app.cfg",
            "views/nvtx_domain_payloads/my_app.cfg",
            "views/gpu_metrics/9406_sms_active_throughput.cfg",
            "analysis/gpu_metrics_per_kernel/9406_sms_active_throughput.cfg",
        ] {
            assert!(with.contains(&view), "{view}: {with:?}");
        }
        let io = planned
            .iter()
            .find(|p| p.path == "views/nvtx_domains/io.cfg")
            .unwrap();
        assert!(io.text.contains("window_filter_module evt_type 1 9700\n"));
        assert!(io
            .text
            .contains("evt_type_label 1 \"NVTX push/pop ranges (domain io)\""));
        assert!(!io.text.contains('@'), "{}", io.text);
        assert_eq!(
            io.entry.question,
            "Which ranges of the NVTX domain io is each thread in (nested)?"
        );
        // The default domain has bundled views, not instances.
        assert!(!with.iter().any(|p| p.contains("default")));
    }

    #[test]
    fn names_that_make_one_file_name_keep_apart() {
        let tags = BTreeSet::new();
        let c = contents(
            &[
                (9700, "NVTX push/pop ranges (domain a b)"),
                (9800, "NVTX push/pop ranges (domain a_b)"),
            ],
            &tags,
            &["nvtx"],
        );
        let planned = plan(&Registry::standard(), &c);
        let domains: Vec<&str> = planned
            .iter()
            .map(|p| p.path.as_str())
            .filter(|p| p.starts_with("views/nvtx_domains/"))
            .collect();
        assert_eq!(
            domains,
            [
                "views/nvtx_domains/a_b.cfg",
                "views/nvtx_domains/a_b_9800.cfg"
            ]
        );
    }
}
