//! The registry: every category, once, in the order they are listed to users (in
//! `-t` help, the dry run, error messages). Adding a category is a module that
//! declares its [`CategoryInfo`] plus one line in [`STANDARD`]; the `-t` words,
//! the `.pcf` catalog, the dry run and the translation then know it.
//!
//! The translation runs the categories' passes by stage, then in this order (see
//! [`Stage`]).

use std::collections::BTreeSet;

use crate::category::{normalize, Category, CategoryInfo, Pass};
use crate::kernels::KERNELS;
use crate::nvtx_config::NvtxConfig;
use crate::options::{KernelNames, Options};
use crate::view::View;
use crate::{
    cpu_raw_counters, cuda_api, cuda_events, cuda_graphs, cuda_sync, gpu_memory, gpu_metrics,
    host_functions, kernels, memory, mpi, nccl, network, nvtx, openacc, openmp, osrt, sampling,
    sched,
};

#[cfg(doc)]
use crate::category::Stage;
use crate::view::bundled_view;

/// The categories of the tool.
pub static STANDARD: &[&CategoryInfo] = &[
    &cuda_api::CATEGORY,
    &kernels::CATEGORY,
    &memory::CATEGORY,
    &cuda_sync::CATEGORY,
    &cuda_graphs::CATEGORY,
    &host_functions::CATEGORY,
    &cuda_events::CATEGORY,
    &gpu_memory::CATEGORY,
    &gpu_metrics::CATEGORY,
    &network::CATEGORY,
    &nvtx::CATEGORY,
    &nccl::CATEGORY,
    &mpi::CATEGORY,
    &osrt::CATEGORY,
    &openmp::CATEGORY,
    &openacc::CATEGORY,
    // Before sched, which keeps the scheduling of processes other categories traced.
    &sampling::CATEGORY,
    &sched::CATEGORY,
    // After sched: counters go to the threads scheduling keeps.
    &cpu_raw_counters::CATEGORY,
];

/// Views of no one category: the thread states every trace has, and the starter
/// set of `views/start-here/` (each view says what it needs).
pub const GENERAL_VIEWS: &[View] = &[
    bundled_view!(
        "views/start-here/where_gpu_time_goes.cfg",
        "Where does the GPU time go: which share of each GPU stream's time does each kernel take?",
    )
    .on_gpu_streams()
    .needs(&[KERNELS]),
    bundled_view!(
        "views/start-here/where_ranks_wait.cfg",
        "Where do the ranks wait: which share of each thread's time goes to each state (running, MPI, CUDA synchronization, I/O, ...)?",
    ),
    bundled_view!(
        "views/start-here/compute_communication_overlap.cfg",
        "How well do compute and communication overlap: per task, the time with compute kernels only, communication (copies, NCCL, MPI) only, both, or neither?",
    )
    .needs(&[KERNELS]),
    bundled_view!(
        "views/states.cfg",
        "What is each thread doing: running, in a CUDA or MPI call, waiting, idle?",
    ),
    bundled_view!(
        "analysis/states_profile.cfg",
        "How much time does each thread spend in each state?",
    ),
];

/// A view as the registry lists it: with the category that declares it (`None`
/// for the general views).
#[derive(Clone, Copy, Debug)]
pub struct DeclaredView {
    pub category: Option<Category>,
    pub view: &'static View,
}

impl DeclaredView {
    /// Every category the view needs: its own and those it names.
    pub fn needs(&self) -> impl Iterator<Item = Category> + '_ {
        self.category
            .into_iter()
            .chain(self.view.needs.iter().copied())
    }
}

/// The word that selects every category.
const ALL: &str = "all";

/// A list of categories: [`Registry::standard`], or that plus others (tests).
#[derive(Clone)]
pub struct Registry {
    categories: Vec<&'static CategoryInfo>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.categories.iter().map(|c| c.category))
            .finish()
    }
}

