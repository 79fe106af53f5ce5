//! The `.pcf` catalog: every type and state the categories of a registry declare
//! (numbers kept from BSC nsys2prv, so its views and BSC's analysis tools work;
//! state numbers from Extrae), plus the types numbered from the data of each
//! report.

use std::collections::{BTreeMap, BTreeSet};

use paraver_writer::{EventTypeInfo, PcfCatalog, ValueLabels};

use crate::options::Category;

use crate::registry::Registry;
use crate::report::ReportTranslation;
use crate::types::{extrae_states, state};

/// Every type and state the standard categories may emit, with its label.
pub fn pcf_catalog() -> PcfCatalog {
    catalog_of(&Registry::standard())
}

/// Every type and state `registry`'s categories declare: the types in registry
/// order; the states Idle and Running (every row has them) and those the
/// categories set, in Extrae's order.
pub fn catalog_of(registry: &Registry) -> PcfCatalog {
    let types: Vec<EventTypeInfo> = registry.iter().flat_map(|c| (c.event_types)()).collect();
    let declared = |id: u32| {
        id == state::IDLE || id == state::RUNNING || registry.iter().any(|c| c.states.contains(&id))
    };
    PcfCatalog {
        states: extrae_states()
            .into_iter()
            .filter(|s| declared(s.id))
            .collect(),
        types,
    }
}

/// The standard catalog plus the data-numbered types (NVTX domains) of every report.
pub fn catalog_for_reports(reports: &[ReportTranslation]) -> PcfCatalog {
    catalog_with_reports(&Registry::standard(), reports)
}

/// `registry`'s catalog plus the data-numbered types of every report. Two
/// different labels for one number (a hash collision between domain names) are
/// reported: their values share one type in the trace.
pub fn catalog_with_reports(registry: &Registry, reports: &[ReportTranslation]) -> PcfCatalog {
    let mut catalog = catalog_of(registry);
    let declared = catalog.types.len();
    for info in reports.iter().flat_map(|r| &r.extra_types) {
        let at = catalog.types.iter().position(|t| t.ty == info.ty);
        match at.map(|i| (i, &mut catalog.types[i])) {
            None => catalog.types.push(info.clone()),
            // NIC counters in BSC's numbering (9500 + index) take the types of
            // NCCL's ranges, which then have none ([`crate::metric_sets`]): the
            // report's label is the one.
            Some((i, known)) if i < declared && (9500..9600).contains(&info.ty) => {
                *known = info.clone();
            }
            // A report may know enum values the built-in table lacks.
            Some((_, known)) if known.label == info.label => merge_fixed_values(known, info),
            Some((_, known)) => tracing::warn!(
                "event type {} labels both '{}' and '{}' (their names hash alike); their values share the type",
                info.ty,
                known.label,
                info.label
            ),
        }
    }
    catalog
}

/// Which category writes each event type: the types the categories of
/// `registry` declare, and those their passes numbered from the data of `reports`
/// (NVTX domains, metrics keyed by name).
#[derive(Clone, Debug, Default)]
pub struct TypeOwners(BTreeMap<u32, Category>);

impl TypeOwners {
    pub fn of(registry: &Registry, reports: &[ReportTranslation]) -> TypeOwners {
        let mut owners = BTreeMap::new();
        for c in registry.iter() {
            owners.extend((c.event_types)().into_iter().map(|t| (t.ty, c.category)));
        }
        for report in reports {
            owners.extend(report.extra_type_categories.iter().copied());
        }
        TypeOwners(owners)
    }

    /// The categories of which a trace with event types `types` has events.
    pub fn categories_in(&self, types: &BTreeSet<u32>) -> BTreeSet<Category> {
        types
            .iter()
            .filter_map(|ty| self.0.get(ty).copied())
            .collect()
    }
}

fn merge_fixed_values(known: &mut EventTypeInfo, extra: &EventTypeInfo) {
    if let (ValueLabels::Fixed(table), ValueLabels::Fixed(more)) =
        (&mut known.values, &extra.values)
    {
        for (value, label) in more {
            if table.iter().all(|(v, _)| v != value) {
                table.push((*value, label.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_type_is_declared_once() {
        let catalog = pcf_catalog();
        let mut seen = HashSet::new();
        for t in &catalog.types {
            assert!(
                seen.insert(t.ty),
                "type {} ({}) declared twice",
                t.ty,
                t.label
            );
        }
    }

    #[test]
    fn states_are_those_declared() {
        let ids: Vec<u32> = pcf_catalog().states.iter().map(|s| s.id).collect();
        // Extrae's table has states no category sets (Not created, Profiling, ...).
        assert!(ids.contains(&state::IDLE) && ids.contains(&state::RUNNING));
        assert!(ids.contains(&state::MEMORY_TRANSFER) && ids.contains(&25));
        assert!(!ids.contains(&2) && !ids.contains(&18));
    }
}
