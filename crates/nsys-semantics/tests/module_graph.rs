//! The modules of every crate of the workspace depend on each other without
//! cycles: a module is read from the bottom up, each one knowing only those
//! below it. In `nsys-semantics`, categories depend on the shared pieces
//! (context, handoff, types) and the registry depends on the categories, never
//! the other way round.
//!
//! Read from the sources with a Rust tokenizer (`proc-macro2`, so that comments,
//! strings and the paths inside macros are told apart as the compiler does):
//! module `a` depends on module `b` when its code names `b` by a path
//! (`crate::b::…`, `super::b::…`, `self::b::…`, `b::…` for a child `b`, and the
//! groups of `use` trees). Code under `#[cfg(test)]` is left out (tests may use
//! anything), and so is a module naming one of its ancestors (that is how a
//! child shares its parent's items). Names reached through the crate root's
//! re-exports (`crate::Item`) are not followed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// A module by its path from the crate root (`["sharded", "parts"]`).
type ModulePath = Vec<String>;

/// The crates of the workspace: every directory under `crates/` with a `src/`.
fn crates() -> Vec<(String, PathBuf)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    found.sort();
    found
}

/// Every `.rs` file under `src` with the module path it holds (a crate root,
/// `lib.rs` or `main.rs`, holds the empty path).
fn module_files(src: &Path) -> Vec<(ModulePath, PathBuf)> {
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: ModulePath = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let last = module.last().map(String::as_str);
            if module.len() == 1 && matches!(last, Some("lib" | "main")) || last == Some("mod") {
                module.pop();
            }
            files.push((module, path));
        }
    }
    files.sort();
    files
}

/// The tokens of `a::b::…` paths, resolved against the module that names them.
struct PathScanner<'m> {
    /// The module whose code is scanned.
    here: &'m [String],
    /// Names of its child modules (`child::x` names one).
    children: BTreeSet<String>,
    /// Paths named, from the crate root.
    named: BTreeSet<ModulePath>,
    /// Child modules declared under `#[cfg(test)]` (`mod tests;`).
    test_modules: BTreeSet<String>,
}

