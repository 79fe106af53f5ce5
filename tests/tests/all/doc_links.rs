//! The documents' links: every relative link and image of the repository's Markdown files
//! (README.md, ARCHITECTURE.md, the guide under docs/, ...) points at a file or directory of
//! the repository, and a `#anchor` at a heading of the page it names, as GitHub renders them.
//! The Markdown is read by a CommonMark parser, so text in code spans and blocks is no link.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use end_to_end::workspace_root;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// What a Markdown file links to and the anchors its headings make.
struct Document {
    /// (line, destination) of every link and image.
    links: Vec<(usize, String)>,
    anchors: BTreeSet<String>,
}

fn parse(text: &str) -> Document {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut links = Vec::new();
    let mut anchors = BTreeSet::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut heading: Option<String> = None;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        let line = text[..range.start].matches('\n').count() + 1;
        match event {
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => links.push((line, dest_url.to_string())),
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let slug = github_slug(&heading.take().unwrap_or_default());
                // GitHub numbers repeated headings: `name`, `name-1`, `name-2`, ...
                let n = seen.entry(slug.clone()).or_insert(0);
                anchors.insert(if *n == 0 {
                    slug.clone()
                } else {
                    format!("{slug}-{n}")
                });
                *n += 1;
            }
            _ => {}
        }
    }
    Document { links, anchors }
}

/// The anchor GitHub gives a heading: its text in lower case, without punctuation other than
/// `-` and `_`, spaces turned into `-`.
fn github_slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// `%20` and the like in a link's path.
fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| path.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `a/./b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The Markdown files of the repository, outside build output and hidden directories.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every broken relative link of the files, as `file:line: link: why`.
fn broken_links(root: &Path, files: &[PathBuf]) -> Vec<String> {
    let root = normalize(&std::path::absolute(root).unwrap());
    let mut parsed: BTreeMap<PathBuf, Document> = BTreeMap::new();
    let mut document = |path: &Path| -> Option<BTreeSet<String>> {
        if !parsed.contains_key(path) {
            let text = std::fs::read_to_string(path).ok()?;
            parsed.insert(path.to_path_buf(), parse(&text));
        }
        Some(parsed[path].anchors.clone())
    };
    let mut broken = Vec::new();
    for file in files {
        let file = normalize(&std::path::absolute(file).unwrap());
        let text = std::fs::read_to_string(&file).unwrap();
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for (line, link) in parse(&text).links {
            let is_url = link
                .split_once(':')
                .is_some_and(|(scheme, _)| scheme.chars().all(|c| c.is_ascii_alphanumeric()));
            if is_url || link.starts_with("//") {
                continue;
            }
            let (path, anchor) = match link.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() {
                file.clone()
            } else if path.starts_with('/') {
                broken.push(format!(
                    "{shown}:{line}: {link}: absolute path (GitHub reads it from the site's root)"
                ));
                continue;
            } else {
                normalize(&file.parent().unwrap().join(percent_decode(path)))
            };
            if !target.starts_with(&root) {
                broken.push(format!("{shown}:{line}: {link}: outside the repository"));
                continue;
            }
            if !target.exists() {
                broken.push(format!("{shown}:{line}: {link}: no such file"));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if target.extension().is_none_or(|e| e != "md") {
                broken.push(format!(
                    "{shown}:{line}: {link}: an anchor into a file that is not Markdown"
                ));
                continue;
            }
            let anchors = document(&target).unwrap_or_default();
            if !anchors.contains(&percent_decode(anchor)) {
                broken.push(format!(
                    "{shown}:{line}: {link}: no heading makes #{anchor} (it has: {})",
                    anchors.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_of_the_documents_resolves() {
    let root = workspace_root();
    let files = markdown_files(&root);
    let names: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    for expected in ["README.md", "ARCHITECTURE.md", "docs/README.md"] {
        assert!(names.iter().any(|n| n == expected), "{expected}: {names:?}");
    }
    let broken = broken_links(&root, &files);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn headings_make_github_anchors() {
    let doc = parse(
        "# Title\n\n## Sharded conversion: many nodes, the same trace\n\n## `-t` words\n\n\
         ## Files: the page, JSON and CSV\n\n## Faults\n\n## Faults\n\n```\n# not a heading\n```\n",
    );
    let anchors: Vec<&str> = doc.anchors.iter().map(String::as_str).collect();
    assert_eq!(
        anchors,
        [
            "-t-words",
            "faults",
            "faults-1",
            "files-the-page-json-and-csv",
            "sharded-conversion-many-nodes-the-same-trace",
            "title"
        ]
    );
}

/// The check itself finds each kind of broken link, and none in code.
#[test]
fn broken_links_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("docs")).unwrap();
    std::fs::write(root.join("docs/page.md"), "# Page\n\n## A part\n").unwrap();
    std::fs::write(root.join("image.png"), b"").unwrap();
    std::fs::write(
        root.join("README.md"),
        "# Read me\n\n\
         [good](docs/page.md) [good anchor](docs/page.md#a-part) [here](#read-me) \
         ![image](image.png) [web](https://example.org/x.md) [dir](docs/)\n\n\
         [missing](docs/none.md)\n\n\
         [bad anchor](docs/page.md#b-part)\n\n\
         [outside](../elsewhere.md)\n\n\
         `[code](docs/none.md)`\n\n\
         ```\n[block](docs/none.md)\n```\n\n\
         [ref]\n\n\
         [ref]: docs/gone.md\n",
    )
    .unwrap();
    let files = markdown_files(root);
    let broken = broken_links(root, &files);
    let said: Vec<&str> = broken
        .iter()
        .map(|b| b.split(": ").nth(1).unwrap_or(""))
        .collect();
    assert_eq!(
        said,
        [
            "docs/none.md",
            "docs/page.md#b-part",
            "../elsewhere.md",
            "docs/gone.md"
        ],
        "{broken:#?}"
    );
}