/// A `-t`/`--exclude` word that names no category.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown category '{word}' (known: {known})")]
pub struct UnknownCategory {
    pub word: String,
    known: String,
}

impl Default for Options {
    /// Every category of the standard registry.
    fn default() -> Self {
        Registry::standard().options()
    }
}

impl Registry {
    pub fn standard() -> Self {
        Registry {
            categories: STANDARD.to_vec(),
        }
    }

    /// This registry and one more category, listed last.
    pub fn with(mut self, extra: &'static CategoryInfo) -> Self {
        self.categories.push(extra);
        self
    }

    pub fn iter(&self) -> impl Iterator<Item = &'static CategoryInfo> + '_ {
        self.categories.iter().copied()
    }

    pub fn get(&self, category: Category) -> Option<&'static CategoryInfo> {
        self.iter().find(|c| c.category == category)
    }

    pub fn all(&self) -> BTreeSet<Category> {
        self.iter().map(|c| c.category).collect()
    }

    /// Options that select every category.
    pub fn options(&self) -> Options {
        Options {
            categories: self.all(),
            kernel_names: KernelNames::Short,
            spill: None,
            decode_ahead: false,
            keep_nsys_threads: false,
            sampling_depth: crate::options::DEFAULT_SAMPLING_DEPTH,
            time_limits: Default::default(),
            api_calls: Default::default(),
            nvtx: Default::default(),
            gpu_metric_types: crate::options::MetricTypes::Bsc,
            nic_metric_types: crate::options::MetricTypes::Bsc,
            ranks: None,
            several_reports: false,
            read_window: None,
        }
    }

    /// The categories a `-t` word selects: a category's name or alias, a group
    /// (`cuda`), one of BSC nsys2prv's names (with its meaning), or `all`.
    pub fn select(&self, word: &str) -> Option<Vec<Category>> {
        let word = normalize(word);
        if word == ALL {
            return Some(self.iter().map(|c| c.category).collect());
        }
        let found: Vec<Category> = self
            .iter()
            .filter(|c| c.is_selected_by(&word))
            .map(|c| c.category)
            .collect();
        (!found.is_empty()).then_some(found)
    }

    /// The categories a comma-separated `-t`/`--exclude` list selects (blank words
    /// are ignored).
    pub fn parse_list(&self, words: &[String]) -> Result<BTreeSet<Category>, UnknownCategory> {
        let mut set = BTreeSet::new();
        for word in words.iter().filter(|w| !w.trim().is_empty()) {
            match self.select(word) {
                Some(found) => set.extend(found),
                None => {
                    return Err(UnknownCategory {
                        word: word.clone(),
                        known: self.known_words(),
                    })
                }
            }
        }
        Ok(set)
    }

    /// `cuda-api, kernels, …, cuda, all`: the names, the groups, and `all`.
    fn known_words(&self) -> String {
        let mut words: Vec<&str> = self.iter().map(|c| c.category.name()).collect();
        words.extend(self.groups().into_iter().map(|(group, _)| group));
        words.push(ALL);
        words.join(", ")
    }

    /// Each group with its members, in registry order.
    fn groups(&self) -> Vec<(&'static str, Vec<Category>)> {
        let mut groups: Vec<(&'static str, Vec<Category>)> = Vec::new();
        for c in self.iter() {
            for &group in c.groups {
                match groups.iter_mut().find(|(g, _)| *g == group) {
                    Some((_, members)) => members.push(c.category),
                    None => groups.push((group, vec![c.category])),
                }
            }
        }
        groups
    }

    /// The category list of the `--help` text: the names in registry order, a
    /// group after its last member (`sync (cuda: these four)`), then `or all`.
    pub fn help(&self) -> String {
        let groups = self.groups();
        let mut items: Vec<String> = Vec::new();
        for c in self.iter() {
            let mut item = c.category.name().to_string();
            for (group, members) in &groups {
                if members.last() == Some(&c.category) {
                    item.push_str(&format!(" ({group}: these {})", count_word(members.len())));
                }
            }
            items.push(item);
        }
        items.push(format!("or {ALL}."));
        items.join(", ")
    }

    /// The passes the selected categories need, in the order they run, each
    /// with the category that declares it.
    pub(crate) fn passes(&self, options: &Options) -> Vec<(Category, &'static Pass)> {
        let mut passes: Vec<(usize, Category, &'static Pass)> = self
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let pass = c.pass.as_ref()?;
                let wanted = options.wants(c.category)
                    || pass.also_for.iter().any(|&other| options.wants(other));
                wanted.then_some((i, c.category, pass))
            })
            .collect();
        passes.sort_by_key(|&(i, _, pass)| (pass.stage, i));
        passes.into_iter().map(|(_, c, pass)| (c, pass)).collect()
    }

    /// Whether `ty` holds ranges a `--nvtx-range` cut can name.
    pub fn is_range_type(&self, ty: u32) -> bool {
        self.iter().any(|c| c.names_ranges.is_some_and(|f| f(ty)))
    }

    /// What is wrong with the event types an NVTX configuration gives domains,
    /// one line per problem: the default domain stays on 9600 and NCCL on 9500
    /// (with their payload fields beside); another domain's block (its first
    /// type, a multiple of 100, and the next six) may hold no type of any
    /// category nor another domain's block.
    pub fn nvtx_config_problems(&self, config: &NvtxConfig) -> Vec<String> {
        use crate::nvtx::{CONFIGURED_DOMAIN_TYPES, DEFAULT_DOMAIN, DOMAIN_BLOCK_WIDTH};
        let declared: Vec<(u32, String)> = self
            .iter()
            .flat_map(|c| (c.event_types)())
            .map(|t| (t.ty, t.label))
            .collect();
        let width = DOMAIN_BLOCK_WIDTH;
        let mut problems = Vec::new();
        let blocks: Vec<_> = config.blocks(width).collect();
        for (block, name) in &blocks {
            let ty = block.start;
            let fixed = match *name {
                crate::nvtx_config::DEFAULT_DOMAIN_NAME => Some(DEFAULT_DOMAIN),
                crate::nccl::DOMAIN => Some(crate::nccl::NCCL_REGIONS),
                _ => None,
            };
            let at = format!("domains.{name}.event_type = {ty}");
            match fixed {
                Some(f) if f != ty => problems.push(format!(
                    "{at}: the {name} domain's ranges are on {f} here (BSC's views and ours read them there)"
                )),
                Some(_) => {}
                None if !CONFIGURED_DOMAIN_TYPES.contains(&ty)
                    || ty == DEFAULT_DOMAIN
                    || !ty.is_multiple_of(100)
                    || !crate::nvtx::is_range_type(ty) =>
                {
                    problems.push(format!(
                        "{at}: a domain's first type must be a multiple of 100 from {} to {}, but not 60000 or 60100 (the domain takes it and the next {})",
                        DEFAULT_DOMAIN + 100,
                        CONFIGURED_DOMAIN_TYPES.end - 100,
                        width - 1
                    ))
                }
                None => {
                    if let Some((other, label)) = declared
                        .iter()
                        .find(|(t, _)| block.contains(t) && !(DEFAULT_DOMAIN..DEFAULT_DOMAIN + width).contains(t))
                    {
                        problems.push(format!(
                            "{at}: its types {ty}-{} would take {other} ({label})",
                            block.end - 1
                        ));
                    }
                    if let Some((_, other)) = blocks.iter().find(|(b, n)| {
                        n != name && b.start < block.end && block.start < b.end
                    }) {
                        problems.push(format!(
                            "{at}: its types {ty}-{} overlap those of the domain {other}",
                            block.end - 1
                        ));
                    }
                }
            }
        }
        problems
    }

    /// Every view the categories declare, then the general ones.
    pub fn views(&self) -> impl Iterator<Item = DeclaredView> + '_ {
        let declared = self.iter().flat_map(|c| {
            c.views.iter().map(move |view| DeclaredView {
                category: Some(c.category),
                view,
            })
        });
        let general = GENERAL_VIEWS.iter().map(|view| DeclaredView {
            category: None,
            view,
        });
        declared.chain(general)
    }
}

