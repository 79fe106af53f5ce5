//! `--config FILE`: BSC nsys2prv 0.6's configuration file (TOML), read with
//! serde into what this tool does with it. Its keys:
//!
//! ```toml
//! source = "nsys"          # the only source
//! multi = true             # several reports are always merged (its -m)
//! clean = false            # its -c: remove the exports made for the run
//! [nsys]
//! force_export = false     # its --force-sqlite
//! [capabilities.nvtx]
//! default = "include"      # or "exclude": domains not listed are left out
//! base_event_type = 9600   # the default domain's type (only 9600 here)
//! project = false          # start/end ranges on the push/pop type
//! payload = { float_strategy = "scale", attach = true }
//! [capabilities.nvtx.domains.NAME]   # Default: ranges of no domain
//! event_type = 100500      # the domain's first type (ranges; payloads beside)
//! translate = true
//! payloads = true
//! project = true
//! payload = { float_strategy = "round" }
//! ```
//!
//! BSC 0.6.0rc1 reads only `capabilities.nvtx` and, of it, only `default`, the
//! domains' `event_type`, `translate` and `payloads` (it applies no
//! `float_strategy` or `project`, and fails on a domain without `translate` or
//! `payloads`): this tool gives every key the meaning its name and BSC's
//! example promise, and refuses a key (or a value) it cannot honour with one
//! line naming it, the file and the position.

use std::collections::BTreeMap;
use std::path::Path;

use nsys_semantics::nvtx_config::{DomainConfig, FloatStrategy, NvtxConfig, PayloadConfig};
use serde::Deserialize;
use toml::Spanned;