fn is_path_separator(tokens: &[TokenTree], at: usize) -> bool {
    matches!(
        (tokens.get(at), tokens.get(at + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
    )
}

fn is_cfg_test(attribute: &TokenTree) -> bool {
    match attribute {
        TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket => {
            let text: String = g.stream().to_string().split_whitespace().collect();
            text == "cfg(test)"
        }
        _ => false,
    }
}

/// Whether the literal at `at` follows `with =`, `serialize_with =` or
/// `deserialize_with =` (serde's field attributes, which name a module or function).
fn names_a_serde_module(tokens: &[TokenTree], at: usize) -> bool {
    at >= 2
        && matches!(&tokens[at - 1], TokenTree::Punct(p) if p.as_char() == '=')
        && matches!(&tokens[at - 2], TokenTree::Ident(key)
            if ["with", "serialize_with", "deserialize_with"].contains(&key.to_string().as_str()))
}

impl PathScanner<'_> {
    fn scan(&mut self, stream: TokenStream) {
        let tokens: Vec<TokenTree> = stream.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Punct(p)
                    if p.as_char() == '#' && tokens.get(i + 1).is_some_and(is_cfg_test) =>
                {
                    i = self.skip_test_item(&tokens, i + 2);
                    continue;
                }
                TokenTree::Ident(ident) if is_path_separator(&tokens, i + 1) => {
                    let after_separator = i >= 2 && is_path_separator(&tokens, i - 2);
                    let name = ident.to_string();
                    let start: Option<ModulePath> = match name.as_str() {
                        _ if after_separator => None,
                        "crate" => Some(Vec::new()),
                        "self" => Some(self.here.to_vec()),
                        "super" => Some(self.here[..self.here.len().saturating_sub(1)].to_vec()),
                        child if self.children.contains(child) => {
                            let mut path = self.here.to_vec();
                            path.push(child.to_string());
                            Some(path)
                        }
                        _ => None,
                    };
                    if let Some(start) = start {
                        i = self.use_tree(&tokens, i + 3, start);
                        continue;
                    }
                }
                TokenTree::Group(g) => self.scan(g.stream()),
                // `#[serde(with = "crate::m")]` names module `m` in a string.
                TokenTree::Literal(literal) if names_a_serde_module(&tokens, i) => {
                    let text = literal.to_string();
                    if let Ok(path) = text.trim_matches('"').parse::<TokenStream>() {
                        self.scan(path);
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// Skips the item after a `#[cfg(test)]` (and its other attributes), up to its
    /// body or its `;`; notes a test module declared without a body.
    fn skip_test_item(&mut self, tokens: &[TokenTree], mut i: usize) -> usize {
        let mut words: Vec<String> = Vec::new();
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Punct(p) if p.as_char() == '#' => i += 1,
                TokenTree::Punct(p) if p.as_char() == ';' => {
                    if let [word, name] = words.as_slice() {
                        if word == "mod" {
                            self.test_modules.insert(name.clone());
                        }
                    }
                    return i + 1;
                }
                TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => return i + 1,
                TokenTree::Ident(word) => {
                    let word = word.to_string();
                    if word != "pub" {
                        words.push(word);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        i
    }

    /// Reads the rest of a path (or `use` tree) whose segments so far make
    /// `prefix`, from `tokens[i]`; returns where it ends.
    fn use_tree(&mut self, tokens: &[TokenTree], mut i: usize, mut prefix: ModulePath) -> usize {
        loop {
            match tokens.get(i) {
                Some(TokenTree::Ident(ident)) => {
                    match ident.to_string().as_str() {
                        "super" => {
                            prefix.pop();
                        }
                        "self" => {}
                        segment => prefix.push(segment.to_string()),
                    }
                    i += 1;
                }
                Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                    // `{a, b::c, d::{e, f}}`: a tree per comma.
                    let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                    let mut at = 0;
                    while at < inner.len() {
                        at = self.use_tree(&inner, at, prefix.clone());
                        while at < inner.len()
                            && !matches!(&inner[at], TokenTree::Punct(p) if p.as_char() == ',')
                        {
                            at += 1;
                        }
                        at += 1;
                    }
                    self.named.insert(prefix);
                    return i + 1;
                }
                _ => break,
            }
            if !is_path_separator(tokens, i) {
                break;
            }
            i += 2;
        }
        self.named.insert(prefix);
        i
    }
}

/// Module → the modules of its crate its code names (ancestors left out).
fn dependencies(src: &Path) -> BTreeMap<ModulePath, BTreeSet<ModulePath>> {
    let files = module_files(src);
    let modules: BTreeSet<ModulePath> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut graph = BTreeMap::new();
    let mut test_only: BTreeSet<ModulePath> = BTreeSet::new();
    // Parents before children (sorted by path), so that test modules are known
    // before their files come.
    for (module, file) in &files {
        if test_only.iter().any(|t| module.starts_with(t)) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let tokens =
            TokenStream::from_str(&text).unwrap_or_else(|e| panic!("{}: {e:?}", file.display()));
        let children = modules
            .iter()
            .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
            .map(|m| m.last().unwrap().clone())
            .collect();
        let mut scanner = PathScanner {
            here: module,
            children,
            named: BTreeSet::new(),
            test_modules: BTreeSet::new(),
        };
        scanner.scan(tokens);
        for name in scanner.test_modules {
            let mut path = module.clone();
            path.push(name);
            test_only.insert(path);
        }
        let uses: BTreeSet<ModulePath> = scanner
            .named
            .into_iter()
            .filter_map(|mut path| {
                // The longest prefix that is a module.
                while !path.is_empty() && !modules.contains(&path) {
                    path.pop();
                }
                (!module.starts_with(&path)).then_some(path)
            })
            .collect();
        graph.insert(module.clone(), uses);
    }
    graph.retain(|m, _| !test_only.iter().any(|t| m.starts_with(t)));
    graph
}

/// The sets of two or more modules that depend on each other (strongly
/// connected components, Tarjan's algorithm), each sorted.
fn cycles(graph: &BTreeMap<ModulePath, BTreeSet<ModulePath>>) -> Vec<Vec<ModulePath>> {
    struct Tarjan<'g> {
        graph: &'g BTreeMap<ModulePath, BTreeSet<ModulePath>>,
        index: BTreeMap<&'g ModulePath, (usize, usize)>,
        stack: Vec<&'g ModulePath>,
        found: Vec<Vec<ModulePath>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, v: &'g ModulePath) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.graph.contains_key(w) {
                    continue;
                }
                match self.index.get(w) {
                    None => {
                        self.visit(w);
                        let low = self.index[w].1;
                        let entry = self.index.get_mut(v).unwrap();
                        entry.1 = entry.1.min(low);
                    }
                    Some(&(w_index, _)) if self.stack.contains(&w) => {
                        let entry = self.index.get_mut(v).unwrap();
                        entry.1 = entry.1.min(w_index);
                    }
                    Some(_) => {}
                }
            }
            let (index, low) = self.index[v];
            if index == low {
                let at = self.stack.iter().position(|m| *m == v).unwrap();
                let mut component: Vec<ModulePath> = self.stack.drain(at..).cloned().collect();
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !tarjan.index.contains_key(v) {
            tarjan.visit(v);
        }
    }
    tarjan.found.sort();
    tarjan.found
}

fn named(module: &[String]) -> String {
    module.join("::")
}

#[test]
fn no_crate_has_an_import_cycle() {
    let mut found: Vec<String> = Vec::new();
    let mut crates_read = 0;
    for (name, dir) in crates() {
        let graph = dependencies(&dir.join("src"));
        assert!(!graph.is_empty(), "{name}: no sources found");
        crates_read += 1;
        for cycle in cycles(&graph) {
            let modules: Vec<String> = cycle.iter().map(|m| named(m)).collect();
            found.push(format!("{name}: {}", modules.join(" <-> ")));
        }
    }
    // Every crate of the workspace, the conversion library and the
    // atomic-output helper among them.
    assert!(crates_read >= 9, "{crates_read} crates");
    assert!(
        found.is_empty(),
        "import cycles (modules that name each other):\n{}",
        found.join("\n")
    );
}

/// The reading sees what it must: paths in `use` groups, through `super`, to
/// children, inside macros; not in comments, strings or test code.
#[test]
fn dependencies_are_read_from_code_only() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("c")).unwrap();
    let files = [
        ("lib.rs", "mod a; mod b; mod c; mod d; mod e; #[cfg(test)] mod t;"),
        (
            "a.rs",
            "use crate::{b::{X, Y}, e};\n// crate::d::Z\nfn f() { let _ = \"crate::d\"; }",
        ),
        ("b.rs", "fn f() { format!(\"{}\", super::c::inner::g()); }"),
        ("c/mod.rs", "mod inner; pub use self::inner::g;"),
        ("c/inner.rs", "pub fn g() -> u8 { super::super::d::K }"),
        (
            "d.rs",
            "pub const K: u8 = 1;\n#[cfg(test)]\nfn helper() { crate::a::f(); }\n#[cfg(test)]\nmod tests { use crate::b; }",
        ),
        ("e.rs", "fn f() { std::e::x(); other::a::y(); }"),
        ("t.rs", "use crate::a;"),
    ];
    for (file, text) in files {
        std::fs::write(src.join(file), text).unwrap();
    }
    let graph = dependencies(&src);
    let path = |p: &str| -> ModulePath { p.split("::").map(str::to_string).collect() };
    let deps = |m: &str| -> Vec<String> { graph[&path(m)].iter().map(|p| named(p)).collect() };
    assert_eq!(deps("a"), ["b", "e"]);
    assert_eq!(deps("b"), ["c::inner"]);
    assert_eq!(deps("c"), ["c::inner"]);
    assert_eq!(deps("c::inner"), ["d"]);
    assert!(deps("d").is_empty() && deps("e").is_empty());
    assert!(!graph.contains_key(&path("t")), "{graph:?}");
    assert!(cycles(&graph).is_empty());
    // d naming a closes a -> b -> c::inner -> d.
    std::fs::write(src.join("d.rs"), "pub const K: u8 = crate::a::K;").unwrap();
    let graph = dependencies(&src);
    let found: Vec<Vec<String>> = cycles(&graph)
        .iter()
        .map(|c| c.iter().map(|m| named(m)).collect())
        .collect();
    assert_eq!(found, [["a", "b", "c::inner", "d"]]);
}

#[test]
fn categories_never_name_the_registry_or_the_catalog() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = dependencies(&src);
    let module = |m: &str| vec![m.to_string()];
    assert!(graph[&module("registry")].contains(&module("kernels")));
    let shared = ["registry", "catalog", "report", "survey", "cuts"];
    for category in [
        "kernels", "memory", "cuda_api", "nvtx", "mpi", "osrt", "sched",
    ] {
        for s in shared {
            assert!(
                !graph[&module(category)].contains(&module(s)),
                "{category} uses {s}"
            );
        }
    }
}