fn count_word(n: usize) -> String {
    const WORDS: [&str; 9] = [
        "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    n.checked_sub(2)
        .and_then(|i| WORDS.get(i))
        .map_or_else(|| n.to_string(), |w| w.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_category::{self, TEST_CALL, TEST_CATEGORY};
    use nsys_synth::{Cell, TableRows};
    use paraver_writer::{MergeInput, OutputPaths};

    /// A small export with three rows of the test category's table.
    fn export_with_test_rows(dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("test_category.sqlite");
        let version = nsys_synth::SchemaVersion::V3_24;
        nsys_synth::write_export(&nsys_synth::SynthSpec::small(version), &path).unwrap();
        let tid = (1_i64 << 48) | (24_601 << 24) | 24_601;
        let columns = ["start", "end", "eventClass", "globalTid", "nameId"];
        let call = |start: i64, name: &str| {
            [
                start.into(),
                (start + 500).into(),
                29.into(),
                tid.into(),
                Cell::StringId(name.into()),
            ]
        };
        let rows = TableRows::new(test_category::TABLE, &columns)
            .row(call(1000, "cublasSgemm_v2"))
            .row(call(2000, "cublasSgemm_v2"))
            .row(call(3000, "cublasDdot_v2"));
        nsys_synth::add_rows(&path, version, &[rows]).unwrap();
        path
    }

    #[test]
    fn a_category_added_in_one_place_is_selected_translated_labelled_and_surveyed() {
        let registry = Registry::standard().with(&test_category::CATEGORY);

        // -t / --exclude words, and the help.
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let selected = registry.parse_list(&words(&["test-cublas"])).unwrap();
        assert_eq!(selected, BTreeSet::from([TEST_CATEGORY]));
        assert_eq!(registry.select("TEST_CATEGORY"), Some(vec![TEST_CATEGORY]));
        assert!(registry.select("all").unwrap().contains(&TEST_CATEGORY));
        assert!(registry
            .help()
            .contains("sched, cpu-raw-counters, test-category, or all."));
        let unknown = Registry::standard().parse_list(&words(&["test-category"]));
        assert!(unknown.unwrap_err().to_string().contains("'test-category'"));

        // The dry run counts its table.
        let dir = tempfile::tempdir().unwrap();
        let input = export_with_test_rows(dir.path());
        let mut options = registry.options();
        options.categories = registry
            .parse_list(&words(&["test-category", "osrt"]))
            .unwrap();
        let survey =
            crate::survey::survey_with(&registry, &input, &input, &options, false).unwrap();
        let rows: Vec<(Category, u64)> = survey.rows.iter().map(|r| (r.category, r.rows)).collect();
        assert_eq!(rows, [(TEST_CATEGORY, 3)]);
        assert_eq!(survey.estimated_bytes(), 3 * 80);

        // The translation runs its pass, and the .pcf labels its type and values.
        let report = crate::report::translate_with(&registry, &input, &input, &options).unwrap();
        assert_eq!(report.run.len(), 6);
        let reports = [report];
        let plan = crate::plan_layout(&reports, "t");
        let catalog = crate::catalog::catalog_with_reports(&registry, &reports);
        let [report] = reports;
        let inputs = [MergeInput {
            run: report.run,
            time_offset: plan.offsets[0],
            threads: plan.threads[0].clone(),
        }];
        let paths = OutputPaths::for_trace(&dir.path().join("t.prv")).unwrap();
        paraver_writer::write_trace(&paths, &plan.layout, &inputs, &catalog, &mut |_| {}).unwrap();
        let pcf = std::fs::read_to_string(&paths.pcf).unwrap();
        assert!(
            pcf.contains("99000001   Test category: cuBLAS call"),
            "{pcf}"
        );
        assert!(pcf.contains("cublasDdot_v2"), "{pcf}");
        let check = paraver_reader::validate::validate_trace(&paths.prv).unwrap();
        assert!(check.is_ok(), "{:?}", check.findings);
        assert_eq!(check.stats.event_begins.get(&TEST_CALL), Some(&3));

        // Not selected: not translated.
        options.categories = registry.parse_list(&words(&["osrt"])).unwrap();
        let test_pass = test_category::CATEGORY.pass.as_ref().unwrap();
        let passes = registry.passes(&options);
        assert_eq!(passes.len(), 1);
        assert!(!std::ptr::eq(passes[0].1, test_pass));
    }

    #[test]
    fn every_view_of_cfgs_is_declared_once() {
        fn cfgs_under(root: &std::path::Path, dir: &std::path::Path, out: &mut BTreeSet<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    cfgs_under(root, &path, out);
                } else if path.extension().is_some_and(|e| e == "cfg") {
                    let rel = path.strip_prefix(root).unwrap();
                    out.insert(rel.to_str().unwrap().replace('\\', "/"));
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cfgs");
        let mut files = BTreeSet::new();
        cfgs_under(&root, &root, &mut files);
        let registry = Registry::standard();
        let declared: Vec<&str> = registry.views().map(|d| d.view.path).collect();
        let unique: BTreeSet<String> = declared.iter().map(|p| p.to_string()).collect();
        assert_eq!(unique.len(), declared.len(), "a view declared twice");
        assert_eq!(unique, files, "views of cfgs/ and views declared");
        for d in registry.views() {
            let question = d.view.question;
            assert!(
                question.ends_with('?') && !question.contains('\n'),
                "{}: {question:?}",
                d.view.path
            );
            assert!(d.view.text.starts_with("#ParaverCFG"), "{}", d.view.path);
        }
    }

    #[test]
    fn bsc_cuda_api_trace_brings_gpu_activity() {
        let registry = Registry::standard();
        let found: BTreeSet<&str> = registry
            .select("cuda_api_trace")
            .unwrap()
            .into_iter()
            .map(Category::name)
            .collect();
        assert_eq!(found, BTreeSet::from(["cuda-api", "kernels", "memory"]));
        let gpu: Vec<&str> = registry
            .select("cuda_gpu_trace")
            .unwrap()
            .into_iter()
            .map(Category::name)
            .collect();
        assert_eq!(gpu, ["kernels", "memory"]);
        assert_eq!(registry.select("api").unwrap().len(), 1);
        assert_eq!(registry.select("cuda").unwrap().len(), 4);
        for bsc in [
            "nvtx_pushpop_trace",
            "nvtx_startend_trace",
            "mpi_event_trace",
            "pthread",
        ] {
            assert_eq!(registry.select(bsc).unwrap().len(), 1, "{bsc}");
        }
        assert_eq!(
            registry.select("cpu_raw_counters"),
            Some(vec![crate::cpu_raw_counters::CPU_RAW_COUNTERS])
        );
    }

    #[test]
    fn every_word_selects_what_it_did() {
        let registry = Registry::standard();
        let one = |w: &str| {
            let found = registry.select(w).unwrap_or_else(|| panic!("{w}"));
            assert_eq!(found.len(), 1, "{w}");
            found[0].name()
        };
        for (word, name) in [
            ("NVTX", "nvtx"),
            ("omp", "openmp"),
            ("acc", "openacc"),
            ("scheduling", "sched"),
            ("cuda-graphs", "graphs"),
            ("events", "cuda-events"),
            ("memory_usage", "gpu-memory"),
            ("metrics", "gpu-metrics"),
            ("ib-switch", "network"),
            ("nic_metrics", "network"),
            ("host-funcs", "host-functions"),
            ("kernel", "kernels"),
            ("memset", "memory"),
            ("synchronization", "sync"),
            ("pthreads", "osrt"),
        ] {
            assert_eq!(one(word), name, "{word}");
        }
        assert_eq!(registry.select("all").unwrap().len(), STANDARD.len());
    }

    #[test]
    fn nvtx_domain_blocks_are_checked() {
        let registry = Registry::standard();
        let mut config = NvtxConfig::default();
        assert_eq!(registry.nvtx_config_problems(&config), Vec::<String>::new());
        let domain = |ty| crate::nvtx_config::DomainConfig {
            event_type: Some(ty),
            translate: true,
            payloads: true,
            payload: None,
            project: None,
        };
        config.domains.insert("a".into(), domain(100_500));
        config.domains.insert("b".into(), domain(100_500));
        config.domains.insert("c".into(), domain(12_345));
        config.domains.insert("Default".into(), domain(9700));
        config.domains.insert("d".into(), domain(60_000));
        let problems = registry.nvtx_config_problems(&config);
        assert_eq!(problems.len(), 5, "{problems:#?}");
        assert!(problems
            .iter()
            .any(|p| p.contains("domains.a.") && p.contains("domain b")));
        assert!(problems
            .iter()
            .any(|p| p.starts_with("domains.c.event_type = 12345")));
        assert!(problems
            .iter()
            .any(|p| p.contains("Default domain's ranges are on 9600")));
        assert!(problems.iter().any(|p| p.starts_with("domains.d.")));
    }

    /// The NVTX range types (multiples of 100 from 9600 up) are no other
    /// category's: a configured domain's block can be told by its number.
    #[test]
    fn only_nvtx_declares_range_types() {
        for c in STANDARD {
            for t in (c.event_types)() {
                if crate::nvtx::is_range_type(t.ty) {
                    assert_eq!(c.category, crate::nvtx::NVTX, "{} {}", t.ty, t.label);
                }
            }
        }
    }

    #[test]
    fn the_help_lists_every_category_with_its_group() {
        assert_eq!(
            Registry::standard().help(),
            "cuda-api, kernels, memory, sync (cuda: these four), graphs, host-functions, \
             cuda-events, gpu-memory, gpu-metrics, network, nvtx, nccl, mpi, osrt, openmp, \
             openacc, sampling, sched, cpu-raw-counters, or all."
        );
    }

    #[test]
    fn names_are_unique() {
        let mut words: Vec<String> = Vec::new();
        for c in STANDARD {
            words.push(c.category.name().to_string());
            words.extend(c.aliases.iter().map(|a| normalize(a)));
        }
        let mut sorted = words.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), words.len(), "{words:?}");
    }

    #[test]
    fn passes_run_by_stage_then_in_registry_order() {
        let registry = Registry::standard();
        let order: Vec<usize> = registry
            .passes(&registry.options())
            .into_iter()
            .map(|(_, p)| {
                STANDARD
                    .iter()
                    .position(|c| c.pass.as_ref().is_some_and(|q| std::ptr::eq(q, p)))
                    .unwrap()
            })
            .collect();
        let names: Vec<&str> = order.iter().map(|&i| STANDARD[i].category.name()).collect();
        assert_eq!(
            names,
            [
                "kernels",
                "memory",
                "graphs",
                "host-functions",
                "sync",
                "nvtx",
                "cuda-api",
                "cuda-events",
                "gpu-memory",
                "mpi",
                "osrt",
                "openmp",
                "openacc",
                "sampling",
                "sched",
                "cpu-raw-counters",
                "gpu-metrics",
                "network",
            ]
        );
        // NCCL and 2022-era MPI come through the NVTX pass; syncs through the API's.
        let mut options = registry.options();
        options.categories = BTreeSet::from([crate::nccl::NCCL, crate::cuda_sync::SYNC]);
        assert_eq!(registry.passes(&options).len(), 3);
    }
}
