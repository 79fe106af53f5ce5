//! The crate's modules depend on each other without cycles: categories depend on
//! the shared pieces (context, handoff, types) and the registry depends on the
//! categories, never the other way round. Read from the sources (code only: not
//! comments, not test modules).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module → the crate modules its code names (`crate::module`).
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut code: BTreeMap<String, String> = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text.split("#[cfg(test)]").next().unwrap_or_default();
            let lines: Vec<&str> = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            code.insert(name, lines.join("\n"));
        }
    }
    let modules: BTreeSet<String> = code.keys().cloned().collect();
    code.iter()
        .map(|(name, text)| {
            let mut uses = BTreeSet::new();
            for (i, _) in text.match_indices("crate::") {
                let rest = &text[i + "crate::".len()..];
                if let Some(group) = rest.strip_prefix('{') {
                    // `use crate::{a, b::C};`
                    let group = &group[..group.find('}').unwrap_or(group.len())];
                    uses.extend(group.split(',').filter_map(|item| {
                        let first = item.trim().split("::").next()?.trim();
                        Some(first.to_string())
                    }));
                } else {
                    let ident: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    uses.insert(ident);
                }
            }
            uses.retain(|m| modules.contains(m) && m != name);
            (name.clone(), uses)
        })
        .collect()
}

/// A cycle through `start`, if there is one.
fn cycle_from(
    graph: &BTreeMap<String, BTreeSet<String>>,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    let here = path.last().unwrap().clone();
    for next in &graph[&here] {
        if let Some(at) = path.iter().position(|m| m == next) {
            let mut cycle = path[at..].to_vec();
            cycle.push(next.clone());
            return Some(cycle);
        }
        if done.contains(next) {
            continue;
        }
        path.push(next.clone());
        if let Some(cycle) = cycle_from(graph, path, done) {
            return Some(cycle);
        }
        path.pop();
    }
    done.insert(here);
    None
}

#[test]
fn modules_depend_on_each_other_without_cycles() {
    let graph = dependencies();
    assert!(graph["registry"].contains("kernels"), "{graph:?}");
    let mut done = BTreeSet::new();
    for start in graph.keys() {
        if done.contains(start) {
            continue;
        }
        let mut path = vec![start.clone()];
        if let Some(cycle) = cycle_from(&graph, &mut path, &mut done) {
            panic!("import cycle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn categories_never_name_the_registry_or_the_catalog() {
    let graph = dependencies();
    let shared = ["registry", "catalog", "report", "survey", "cuts"];
    for module in [
        "kernels", "memory", "cuda_api", "nvtx", "mpi", "osrt", "sched",
    ] {
        for s in shared {
            assert!(!graph[module].contains(s), "{module} uses {s}");
        }
    }
}
