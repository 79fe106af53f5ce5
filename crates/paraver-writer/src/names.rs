//! Names as event values: interned per run, then given one global value per
//! (event type, name) that is stable across traces.
//!
//! A name's value is derived from a hash of the name, so the same kernel gets the
//! same value in tonight's trace and tomorrow's and one cfg can compare both. Values
//! stay within `1..=SMALL_SPACE` while a type has few names, because Paraver gives a
//! histogram one column per value only when the value range is at most 10,000;
//! collisions move a name to the next free value, taking names in sorted order so
//! the outcome does not depend on input order.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Values of a type with few names fall in `1..=SMALL_SPACE` (9000 · 1.05 < 10,000,
/// Paraver's limit for one histogram column per value).
pub const SMALL_SPACE: u64 = 9000;
/// Above this many names a type uses the whole positive int32 range instead.
pub const SMALL_SPACE_MAX_NAMES: usize = 3000;
const LARGE_SPACE: u64 = i32::MAX as u64;

/// The names one run uses, per event type, in first-use order. Saved (see
/// [`crate::saved`]) as the names of each type; the lookup is rebuilt.
#[derive(Default, Debug, Clone, Serialize, Deserialize)]
#[serde(from = "Vec<(u32, Vec<Box<str>>)>", into = "Vec<(u32, Vec<Box<str>>)>")]
pub struct NameTables {
    tables: Vec<(u32, Interner)>,
}

#[derive(Default, Debug, Clone)]
struct Interner {
    ids: FxHashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl From<NameTables> for Vec<(u32, Vec<Box<str>>)> {
    fn from(tables: NameTables) -> Self {
        tables
            .tables
            .into_iter()
            .map(|(ty, interner)| (ty, interner.names))
            .collect()
    }
}

impl From<Vec<(u32, Vec<Box<str>>)>> for NameTables {
    fn from(saved: Vec<(u32, Vec<Box<str>>)>) -> Self {
        let tables = saved
            .into_iter()
            .map(|(ty, names)| {
                let ids = names
                    .iter()
                    .enumerate()
                    .map(|(id, name)| (name.clone(), id as u32))
                    .collect();
                (ty, Interner { ids, names })
            })
            .collect();
        NameTables { tables }
    }
}

impl NameTables {
    /// Handle of `name` for event type `ty` (to use as `Value::Name`).
    pub fn intern(&mut self, ty: u32, name: &str) -> u32 {
        let table = match self.tables.iter().position(|(t, _)| *t == ty) {
            Some(i) => &mut self.tables[i].1,
            None => {
                self.tables.push((ty, Interner::default()));
                &mut self.tables.last_mut().expect("just pushed").1
            }
        };
        if let Some(&id) = table.ids.get(name) {
            return id;
        }
        let id = table.names.len() as u32;
        table.names.push(name.into());
        table.ids.insert(name.into(), id);
        id
    }

    /// Names of type `ty`, indexed by handle.
    pub fn names_of(&self, ty: u32) -> &[Box<str>] {
        self.tables
            .iter()
            .find(|(t, _)| *t == ty)
            .map(|(_, i)| i.names.as_slice())
            .unwrap_or(&[])
    }

    pub fn types(&self) -> impl Iterator<Item = u32> + '_ {
        self.tables.iter().map(|(t, _)| *t)
    }
}

/// The global value of every name of every type, and the per-run handle → value maps.
pub struct GlobalNames {
    /// Per type: value → name, sorted by value (the `.pcf` VALUES table).
    pub by_type: BTreeMap<u32, BTreeMap<i64, String>>,
}

/// Per run: for each type, the value of each handle.
#[derive(Default, Debug, Clone)]
pub struct HandleValues {
    tables: Vec<(u32, Vec<i64>)>,
}

impl HandleValues {
    /// Value of handle `id` of type `ty`. Panics only on a producer bug (a handle
    /// that was never interned).
    pub fn value(&self, ty: u32, id: u32) -> i64 {
        let (_, values) = self
            .tables
            .iter()
            .find(|(t, _)| *t == ty)
            .expect("name handle of a type the run never interned");
        values[id as usize]
    }

    /// Makes the name handles of `ty` resolve as those of `table` (a type that
    /// shares another's value table: producers intern its names under `table`).
    pub fn share(&mut self, ty: u32, table: u32) {
        let shared = self
            .tables
            .iter()
            .find(|(t, _)| *t == table)
            .map(|(_, values)| values.clone());
        if let Some(values) = shared {
            self.tables.retain(|(t, _)| *t != ty);
            self.tables.push((ty, values));
        }
    }
}

/// Values some names of a type must have (e.g. Extrae's MPI numbering), by type.
pub type Reserved<'r> = &'r dyn Fn(u32) -> Option<&'r [(i64, String)]>;

