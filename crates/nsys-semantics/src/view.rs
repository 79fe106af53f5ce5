//! What a bundled Paraver view is for: each category declares its views (a
//! `.cfg` under `cfgs/`, embedded by `bundled_view!`, the question it answers,
//! what else it needs) in its [`crate::CategoryInfo`]; the views written beside
//! every trace and their index (`NAME.cfgs/INDEX.md`) are made from these
//! declarations, so a view no category declares is not bundled. Views of types
//! numbered from the data (NVTX domains, metrics keyed by name) are made from a
//! template, once per such type in the trace.

use crate::options::Category;

/// A view a category declares.
#[derive(Clone, Copy, Debug)]
pub struct View {
    /// Where it goes under the views directory: its `.cfg` under `cfgs/`; for a
    /// view made per type, the template under `cfgs/templates/`.
    pub path: &'static str,
    /// Its text (the template's, for a view made per type).
    pub text: &'static str,
    /// The question it answers, in one line; in a template, `{name}` stands for
    /// the name of the type's domain or metric.
    pub question: &'static str,
    /// Categories it needs besides the one that declares it: the view is written
    /// only for traces that have all of them.
    pub needs: &'static [Category],
    /// For a template: the types it is made for.
    pub per_type: Option<TypeFamily>,
    /// A histogram whose rows are GPU streams (its question is about kernels,
    /// copies or graphs): written for a trace, it lists only the trace's GPU
    /// stream rows, not every CPU thread as a row of zeros.
    pub gpu_stream_rows: bool,
}

/// The types a template is instantiated for.
#[derive(Clone, Copy, Debug)]
pub struct TypeFamily {
    /// Where the views go, under the views directory (`views/nvtx_domains`).
    pub dir: &'static str,
    /// The name of the domain or metric of a type of the trace, given its `.pcf`
    /// label; `None` for types of other families.
    pub name_of: fn(ty: u32, label: &str) -> Option<String>,
    /// Whether the file name starts with the type (`9406_sms_active.cfg`), as
    /// for metrics, whose names may repeat with another unit or port.
    pub numbered: bool,
}

/// Placeholders of a template: the type, its `.pcf` label, the instance's name.
pub const TEMPLATE_TYPE: &str = "@TYPE@";
pub const TEMPLATE_LABEL: &str = "@LABEL@";
pub const TEMPLATE_NAME: &str = "@NAME@";

/// A view of the workspace's `cfgs/`: `bundled_view!("views/kernels.cfg",
/// "question?")` is that `.cfg`'s [`View::new`], its text embedded at compile
/// time (the compiler finds the file, and a missing one fails the build); with a
/// third argument, a [`TypeFamily`], the template's [`View::per_type`].
macro_rules! bundled_view {
    ($path:literal, $question:expr $(,)?) => {
        $crate::view::View::new(
            $path,
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../cfgs/", $path)),
            $question,
        )
    };
    ($path:literal, $question:expr, $family:expr $(,)?) => {
        $crate::view::View::per_type(
            $path,
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../cfgs/", $path)),
            $question,
            $family,
        )
    };
}
pub(crate) use bundled_view;

impl View {
    /// The view at `path` under the views directory, with its text.
    pub const fn new(path: &'static str, text: &'static str, question: &'static str) -> View {
        View {
            path,
            text,
            question,
            needs: &[],
            per_type: None,
            gpu_stream_rows: false,
        }
    }

    /// The same view, written only when the trace also has `needs`.
    pub const fn needs(self, needs: &'static [Category]) -> View {
        View { needs, ..self }
    }

    /// The same view, a histogram whose rows are the trace's GPU streams.
    pub const fn on_gpu_streams(self) -> View {
        View {
            gpu_stream_rows: true,
            ..self
        }
    }

    /// A template (at `template` under `cfgs/`, with its text) made into one
    /// view per type of `family` in the trace.
    pub const fn per_type(
        template: &'static str,
        text: &'static str,
        question: &'static str,
        family: TypeFamily,
    ) -> View {
        View {
            path: template,
            text,
            question,
            needs: &[],
            per_type: Some(family),
            gpu_stream_rows: false,
        }
    }

    /// The question for an instance named `name` (templates), or as declared.
    pub fn question_for(&self, name: &str) -> String {
        self.question.replace("{name}", name)
    }
}

/// A file name made of `name`: lower-case ASCII letters and digits, other runs
/// of characters as one `_` (`SMs Active [Throughput %]` → `sms_active_throughput`).
pub fn file_stem(name: &str) -> String {
    let mut stem = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            stem.push(c.to_ascii_lowercase());
        } else if !stem.ends_with('_') {
            stem.push('_');
        }
    }
    let stem = stem.trim_matches('_');
    if stem.is_empty() {
        "unnamed".to_string()
    } else {
        stem.to_string()
    }
}

/// A metric's name from its label `PREFIX NAME [x SCALE]`: the label without
/// the prefix and the scale (`GPU metric SMs Active [Throughput %] x100` gives
/// `SMs Active [Throughput %]`).
pub(crate) fn metric_name(label: &str, prefix: &str) -> Option<String> {
    let name = label.strip_prefix(prefix)?;
    let unscaled = name
        .rsplit_once(" x")
        .filter(|(_, scale)| !scale.is_empty() && scale.bytes().all(|b| b.is_ascii_digit()))
        .map_or(name, |(base, _)| base);
    Some(unscaled.to_string())
}

/// The part of `label` between `prefix` and `suffix`, if it has both.
pub(crate) fn between(label: &str, prefix: &str, suffix: &str) -> Option<String> {
    label
        .strip_prefix(prefix)?
        .strip_suffix(suffix)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_stems_are_lower_case_words() {
        assert_eq!(
            file_stem("SMs Active [Throughput %]"),
            "sms_active_throughput"
        );
        assert_eq!(
            file_stem("Tensor Active / FP16 Active [Throughput %]"),
            "tensor_active_fp16_active_throughput"
        );
        assert_eq!(file_stem("my::Domain (v2)"), "my_domain_v2");
        assert_eq!(file_stem("ÉTÉ"), "t");
        assert_eq!(file_stem("***"), "unnamed");
    }

    #[test]
    fn questions_name_the_instance() {
        let v = View::per_type(
            "templates/x.cfg",
            "",
            "What is {name}?",
            TypeFamily {
                dir: "views/x",
                name_of: |_, l| Some(l.to_string()),
                numbered: false,
            },
        );
        assert_eq!(v.question_for("SM"), "What is SM?");
    }
}
