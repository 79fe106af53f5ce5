//! The `MPI_*` tables (nsys 2024+; absent before): calls by family, ranks and
//! communicators. 2022-era reports record MPI as an NVTX domain instead.

use std::collections::HashMap;

use crate::ids::pid_of;
use crate::{Export, ReadError, RowView, TableScan};

pub const P2P: &str = "MPI_P2P_EVENTS";
pub const COLLECTIVES: &str = "MPI_COLLECTIVES_EVENTS";
pub const START_WAIT: &str = "MPI_START_WAIT_EVENTS";
pub const OTHER: &str = "MPI_OTHER_EVENTS";
pub const RANKS: &str = "MPI_RANKS";
pub const COMMUNICATORS: &str = "MPI_COMMUNICATORS";

/// Which table a call came from, with the fields only that table has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpiDetail {
    P2p {
        comm: Option<i64>,
        tag: Option<i64>,
        remote_rank: Option<i64>,
        size: Option<i64>,
        request: Option<i64>,
    },
    Collective {
        comm: Option<i64>,
        root: Option<i64>,
        size: Option<i64>,
        recv_size: Option<i64>,
        request: Option<i64>,
    },
    StartWait {
        request: Option<i64>,
    },
    Other,
}

#[derive(Debug, Clone, Copy)]
pub struct MpiCall {
    pub start: i64,
    pub end: Option<i64>,
    pub global_tid: i64,
    pub name_id: Option<i64>,
    pub detail: MpiDetail,
}

/// A communicator as one rank saw it: its world ranks by local rank.
#[derive(Debug, Clone, Default)]
pub struct Communicator {
    pub handle: i64,
    pub uid: Option<i64>,
    pub members: Vec<i64>,
}

fn base(row: &RowView) -> Option<(i64, Option<i64>, i64, Option<i64>)> {
    Some((row.int(0)?, row.int(1), row.int(2)?, row.int(3)))
}

impl Export {
    pub fn has_mpi_tables(&self) -> bool {
        [P2P, COLLECTIVES, START_WAIT, OTHER]
            .iter()
            .any(|t| self.has_table(t))
    }

    /// Streams the calls of every MPI table (each table in turn).
    pub fn mpi_calls(
        &self,
        mut f: impl FnMut(&MpiCall) -> Result<(), ReadError>,
    ) -> Result<TableScan, ReadError> {
        let head = ["start", "end", "globalTid", "textId"];
        let with = |extra: &[&'static str]| -> Vec<&'static str> {
            head.iter().chain(extra).copied().collect()
        };
        let mut total = TableScan::default();
        let tables: [(&str, Vec<&str>); 4] = [
            (
                P2P,
                with(&["commHandle", "tag", "remoteRank", "size", "requestHandle"]),
            ),
            (
                COLLECTIVES,
                with(&[
                    "commHandle",
                    "rootRank",
                    "size",
                    "recvSize",
                    "requestHandle",
                ]),
            ),
            (START_WAIT, with(&["requestHandle"])),
            (OTHER, head.to_vec()),
        ];
        for (table, cols) in tables {
            let decode = |row: &RowView| {
                let (start, end, global_tid, name_id) = base(row)?;
                let at = |i: usize| row.int(4 + i);
                let detail = match table {
                    P2P => MpiDetail::P2p {
                        comm: at(0),
                        tag: at(1),
                        remote_rank: at(2),
                        size: at(3),
                        request: at(4),
                    },
                    COLLECTIVES => MpiDetail::Collective {
                        comm: at(0),
                        root: at(1),
                        size: at(2),
                        recv_size: at(3),
                        request: at(4),
                    },
                    START_WAIT => MpiDetail::StartWait { request: at(0) },
                    _ => MpiDetail::Other,
                };
                Some(MpiCall {
                    start,
                    end,
                    global_tid,
                    name_id,
                    detail,
                })
            };
            total.add(self.scan_rows(table, &cols, "1", decode, &mut f)?);
        }
        Ok(total)
    }

    /// pid → world rank, from `MPI_RANKS` (keyed by the thread that called MPI_Init).
    pub fn mpi_ranks(&self) -> Result<HashMap<u32, u32>, ReadError> {
        let mut ranks = HashMap::new();
        self.scan(RANKS, &["globalTid", "rank"], |row| {
            if let (Some(gtid), Some(rank)) = (row.int(0), row.int(1)) {
                if let Ok(rank) = u32::try_from(rank) {
                    ranks.entry(pid_of(gtid)).or_insert(rank);
                }
            }
            Ok(())
        })?;
        Ok(ranks)
    }

    /// Communicators by handle (members parsed from the `members` text list).
    pub fn mpi_communicators(&self) -> Result<HashMap<i64, Communicator>, ReadError> {
        let mut comms = HashMap::new();
        self.scan(
            COMMUNICATORS,
            &["commHandle", "commUid", "members"],
            |row| {
                if let Some(handle) = row.int(0) {
                    let members = row.text(2).map(|m| parse_members(&m)).unwrap_or_default();
                    comms.insert(
                        handle,
                        Communicator {
                            handle,
                            uid: row.int(1),
                            members,
                        },
                    );
                }
                Ok(())
            },
        )?;
        Ok(comms)
    }
}

/// `"0,1,2,3"`, `"[0, 1, 2]"` or `"0 1 2"` → world ranks.
fn parse_members(text: &str) -> Vec<i64> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|t| !t.is_empty())
        .filter_map(|t| t.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_members;

    #[test]
    fn member_lists_in_any_notation() {
        assert_eq!(parse_members("0,1,2,3"), vec![0, 1, 2, 3]);
        assert_eq!(parse_members("[4, 5]"), vec![4, 5]);
        assert_eq!(parse_members("6 7"), vec![6, 7]);
    }
}