/// Gives every (type, name) of all runs its value; returns the global tables and,
/// for each run in order, its handle → value map. Names listed in `reserved` get
/// their listed value; other names avoid the reserved values.
pub fn assign_values<'a>(
    runs: impl IntoIterator<Item = &'a NameTables>,
    reserved: Reserved,
) -> (GlobalNames, Vec<HandleValues>) {
    let runs: Vec<&NameTables> = runs.into_iter().collect();
    let mut names_by_type: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for run in &runs {
        for (ty, table) in &run.tables {
            names_by_type
                .entry(*ty)
                .or_default()
                .extend(table.names.iter().map(|n| &**n));
        }
    }
    let mut value_of: BTreeMap<u32, FxHashMap<&str, i64>> = BTreeMap::new();
    let mut by_type = BTreeMap::new();
    for (ty, mut names) in names_by_type {
        names.sort_unstable();
        names.dedup();
        let values = values_for(&names, reserved(ty).unwrap_or(&[]));
        by_type.insert(
            ty,
            values
                .iter()
                .map(|(name, v)| (*v, name.to_string()))
                .collect(),
        );
        value_of.insert(ty, values.into_iter().collect());
    }
    let per_run = runs
        .iter()
        .map(|run| HandleValues {
            tables: run
                .tables
                .iter()
                .map(|(ty, table)| {
                    let map = &value_of[ty];
                    (*ty, table.names.iter().map(|n| map[&**n]).collect())
                })
                .collect(),
        })
        .collect();
    (GlobalNames { by_type }, per_run)
}

/// Values for sorted, distinct `names` of one type.
fn values_for<'a>(names: &[&'a str], reserved: &[(i64, String)]) -> Vec<(&'a str, i64)> {
    let space = if names.len() <= SMALL_SPACE_MAX_NAMES {
        SMALL_SPACE
    } else {
        LARGE_SPACE
    };
    // Slots are value - 1; reserved values are taken before any name is placed.
    let mut taken: rustc_hash::FxHashSet<u64> =
        reserved.iter().map(|(v, _)| (*v - 1) as u64).collect();
    names
        .iter()
        .map(|name| {
            if let Some((v, _)) = reserved.iter().find(|(_, n)| n == name) {
                return (*name, *v);
            }
            let mut slot = stable_hash(name) % space;
            while !taken.insert(slot) {
                slot = (slot + 1) % space;
            }
            (*name, slot as i64 + 1)
        })
        .collect()
}

/// FNV-1a, 64 bit, of the name's bytes: fixed forever, so values stay stable
/// across versions of the tool.
pub fn stable_hash(name: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = fnv::FnvHasher::default();
    h.write(name.as_bytes());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv_1a() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(stable_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(stable_hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(stable_hash("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn same_name_same_value_across_runs_and_orders() {
        let mut a = NameTables::default();
        let ka = a.intern(7, "gemm");
        a.intern(7, "axpy");
        let mut b = NameTables::default();
        b.intern(7, "axpy");
        let kb = b.intern(7, "gemm");
        let (global, maps) = assign_values([&a, &b], &|_| None);
        assert_eq!(maps[0].value(7, ka), maps[1].value(7, kb));
        let (global2, _) = assign_values([&b, &a], &|_| None);
        assert_eq!(global.by_type, global2.by_type);
        assert!(global.by_type[&7]
            .keys()
            .all(|v| (1..=SMALL_SPACE as i64).contains(v)));
    }

    #[test]
    fn reserved_names_keep_their_values_and_others_avoid_them() {
        let mut t = NameTables::default();
        let send = t.intern(5, "MPI_Send");
        let odd = t.intern(5, "MPI_Unknown_call");
        let table = vec![(1, "MPI_Send".to_string())];
        let (_, maps) = assign_values([&t], &|ty| (ty == 5).then_some(table.as_slice()));
        assert_eq!(maps[0].value(5, send), 1);
        assert_ne!(maps[0].value(5, odd), 1);
    }

    #[test]
    fn a_type_sharing_a_table_resolves_its_handles() {
        let mut t = NameTables::default();
        let main = t.intern(30, "main");
        let (_, mut maps) = assign_values([&t], &|_| None);
        maps[0].share(31, 30);
        assert_eq!(maps[0].value(31, main), maps[0].value(30, main));
    }

    #[test]
    fn collisions_get_distinct_values() {
        let mut t = NameTables::default();
        for i in 0..2500 {
            t.intern(1, &format!("kernel_{i}"));
        }
        let (global, _) = assign_values([&t], &|_| None);
        assert_eq!(global.by_type[&1].len(), 2500);
    }

    #[test]
    fn value_does_not_depend_on_other_names_without_collision() {
        let mut a = NameTables::default();
        a.intern(1, "only");
        let mut b = NameTables::default();
        b.intern(1, "only");
        b.intern(1, "another");
        let (ga, _) = assign_values([&a], &|_| None);
        let (gb, _) = assign_values([&b], &|_| None);
        let va = ga.by_type[&1].iter().find(|(_, n)| *n == "only").unwrap().0;
        let vb = gb.by_type[&1].iter().find(|(_, n)| *n == "only").unwrap().0;
        assert_eq!(va, vb);
    }
}