/// What a configuration file asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BscConfig {
    pub nvtx: NvtxConfig,
    /// `clean = true`: as `-c`.
    pub clean: bool,
    /// `[nsys] force_export = true`: as `--force-sqlite`.
    pub force_export: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    source: Option<Spanned<String>>,
    multi: Option<bool>,
    clean: Option<bool>,
    nsys: Option<NsysSection>,
    capabilities: Option<Capabilities>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NsysSection {
    force_export: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Capabilities {
    nvtx: Option<NvtxSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NvtxSection {
    default: Option<Spanned<String>>,
    payload: Option<PayloadSection>,
    project: Option<bool>,
    base_event_type: Option<Spanned<u32>>,
    domains: Option<BTreeMap<String, DomainSection>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PayloadSection {
    float_strategy: Option<Spanned<String>>,
    attach: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DomainSection {
    event_type: Option<u32>,
    translate: Option<bool>,
    payloads: Option<bool>,
    payload: Option<PayloadSection>,
    project: Option<bool>,
}

/// Reads `path`; every problem is a line `FILE:LINE:COLUMN: what`.
pub fn load(path: &Path) -> Result<BscConfig, Vec<String>> {
    let bytes = std::fs::read(path).map_err(|e| {
        vec![format!(
            "{}: cannot read the configuration: {e}",
            path.display()
        )]
    })?;
    from_bytes(path, &bytes)
}

/// The configuration `bytes` read from `path` (named in every problem, as by
/// [`load`]). The fuzz target `config` reads its inputs here, without a file.
pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<BscConfig, Vec<String>> {
    let text = std::str::from_utf8(bytes).map_err(|_| {
        // The words `std::fs::read_to_string` says it in.
        vec![format!(
            "{}: cannot read the configuration: stream did not contain valid UTF-8",
            path.display()
        )]
    })?;
    parse(text).map_err(|problems| {
        problems
            .into_iter()
            .map(|(span, what)| match span {
                Some(at) => {
                    let (line, column) = line_and_column(text, at);
                    format!("{}:{line}:{column}: {what}", path.display())
                }
                None => format!("{}: {what}", path.display()),
            })
            .collect()
    })
}

/// A problem and where in the text it is (byte offset).
type Problem = (Option<usize>, String);

fn parse(text: &str) -> Result<BscConfig, Vec<Problem>> {
    let file: File = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        let message = match message.strip_prefix("unknown field") {
            Some(rest) => format!("unknown key{rest} (BSC nsys2prv 0.6's keys that nsys2prv-rs reads; see `nsys2prv-rs --help`, BSC NSYS2PRV)"),
            None => message,
        };
        vec![(e.span().map(|s| s.start), message)]
    })?;
    let mut problems: Vec<Problem> = Vec::new();
    if let Some(source) = &file.source {
        if source.get_ref() != "nsys" {
            problems.push((
                Some(source.span().start),
                format!(
                    "source = \"{}\": the only source is \"nsys\"",
                    source.get_ref()
                ),
            ));
        }
    }
    // Several inputs are always merged, whatever `multi` says.
    let _ = file.multi;
    let mut config = BscConfig {
        nvtx: NvtxConfig::default(),
        clean: file.clean.unwrap_or(false),
        force_export: file.nsys.and_then(|n| n.force_export).unwrap_or(false),
    };
    if let Some(nvtx) = file.capabilities.and_then(|c| c.nvtx) {
        apply_nvtx(&mut config.nvtx, nvtx, &mut problems);
    }
    match problems.is_empty() {
        true => Ok(config),
        false => Err(problems),
    }
}

/// BSC's configuration over its defaults: what a domain does not say, it
/// takes from the section (`payload`, `project`) or, for `translate`, from
/// `default` (a listed domain is left out under "exclude" unless it says
/// `translate = true`).
fn apply_nvtx(config: &mut NvtxConfig, nvtx: NvtxSection, problems: &mut Vec<Problem>) {
    if let Some(default) = &nvtx.default {
        match default.get_ref().as_str() {
            "include" => config.include_unlisted = true,
            "exclude" => config.include_unlisted = false,
            other => problems.push((
                Some(default.span().start),
                format!("default = \"{other}\": \"include\" or \"exclude\""),
            )),
        }
    }
    if let Some(base) = &nvtx.base_event_type {
        if *base.get_ref() != 9600 {
            problems.push((
                Some(base.span().start),
                format!(
                    "base_event_type = {}: not supported: the default domain is 9600 here and other domains are numbered from it (set a domain's event_type instead)",
                    base.get_ref()
                ),
            ));
        }
    }
    if let Some(project) = nvtx.project {
        config.project = project;
    }
    if let Some(payload) = &nvtx.payload {
        if let Some(p) = payload_config(payload, problems) {
            config.payload = p;
        }
    }
    for domain in config.domains.values_mut() {
        // Under "exclude", a domain is translated only where the file says so.
        domain.translate = config.include_unlisted;
    }
    for (name, section) in nvtx.domains.unwrap_or_default() {
        let payload = section
            .payload
            .as_ref()
            .and_then(|p| payload_config(p, problems));
        let domain = config.domains.entry(name).or_insert(DomainConfig {
            event_type: None,
            translate: true,
            payloads: true,
            payload: None,
            project: None,
        });
        if let Some(ty) = section.event_type {
            domain.event_type = Some(ty);
        }
        domain.translate = section.translate.unwrap_or(config.include_unlisted);
        domain.payloads = section.payloads.unwrap_or(true);
        domain.payload = payload.or(domain.payload);
        domain.project = section.project.or(domain.project);
    }
}

fn payload_config(section: &PayloadSection, problems: &mut Vec<Problem>) -> Option<PayloadConfig> {
    if let Some(attach) = &section.attach {
        if !attach.get_ref() {
            problems.push((
                Some(attach.span().start),
                "attach = false: not supported: payloads are always written with their range's begin".into(),
            ));
        }
    }
    let strategy = section.float_strategy.as_ref()?;
    let float_strategy = match strategy.get_ref().as_str() {
        "scale" => FloatStrategy::Scale,
        "round" => FloatStrategy::Round,
        other => {
            problems.push((
                Some(strategy.span().start),
                format!("float_strategy = \"{other}\": not supported (\"scale\": x1000 on the payload x1000 type, or \"round\": on the integer payload type)"),
            ));
            return None;
        }
    };
    Some(PayloadConfig { float_strategy })
}

/// 1-based line and column (in characters) of byte `offset`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, text).unwrap();
        load(&path)
            .unwrap_err()
            .into_iter()
            .map(|p| p.replace(&path.display().to_string(), "c.toml"))
            .collect()
    }

    #[test]
    fn bscs_example_reads_with_its_meaning() {
        let text = r#"
source = "nsys"
multi = true
clean = false

[nsys]
force_export = true

[capabilities]

[capabilities.nvtx]
default = "include"
payload = { float_strategy = "round" }
project = false

[capabilities.nvtx.domains.domain1]
translate = true
project = true
payload.attach = true
event_type = 100500
payloads = true

[capabilities.nvtx.domains.Default]
translate = false
"#;
        let config = parse(text).unwrap();
        assert!(config.force_export && !config.clean);
        let nvtx = &config.nvtx;
        assert!(!nvtx.translates(""));
        assert_eq!(nvtx.event_type(""), Some(9600));
        assert_eq!(nvtx.event_type("domain1"), Some(100_500));
        assert!(nvtx.projects("domain1") && !nvtx.projects("other"));
        assert_eq!(nvtx.float_strategy("domain1"), FloatStrategy::Round);
        assert!(nvtx.translates("NCCL") && nvtx.translates("other"));
        assert_eq!(nvtx.event_type("neSmiK"), Some(81_000));
    }

    #[test]
    fn exclude_leaves_out_what_is_not_asked_for() {
        let config = parse(
            "[capabilities.nvtx]\ndefault = \"exclude\"\n[capabilities.nvtx.domains.app]\ntranslate = true\n[capabilities.nvtx.domains.other]\nevent_type = 12300\n",
        )
        .unwrap();
        let nvtx = &config.nvtx;
        assert!(nvtx.translates("app"));
        assert!(!nvtx.translates("other") && !nvtx.translates("x"));
        assert!(!nvtx.translates("") && !nvtx.translates("NCCL"));
    }

    #[test]
    fn an_empty_file_is_bscs_defaults() {
        assert_eq!(parse("").unwrap(), BscConfig::default());
    }

    #[test]
    fn unknown_keys_and_values_are_named_with_their_place() {
        let p = problems("[capabilities.nvtx]\ndefault = \"include\"\nstack = 3\n");
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("c.toml:3:1: unknown key `stack`"), "{p:?}");
        let p = problems("[capabilities.gpu_metrics]\nx = 1\n");
        assert!(
            p[0].starts_with("c.toml:1:15: unknown key `gpu_metrics`"),
            "{p:?}"
        );
        let p = problems(
            "[capabilities.nvtx]\ndefault = \"some\"\nbase_event_type = 9000\npayload = { float_strategy = \"fraction\", attach = false }\n",
        );
        assert_eq!(p.len(), 4, "{p:?}");
        assert!(p[0].starts_with("c.toml:2:11: default = \"some\""), "{p:?}");
        assert!(
            p[1].starts_with("c.toml:3:19: base_event_type = 9000"),
            "{p:?}"
        );
        assert!(p
            .iter()
            .any(|l| l.contains("float_strategy = \"fraction\"")));
        assert!(p.iter().any(|l| l.contains("attach = false")));
    }

    #[test]
    fn a_malformed_file_says_where() {
        let p = problems("[capabilities.nvtx\ndefault = 1\n");
        assert_eq!(p.len(), 1);
        assert!(p[0].starts_with("c.toml:1:"), "{p:?}");
        assert!(!p[0].contains('\n'));
        let p = problems("[capabilities.nvtx]\nproject = \"yes\"\n");
        assert!(p[0].starts_with("c.toml:2:11:"), "{p:?}");
    }
}
