//! Which NVTX domains are translated and on which event types: BSC nsys2prv
//! 0.6's `capabilities.nvtx` configuration (its `--config` TOML, read by the
//! command line), with its defaults. A shared piece: it names no category.

use std::collections::BTreeMap;

/// The domain of ranges that name none, as BSC's configuration calls it.
pub const DEFAULT_DOMAIN_NAME: &str = "Default";

/// BSC nsys2prv 0.6's NVTX configuration, as this tool applies it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NvtxConfig {
    /// Domains the configuration does not list: translated (BSC's `default =
    /// "include"`) or left out (`"exclude"`).
    pub include_unlisted: bool,
    /// The domains it lists, by name (`Default`: ranges of no domain).
    pub domains: BTreeMap<String, DomainConfig>,
    /// For domains that do not say.
    pub payload: PayloadConfig,
    /// Start/end ranges on the domain's push/pop type (BSC's `project`), for
    /// domains that do not say.
    pub project: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DomainConfig {
    /// First type of the domain's block (ranges; +1.. payloads, category,
    /// marks); `None`: numbered as a domain the configuration does not list.
    pub event_type: Option<u32>,
    pub translate: bool,
    /// Whether its ranges' payloads are written.
    pub payloads: bool,
    pub payload: Option<PayloadConfig>,
    pub project: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PayloadConfig {
    pub float_strategy: FloatStrategy,
}

/// How a floating-point payload becomes an event value (integers only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FloatStrategy {
    /// ×1000, on the domain's "payload x1000" type.
    Scale,
    /// Rounded to the nearest integer, on the domain's integer payload type.
    Round,
}

impl Default for NvtxConfig {
    /// BSC nsys2prv 0.6's defaults: every domain translated with its payloads;
    /// `Default` on 9600, `NCCL` on 9500, `neSmiK` on 81000. Start/end ranges
    /// keep lanes of their own (BSC projects them onto the push/pop type, where
    /// overlapping ranges clobber each other).
    fn default() -> Self {
        let domain = |event_type| DomainConfig {
            event_type: Some(event_type),
            translate: true,
            payloads: true,
            payload: None,
            project: None,
        };
        NvtxConfig {
            include_unlisted: true,
            domains: BTreeMap::from([
                (DEFAULT_DOMAIN_NAME.to_string(), domain(9600)),
                ("NCCL".to_string(), domain(9500)),
                ("neSmiK".to_string(), domain(81000)),
            ]),
            payload: PayloadConfig {
                float_strategy: FloatStrategy::Scale,
            },
            project: false,
        }
    }
}

impl NvtxConfig {
    /// The configuration of domain `name` (`""`: no domain).
    pub fn domain(&self, name: &str) -> Option<&DomainConfig> {
        self.domains.get(config_name(name))
    }

    /// Whether the ranges of domain `name` are translated.
    pub fn translates(&self, name: &str) -> bool {
        match self.domain(name) {
            Some(d) => d.translate,
            None => self.include_unlisted,
        }
    }

    /// Whether the payloads of domain `name`'s ranges are written.
    pub fn payloads(&self, name: &str) -> bool {
        self.domain(name).is_none_or(|d| d.payloads)
    }

    pub fn float_strategy(&self, name: &str) -> FloatStrategy {
        self.domain(name)
            .and_then(|d| d.payload)
            .unwrap_or(self.payload)
            .float_strategy
    }

    /// Whether domain `name`'s start/end ranges go on its push/pop type.
    pub fn projects(&self, name: &str) -> bool {
        self.domain(name)
            .and_then(|d| d.project)
            .unwrap_or(self.project)
    }

    /// The configured first type of domain `name`'s block.
    pub fn event_type(&self, name: &str) -> Option<u32> {
        self.domain(name).and_then(|d| d.event_type)
    }

    /// The configured blocks of `width` types, as (first type, domain).
    pub fn blocks(&self, width: u32) -> impl Iterator<Item = (std::ops::Range<u32>, &str)> {
        self.domains.iter().filter_map(move |(name, d)| {
            let t = d.event_type?;
            Some((t..t.saturating_add(width), name.as_str()))
        })
    }
}

/// The configuration's name of a domain: `Default` for ranges of no domain.
fn config_name(name: &str) -> &str {
    if name.is_empty() {
        DEFAULT_DOMAIN_NAME
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_bsc_06s() {
        let c = NvtxConfig::default();
        assert_eq!(c.event_type(""), Some(9600));
        assert_eq!(c.event_type("Default"), Some(9600));
        assert_eq!(c.event_type("NCCL"), Some(9500));
        assert_eq!(c.event_type("neSmiK"), Some(81000));
        assert_eq!(c.event_type("app"), None);
        assert!(c.translates("app") && c.payloads("app") && !c.projects("app"));
        assert_eq!(c.float_strategy("app"), FloatStrategy::Scale);
    }

    #[test]
    fn unlisted_domains_follow_the_default() {
        let mut c = NvtxConfig {
            include_unlisted: false,
            ..NvtxConfig::default()
        };
        c.domains.get_mut("NCCL").unwrap().translate = false;
        assert!(!c.translates("app"));
        assert!(!c.translates("NCCL"));
        assert!(c.translates(""));
    }
}
