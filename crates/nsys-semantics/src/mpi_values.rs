//! Extrae's MPI event numbering: which Paraver event type (50000001-50000005) and
//! which value an MPI call gets, plus the thread state Extrae's merger puts the thread
//! in during the call. Paraver views (`.cfg`) written for Extrae traces filter on these
//! numbers, so they must match Extrae exactly.
//!
//! Sources (read from `bsc-performance-tools/extrae` on GitHub):
//!
//! * values 0..=212 and their labels: `src/merger/paraver/MPI_EventEncoding.h`
//!   (enum `MPIVal`), commit `cafdc18715d7101a20029fb388bf73123917e52c`;
//! * value → type (class): the `event_mpit2prv` table in
//!   `src/merger/paraver/mpi_prv_events.c`, same commit. `MPITYPE_COMM`,
//!   `MPITYPE_GROUP`, `MPITYPE_TOPOLOGIES` and `MPITYPE_TYPE` are all `#define`d to
//!   `MPITYPE_OTHER` (50000003);
//! * thread states: `Get_State()` and the `PRV_MPI_Event_Handlers` table in
//!   `src/merger/paraver/mpi_prv_semantics.c`, commit
//!   `d803bf923fc56152b284778d3064bbb355b4e2c2`; state numbers (`STATE_*`) from
//!   `src/common/events.h`, labels from `src/merger/paraver/labels.h`
//!   (commit `02099d27ca8ec16d93d3d774d81ce831f082fe03`), which also gives the
//!   50100001-50100004 labels (`MPI_GLOBAL_OP_*_LBL`);
//! * values 213..=219 (`MPI_Comm_create_group`, `MPI_Exscan`, `MPI_Iexscan`,
//!   `MPI_File_get_info`, `MPI_File_get_size`, `MPI_File_set_view`,
//!   `MPI_File_set_size`) are newer than any `MPI_EventEncoding.h` in the index; they
//!   come from BSC nsys2prv 0.5.8 (`nsys2prv/semantics/mpi_event_encoding.py`, a copy
//!   of a newer Extrae header). Their classes and states are inferred from their
//!   siblings (Scan → collective, File_* → I/O, Comm_* → other).
//!
//! Deliberate differences from the label text in Extrae's own files:
//!
//! * Extrae's `MPI_EventEncoding.h` defines `MPI_WIN_START_LABEL` as
//!   `"MPI_Win_complete"` and `MPI_WIN_COMPLETE_LABEL` as `"MPI_Win_start"`. Its tracer
//!   still emits `MPI_WIN_START_VAL` (69) for `MPI_Win_start` and 70 for
//!   `MPI_Win_complete`, so Extrae's .pcf mislabels both. Here 69 is `MPI_Win_start`
//!   and 70 is `MPI_Win_complete`, following the enum, which is what the numbers mean.
//!   (BSC nsys2prv copied the swapped labels and maps names to values *by label*, so
//!   it writes 70 for `MPI_Win_start` and 69 for `MPI_Win_complete`.)
//! * Extrae's `mpi_prv_val_label` lists value 160 twice (`MPI_Iallgather` and
//!   `MPI_IALLGATHERV_LABEL`) and 161 never, so its .pcf labels 161 as `(null)`. Here
//!   161 is `MPI_Iallgatherv`.
//!
//! `MPI_Init_thread` has no value of its own: Extrae traces it as `MPI_INIT_EV`, so
//! [`lookup`] maps it to `MPI_Init` (31).

use std::collections::HashMap;
use std::sync::OnceLock;

/// Extrae's MPI call classes, one Paraver event type each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MpiClass {
    /// 50000001 "MPI Point-to-point" (`MPITYPE_PTOP`).
    PointToPoint,
    /// 50000002 "MPI Collective Comm" (`MPITYPE_COLLECTIVE`).
    Collective,
    /// 50000003 "MPI Other" (`MPITYPE_OTHER`, also communicators, groups, topologies
    /// and datatypes).
    Other,
    /// 50000004 "MPI One-sided" (`MPITYPE_RMA`).
    OneSided,
    /// 50000005 "MPI I/O" (`MPITYPE_IO`).
    Io,
}

impl MpiClass {
    /// Every class, in event-type order.
    pub const ALL: [MpiClass; 5] = [
        MpiClass::PointToPoint,
        MpiClass::Collective,
        MpiClass::Other,
        MpiClass::OneSided,
        MpiClass::Io,
    ];

    /// The Paraver event type Extrae writes for calls of this class.
    pub fn event_type(self) -> u32 {
        match self {
            MpiClass::PointToPoint => nsys2prv_events::MPI_POINT_TO_POINT,
            MpiClass::Collective => nsys2prv_events::MPI_COLLECTIVE,
            MpiClass::Other => nsys2prv_events::MPI_OTHER,
            MpiClass::OneSided => nsys2prv_events::MPI_ONE_SIDED,
            MpiClass::Io => nsys2prv_events::MPI_IO,
        }
    }

    /// The event type's .pcf label (`MPITYPE_*_LABEL`).
    pub fn label(self) -> &'static str {
        match self {
            MpiClass::PointToPoint => "MPI Point-to-point",
            MpiClass::Collective => "MPI Collective Comm",
            MpiClass::Other => "MPI Other",
            MpiClass::OneSided => "MPI One-sided",
            MpiClass::Io => "MPI I/O",
        }
    }
}

/// One MPI call Extrae knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpiCall {
    /// The event value (`MPI_*_VAL`); 0 is the end of any call.
    pub value: i64,
    /// The call's name, as Extrae labels it.
    pub name: &'static str,
    pub class: MpiClass,
    /// The thread state Extrae's merger sets during the call (see [`state_of`]).
    pub state: u32,
}

/// Value that ends a call ("End" in `MPI_EventEncoding.h`).
#[allow(dead_code)] // reference data, not every caller needs it
pub const END_VALUE: i64 = 0;
/// The label Extrae's .pcf gives value 0 in every MPI type block.
#[allow(dead_code)] // reference data, not every caller needs it
pub const OUTSIDE_MPI_LABEL: &str = "Outside MPI";

pub use nsys2prv_events::MPI_SEND_SIZE_IN_COLLECTIVE as SEND_SIZE_IN_COLLECTIVE;
/// `MPI_GLOBAL_OP_RECVSIZE`.
pub const RECV_SIZE_IN_COLLECTIVE: u32 = 50100002;
/// `MPI_GLOBAL_OP_ROOT`: 1 on the root of a rooted collective, else 0.
pub const ROOT_IN_COLLECTIVE: u32 = 50100003;
/// `MPI_GLOBAL_OP_COMM`: the communicator id.
#[allow(dead_code)] // reference data, not every caller needs it
pub const COMMUNICATOR_IN_COLLECTIVE: u32 = 50100004;

#[allow(dead_code)] // reference data, not every caller needs it
pub const SEND_SIZE_IN_COLLECTIVE_LABEL: &str = "Send Size in MPI Global OP";
#[allow(dead_code)] // reference data, not every caller needs it
pub const RECV_SIZE_IN_COLLECTIVE_LABEL: &str = "Recv Size in MPI Global OP";
#[allow(dead_code)] // reference data, not every caller needs it
pub const ROOT_IN_COLLECTIVE_LABEL: &str = "Root in MPI Global OP";
#[allow(dead_code)] // reference data, not every caller needs it
pub const COMMUNICATOR_IN_COLLECTIVE_LABEL: &str = "Communicator in MPI Global OP";

// Extrae's thread states, as its MPI merger names them (`STATE_*` in events.h):
// STATE_WAITMESS, STATE_SEND, STATE_BARRIER, STATE_PROBE, STATE_TWRECV ("Wait/WaitAll";
// Extrae also uses it for MPI_Test*), STATE_ISEND, STATE_IWAITMESS / STATE_IRECV,
// STATE_IO, STATE_BCAST, STATE_MIXED / STATE_INITFINI, STATE_SENDRECVOP,
// STATE_MEMORY_XFER (Extrae's MPI one-sided transfers).
use crate::types::state::{
    BLOCKING_SEND, GROUP_COMMUNICATION as GROUP_COMM, IMMEDIATE_RECEIVE as IMMEDIATE_RECV,
    IMMEDIATE_SEND, IO, MEMORY_TRANSFER, OTHERS, SEND_RECEIVE as SEND_RECV, SYNCHRONIZATION,
    TEST_PROBE, WAIT, WAITING_MESSAGE,
};

/// Every state an MPI call sets.
pub const STATES: &[u32] = &[
    WAITING_MESSAGE,
    BLOCKING_SEND,
    SYNCHRONIZATION,
    TEST_PROBE,
    WAIT,
    IMMEDIATE_SEND,
    IMMEDIATE_RECV,
    IO,
    GROUP_COMM,
    OTHERS,
    SEND_RECV,
    MEMORY_TRANSFER,
];

use MpiClass::{Collective as COL, Io as FIO, OneSided as RMA, Other as OTH, PointToPoint as P2P};

const fn call(value: i64, name: &'static str, class: MpiClass, state: u32) -> MpiCall {
    MpiCall {
        value,
        name,
        class,
        state,
    }
}

/// Every call Extrae knows, sorted by value.
///
/// States marked "(not traced)" are for calls Extrae's tracer never emits
/// (`-1` in `event_mpit2prv`); they follow the closest traced sibling, else 15.
pub const MPI_CALLS: &[MpiCall] = &[
    call(1, "MPI_Send", P2P, BLOCKING_SEND),
    call(2, "MPI_Recv", P2P, WAITING_MESSAGE),
    call(3, "MPI_Isend", P2P, IMMEDIATE_SEND),
    call(4, "MPI_Irecv", P2P, IMMEDIATE_RECV),
    call(5, "MPI_Wait", P2P, WAIT),
    call(6, "MPI_Waitall", P2P, WAIT),
    call(7, "MPI_Bcast", COL, GROUP_COMM),
    call(8, "MPI_Barrier", COL, SYNCHRONIZATION),
    call(9, "MPI_Reduce", COL, GROUP_COMM),
    call(10, "MPI_Allreduce", COL, GROUP_COMM),
    call(11, "MPI_Alltoall", COL, GROUP_COMM),
    call(12, "MPI_Alltoallv", COL, GROUP_COMM),
    call(13, "MPI_Gather", COL, GROUP_COMM),
    call(14, "MPI_Gatherv", COL, GROUP_COMM),
    call(15, "MPI_Scatter", COL, GROUP_COMM),
    call(16, "MPI_Scatterv", COL, GROUP_COMM),
    call(17, "MPI_Allgather", COL, GROUP_COMM),
    call(18, "MPI_Allgatherv", COL, GROUP_COMM),
    call(19, "MPI_Comm_rank", OTH, OTHERS),
    call(20, "MPI_Comm_size", OTH, OTHERS),
    call(21, "MPI_Comm_create", OTH, OTHERS),
    call(22, "MPI_Comm_dup", OTH, OTHERS),
    call(23, "MPI_Comm_split", OTH, OTHERS),
    call(24, "MPI_Comm_group", OTH, OTHERS),
    call(25, "MPI_Comm_free", OTH, OTHERS),
    call(26, "MPI_Comm_remote_group", OTH, OTHERS),
    call(27, "MPI_Comm_remote_size", OTH, OTHERS),
    call(28, "MPI_Comm_test_inter", OTH, OTHERS),
    call(29, "MPI_Comm_compare", OTH, OTHERS),
    call(30, "MPI_Scan", COL, GROUP_COMM),
    call(31, "MPI_Init", OTH, OTHERS),
    call(32, "MPI_Finalize", OTH, OTHERS),
    call(33, "MPI_Bsend", P2P, BLOCKING_SEND),
    call(34, "MPI_Ssend", P2P, BLOCKING_SEND),
    call(35, "MPI_Rsend", P2P, BLOCKING_SEND),
    call(36, "MPI_Ibsend", P2P, IMMEDIATE_SEND),
    call(37, "MPI_Issend", P2P, IMMEDIATE_SEND),
    call(38, "MPI_Irsend", P2P, IMMEDIATE_SEND),
    call(39, "MPI_Test", OTH, WAIT),
    call(40, "MPI_Cancel", P2P, OTHERS),
    call(41, "MPI_Sendrecv", P2P, SEND_RECV),
    call(42, "MPI_Sendrecv_replace", P2P, SEND_RECV),
    call(43, "MPI_Cart_create", OTH, OTHERS),
    call(44, "MPI_Cart_shift", OTH, OTHERS),
    call(45, "MPI_Cart_coords", OTH, OTHERS),
    call(46, "MPI_Cart_get", OTH, OTHERS),
    call(47, "MPI_Cart_map", OTH, OTHERS),
    call(48, "MPI_Cart_rank", OTH, OTHERS),
    call(49, "MPI_Cart_sub", OTH, OTHERS),
    call(50, "MPI_Cartdim_get", OTH, OTHERS),
    call(51, "MPI_Dims_create", OTH, OTHERS),
    call(52, "MPI_Graph_get", OTH, OTHERS),
    call(53, "MPI_Graph_map", OTH, OTHERS),
    call(54, "MPI_Graph_create", OTH, OTHERS),
    call(55, "MPI_Graph_neighbors", OTH, OTHERS),
    call(56, "MPI_Graphdims_get", OTH, OTHERS),
    call(57, "MPI_Graph_neighbors_count", OTH, OTHERS),
    call(58, "MPI_Topo_test", OTH, OTHERS),
    call(59, "MPI_Waitany", P2P, WAIT),
    call(60, "MPI_Waitsome", P2P, WAIT),
    call(61, "MPI_Probe", P2P, TEST_PROBE),
    call(62, "MPI_Iprobe", P2P, TEST_PROBE),
    call(63, "MPI_Win_create", RMA, OTHERS),
    call(64, "MPI_Win_free", RMA, OTHERS),
    call(65, "MPI_Put", RMA, MEMORY_TRANSFER),
    call(66, "MPI_Get", RMA, MEMORY_TRANSFER),
    call(67, "MPI_Accumulate", RMA, MEMORY_TRANSFER), // (not traced)
    call(68, "MPI_Win_fence", RMA, MEMORY_TRANSFER),
    // Extrae's header labels these two the other way round; see the module docs.
    call(69, "MPI_Win_start", RMA, OTHERS),
    call(70, "MPI_Win_complete", RMA, OTHERS),
    call(71, "MPI_Win_post", RMA, OTHERS),
    call(72, "MPI_Win_wait", RMA, WAIT),
    call(73, "MPI_Win_test", RMA, WAIT), // (not traced)
    call(74, "MPI_Win_lock", RMA, OTHERS),
    call(75, "MPI_Win_unlock", RMA, OTHERS),
    call(76, "MPI_Pack", OTH, OTHERS),
    call(77, "MPI_Unpack", OTH, OTHERS),
    call(78, "MPI_Op_create", OTH, OTHERS),
    call(79, "MPI_Op_free", OTH, OTHERS),
    call(80, "MPI_Reduce_scatter", COL, GROUP_COMM),
    call(81, "MPI_Attr_delete", OTH, OTHERS),
    call(82, "MPI_Attr_get", OTH, OTHERS),
    call(83, "MPI_Attr_put", OTH, OTHERS),
    call(84, "MPI_Group_difference", OTH, OTHERS),
    call(85, "MPI_Group_excl", OTH, OTHERS),
    call(86, "MPI_Group_free", OTH, OTHERS),
    call(87, "MPI_Group_incl", OTH, OTHERS),
    call(88, "MPI_Group_intersection", OTH, OTHERS),
    call(89, "MPI_Group_rank", OTH, OTHERS),
    call(90, "MPI_Group_range_excl", OTH, OTHERS),
    call(91, "MPI_Group_range_incl", OTH, OTHERS),
    call(92, "MPI_Group_size", OTH, OTHERS),
    call(93, "MPI_Group_translate_ranks", OTH, OTHERS),
    call(94, "MPI_Group_union", OTH, OTHERS),
    call(95, "MPI_Group_compare", OTH, OTHERS),
    call(96, "MPI_Intercomm_create", OTH, OTHERS),
    call(97, "MPI_Intercomm_merge", OTH, OTHERS),
    call(98, "MPI_Keyval_free", OTH, OTHERS),
    call(99, "MPI_Keyval_create", OTH, OTHERS),
    call(100, "MPI_Abort", OTH, OTHERS),
    call(101, "MPI_Error_class", OTH, OTHERS),
    call(102, "MPI_Errhandler_create", OTH, OTHERS),
    call(103, "MPI_Errhandler_free", OTH, OTHERS),
    call(104, "MPI_Errhandler_get", OTH, OTHERS),
    call(105, "MPI_Error_string", OTH, OTHERS),
    call(106, "MPI_Errhandler_set", OTH, OTHERS),
    call(107, "MPI_Get_processor_name", OTH, OTHERS),
    call(108, "MPI_Initialized", OTH, OTHERS),
    call(109, "MPI_Wtick", OTH, OTHERS),
    call(110, "MPI_Wtime", OTH, OTHERS),
    call(111, "MPI_Address", OTH, OTHERS),
    call(112, "MPI_Bsend_init", P2P, IMMEDIATE_SEND),
    call(113, "MPI_Buffer_attach", OTH, OTHERS),
    call(114, "MPI_Buffer_detach", OTH, OTHERS),
    // MPI_PersistentRequest_Free_Event switches to STATE_TWRECV.
    call(115, "MPI_Request_free", OTH, WAIT),
    call(116, "MPI_Recv_init", P2P, IMMEDIATE_RECV),
    call(117, "MPI_Send_init", P2P, IMMEDIATE_SEND),
    call(118, "MPI_Get_count", OTH, OTHERS),
    call(119, "MPI_Get_elements", OTH, OTHERS),
    call(120, "MPI_Pack_size", OTH, OTHERS),
    call(121, "MPI_Rsend_init", P2P, IMMEDIATE_SEND),
    call(122, "MPI_Ssend_init", P2P, IMMEDIATE_SEND),
    call(123, "MPI_Start", OTH, OTHERS),
    call(124, "MPI_Startall", OTH, OTHERS),
    call(125, "MPI_Testall", OTH, WAIT),
    call(126, "MPI_Testany", OTH, WAIT),
    call(127, "MPI_Test_cancelled", OTH, OTHERS),
    call(128, "MPI_Testsome", OTH, WAIT),
    call(129, "MPI_Type_commit", OTH, OTHERS),
    call(130, "MPI_Type_contiguous", OTH, OTHERS),
    call(131, "MPI_Type_extent", OTH, OTHERS),
    call(132, "MPI_Type_free", OTH, OTHERS),
    call(133, "MPI_Type_hindexed", OTH, OTHERS),
    call(134, "MPI_Type_hvector", OTH, OTHERS),
    call(135, "MPI_Type_indexed", OTH, OTHERS),
    call(136, "MPI_Type_lb", OTH, OTHERS),
    call(137, "MPI_Type_size", OTH, OTHERS),
    call(138, "MPI_Type_struct", OTH, OTHERS),
    call(139, "MPI_Type_ub", OTH, OTHERS),
    call(140, "MPI_Type_vector", OTH, OTHERS),
    call(141, "MPI_File_open", FIO, IO),
    call(142, "MPI_File_close", FIO, IO),
    call(143, "MPI_File_read", FIO, IO),
    call(144, "MPI_File_read_all", FIO, IO),
    call(145, "MPI_File_write", FIO, IO),
    call(146, "MPI_File_write_all", FIO, IO),
    call(147, "MPI_File_read_at", FIO, IO),
    call(148, "MPI_File_read_at_all", FIO, IO),
    call(149, "MPI_File_write_at", FIO, IO),
    call(150, "MPI_File_write_at_all", FIO, IO),
    call(151, "MPI_Comm_spawn", OTH, OTHERS),
    call(152, "MPI_Comm_spawn_multiple", OTH, OTHERS),
    call(153, "MPI_Request_get_status", OTH, OTHERS),
    call(154, "MPI_Ireduce", COL, GROUP_COMM),
    call(155, "MPI_Iallreduce", COL, GROUP_COMM),
    call(156, "MPI_Ibarrier", COL, SYNCHRONIZATION),
    call(157, "MPI_Ibcast", COL, GROUP_COMM),
    call(158, "MPI_Ialltoall", COL, GROUP_COMM),
    call(159, "MPI_Ialltoallv", COL, GROUP_COMM),
    call(160, "MPI_Iallgather", COL, GROUP_COMM),
    // Extrae's label table never labels 161; see the module docs.
    call(161, "MPI_Iallgatherv", COL, GROUP_COMM),
    call(162, "MPI_Igather", COL, GROUP_COMM),
    call(163, "MPI_Igatherv", COL, GROUP_COMM),
    call(164, "MPI_Iscatter", COL, GROUP_COMM),
    call(165, "MPI_Iscatterv", COL, GROUP_COMM),
    call(166, "MPI_Ireduce_scatter", COL, GROUP_COMM),
    call(167, "MPI_Iscan", COL, GROUP_COMM),
    call(168, "MPI_Reduce_scatter_block", COL, GROUP_COMM),
    call(169, "MPI_Ireduce_scatter_block", COL, GROUP_COMM),
    call(170, "MPI_Alltoallw", COL, GROUP_COMM),
    call(171, "MPI_Ialltoallw", COL, GROUP_COMM),
    call(172, "MPI_Get_accumulate", RMA, MEMORY_TRANSFER),
    call(173, "MPI_Dist_graph_create", OTH, OTHERS),
    call(174, "MPI_Neighbor_allgather", COL, GROUP_COMM),
    call(175, "MPI_Ineighbor_allgather", COL, GROUP_COMM),
    call(176, "MPI_Neighbor_allgatherv", COL, GROUP_COMM),
    call(177, "MPI_Ineighbor_allgatherv", COL, GROUP_COMM),
    call(178, "MPI_Neighbor_alltoall", COL, GROUP_COMM),
    call(179, "MPI_Ineighbor_alltoall", COL, GROUP_COMM),
    call(180, "MPI_Neighbor_alltoallv", COL, GROUP_COMM),
    call(181, "MPI_Ineighbor_alltoallv", COL, GROUP_COMM),
    call(182, "MPI_Neighbor_alltoallw", COL, GROUP_COMM),
    call(183, "MPI_Ineighbor_alltoallw", COL, GROUP_COMM),
    call(184, "MPI_Fetch_and_op", RMA, MEMORY_TRANSFER),
    call(185, "MPI_Compare_and_swap", RMA, MEMORY_TRANSFER),
    call(186, "MPI_Win_flush", RMA, OTHERS),
    call(187, "MPI_Win_flush_all", RMA, OTHERS),
    call(188, "MPI_Win_flush_local", RMA, OTHERS),
    call(189, "MPI_Win_flush_local_all", RMA, OTHERS),
    call(190, "MPI_Mprobe", P2P, TEST_PROBE),
    call(191, "MPI_Improbe", P2P, TEST_PROBE),
    call(192, "MPI_Mrecv", P2P, WAITING_MESSAGE),
    call(193, "MPI_Imrecv", P2P, IMMEDIATE_RECV),
    call(194, "MPI_Comm_split_type", OTH, OTHERS),
    call(195, "MPI_File_write_all_begin", FIO, IO),
    call(196, "MPI_File_write_all_end", FIO, IO),
    call(197, "MPI_File_read_all_begin", FIO, IO),
    call(198, "MPI_File_read_all_end", FIO, IO),
    call(199, "MPI_File_write_at_all_begin", FIO, IO),
    call(200, "MPI_File_write_at_all_end", FIO, IO),
    call(201, "MPI_File_read_at_all_begin", FIO, IO),
    call(202, "MPI_File_read_at_all_end", FIO, IO),
    call(203, "MPI_File_read_ordered", FIO, IO),
    call(204, "MPI_File_read_ordered_begin", FIO, IO),
    call(205, "MPI_File_read_ordered_end", FIO, IO),
    call(206, "MPI_File_read_shared", FIO, IO),
    call(207, "MPI_File_write_ordered", FIO, IO),
    call(208, "MPI_File_write_ordered_begin", FIO, IO),
    call(209, "MPI_File_write_ordered_end", FIO, IO),
    call(210, "MPI_File_write_shared", FIO, IO),
    call(211, "MPI_Comm_dup_with_info", OTH, OTHERS),
    call(212, "MPI_Dist_graph_create_adjacent", OTH, OTHERS),
    // 213..=219: from nsys2prv's copy of a newer Extrae header (see the module docs).
    call(213, "MPI_Comm_create_group", OTH, OTHERS),
    call(214, "MPI_Exscan", COL, GROUP_COMM),
    call(215, "MPI_Iexscan", COL, GROUP_COMM),
    call(216, "MPI_File_get_info", FIO, IO),
    call(217, "MPI_File_get_size", FIO, IO),
    call(218, "MPI_File_set_view", FIO, IO),
    call(219, "MPI_File_set_size", FIO, IO),
];

/// Calls Extrae records under another call's value.
const ALIASES: &[(&str, &str)] = &[("mpi_init_thread", "mpi_init")];

/// Lower-case `mpi_*` form of a name: `PMPI_` becomes `MPI_`, and a trailing `_c`
/// (MPI-4 large-count variant) is dropped.
fn canonical(name: &str) -> String {
    let mut s = name.trim().to_ascii_lowercase();
    if s.starts_with("pmpi_") {
        s.remove(0);
    }
    if s.len() > "mpi_".len() + 2 && s.ends_with("_c") {
        s.truncate(s.len() - 2);
    }
    s
}

fn index() -> &'static HashMap<String, &'static MpiCall> {
    static INDEX: OnceLock<HashMap<String, &'static MpiCall>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut map: HashMap<String, &'static MpiCall> = MPI_CALLS
            .iter()
            .map(|c| (c.name.to_ascii_lowercase(), c))
            .collect();
        for (alias, target) in ALIASES {
            let call = map[*target];
            map.insert((*alias).to_string(), call);
        }
        map
    })
}

/// The call's Extrae value and class from its name ("MPI_Send", also "PMPI_Send",
/// case-insensitive, trailing "_c" large-count variants map to the base call).
/// `MPI_Init_thread` maps to `MPI_Init`, as Extrae traces it.
pub fn lookup(name: &str) -> Option<&'static MpiCall> {
    index().get(&canonical(name)).copied()
}

/// The call with this Extrae value.
#[allow(dead_code)] // reference data, not every caller needs it
pub fn by_value(value: i64) -> Option<&'static MpiCall> {
    MPI_CALLS
        .binary_search_by_key(&value, |c| c.value)
        .ok()
        .map(|i| &MPI_CALLS[i])
}

/// Collectives by base name (without `mpi_`, a leading `i` or a trailing `_init`).
const COLLECTIVE_BASES: &[&str] = &[
    "barrier",
    "bcast",
    "reduce",
    "allreduce",
    "reduce_scatter",
    "reduce_scatter_block",
    "gather",
    "gatherv",
    "allgather",
    "allgatherv",
    "scatter",
    "scatterv",
    "alltoall",
    "alltoallv",
    "alltoallw",
    "scan",
    "exscan",
    "neighbor_allgather",
    "neighbor_allgatherv",
    "neighbor_alltoall",
    "neighbor_alltoallv",
    "neighbor_alltoallw",
];

/// One-sided data movement, by exact base name (so `MPI_Get_count` is not one).
const RMA_TRANSFERS: &[&str] = &[
    "put",
    "get",
    "rput",
    "rget",
    "accumulate",
    "raccumulate",
    "get_accumulate",
    "rget_accumulate",
    "fetch_and_op",
    "compare_and_swap",
];

/// The base collective of a (possibly non-blocking or persistent) collective name.
fn collective_base(base: &str) -> Option<&'static str> {
    let b = base.strip_suffix("_init").unwrap_or(base);
    let find = |s: &str| COLLECTIVE_BASES.iter().copied().find(|c| *c == s);
    find(b).or_else(|| b.strip_prefix('i').and_then(find))
}

/// The base name (lower case, without `mpi_`), or `None` if it is not an MPI name.
fn base_of(canonical: &str) -> Option<&str> {
    canonical.strip_prefix("mpi_").filter(|b| !b.is_empty())
}

fn heuristic_class(base: &str) -> MpiClass {
    let first = base.split('_').next().unwrap_or(base);
    if base.starts_with("file_") {
        MpiClass::Io
    } else if base.starts_with("win_") || RMA_TRANSFERS.contains(&base) {
        MpiClass::OneSided
    } else if collective_base(base).is_some() {
        MpiClass::Collective
    } else if first.contains("send")
        || first.contains("recv")
        || first.contains("probe")
        || first.starts_with("wait")
    {
        MpiClass::PointToPoint
    } else {
        // Includes test*/request* names: Extrae files MPI_Test* and MPI_Request_*
        // under "MPI Other".
        MpiClass::Other
    }
}

/// A call Extrae does not know: class guessed from the name (File → Io,
/// Win/Put/Get/Accumulate/Rput/Rget/Fetch_and_op/Compare_and_swap → OneSided but not
/// MPI_Get_count, MPI_Get_processor_name or MPI_Get_version, collectives (also their
/// `I` and `_init` forms) → Collective, send/recv/probe/wait → PointToPoint, else
/// Other). A call Extrae knows gets its Extrae class.
pub fn guess_class(name: &str) -> MpiClass {
    if let Some(call) = lookup(name) {
        return call.class;
    }
    let canon = canonical(name);
    base_of(&canon).map_or(MpiClass::Other, heuristic_class)
}

/// Extrae's thread state for a call: 3 Waiting a message (blocking receive),
/// 4 Blocking Send, 5 Synchronization (barriers), 6 Test/Probe (probes),
/// 8 Wait/WaitAll (waits and, as in Extrae, tests), 10 Immediate Send,
/// 11 Immediate Receive, 12 I/O, 13 Group Communication (collectives),
/// 15 Others, 16 Send Receive, 17 Memory transfer (one-sided puts, gets, atomics and
/// fences: Extrae's `STATE_MEMORY_XFER`). Known calls follow Extrae's merger
/// (`Get_State` in `mpi_prv_semantics.c`); unknown calls follow their guessed class.
pub fn state_of(name: &str) -> u32 {
    if let Some(call) = lookup(name) {
        return call.state;
    }
    let canon = canonical(name);
    let Some(base) = base_of(&canon) else {
        return OTHERS;
    };
    let first = base.split('_').next().unwrap_or(base);
    match heuristic_class(base) {
        MpiClass::Io => IO,
        MpiClass::Collective => {
            if collective_base(base) == Some("barrier") {
                SYNCHRONIZATION
            } else {
                GROUP_COMM
            }
        }
        MpiClass::OneSided => {
            if base.starts_with("win_wait") || base.starts_with("win_test") {
                WAIT
            } else if RMA_TRANSFERS.contains(&base) || base == "win_fence" {
                MEMORY_TRANSFER
            } else {
                OTHERS
            }
        }
        MpiClass::PointToPoint => {
            let immediate = first.starts_with('i') || base.ends_with("_init");
            if first.contains("sendrecv") {
                SEND_RECV
            } else if first.contains("probe") {
                TEST_PROBE
            } else if first.starts_with("wait") {
                WAIT
            } else if first.contains("send") {
                if immediate {
                    IMMEDIATE_SEND
                } else {
                    BLOCKING_SEND
                }
            } else if first.contains("recv") {
                if immediate {
                    IMMEDIATE_RECV
                } else {
                    WAITING_MESSAGE
                }
            } else {
                OTHERS
            }
        }
        MpiClass::Other => {
            if first.starts_with("test") {
                WAIT
            } else {
                OTHERS
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_call_sets_a_listed_state() {
        for c in MPI_CALLS {
            assert!(STATES.contains(&c.state), "{}", c.name);
            assert!(STATES.contains(&state_of(c.name)), "{}", c.name);
        }
        for name in [
            "MPI_Foo",
            "MPI_File_x",
            "MPI_Win_wait_x",
            "MPI_Ibcast_x",
            "MPIX_Put",
        ] {
            assert!(STATES.contains(&state_of(name)), "{name}");
        }
    }

    fn value(name: &str) -> i64 {
        lookup(name)
            .unwrap_or_else(|| panic!("{name} unknown"))
            .value
    }

    #[test]
    fn well_known_values() {
        let expected = [
            ("MPI_Send", 1),
            ("MPI_Recv", 2),
            ("MPI_Isend", 3),
            ("MPI_Irecv", 4),
            ("MPI_Wait", 5),
            ("MPI_Waitall", 6),
            ("MPI_Bcast", 7),
            ("MPI_Barrier", 8),
            ("MPI_Reduce", 9),
            ("MPI_Allreduce", 10),
            ("MPI_Init", 31),
            ("MPI_Finalize", 32),
            ("MPI_Sendrecv", 41),
            ("MPI_Reduce_scatter", 80),
            ("MPI_File_open", 141),
            ("MPI_Ibarrier", 156),
            ("MPI_Comm_split_type", 194),
            ("MPI_Dist_graph_create_adjacent", 212),
        ];
        for (name, v) in expected {
            assert_eq!(value(name), v, "{name}");
        }
    }

    #[test]
    fn classes_follow_extrae() {
        let expected = [
            ("MPI_Send", MpiClass::PointToPoint),
            ("MPI_Wait", MpiClass::PointToPoint),
            ("MPI_Cancel", MpiClass::PointToPoint),
            ("MPI_Iprobe", MpiClass::PointToPoint),
            ("MPI_Send_init", MpiClass::PointToPoint),
            ("MPI_Test", MpiClass::Other),
            ("MPI_Testall", MpiClass::Other),
            ("MPI_Start", MpiClass::Other),
            ("MPI_Request_free", MpiClass::Other),
            ("MPI_Comm_rank", MpiClass::Other),
            ("MPI_Type_commit", MpiClass::Other),
            ("MPI_Allreduce", MpiClass::Collective),
            ("MPI_Ineighbor_alltoallw", MpiClass::Collective),
            ("MPI_Win_fence", MpiClass::OneSided),
            ("MPI_Get_accumulate", MpiClass::OneSided),
            ("MPI_File_read_at_all_end", MpiClass::Io),
        ];
        for (name, class) in expected {
            assert_eq!(lookup(name).unwrap().class, class, "{name}");
        }
    }

    #[test]
    fn win_start_and_complete_labelled_by_their_values() {
        assert_eq!(by_value(69).unwrap().name, "MPI_Win_start");
        assert_eq!(by_value(70).unwrap().name, "MPI_Win_complete");
        assert_eq!(value("MPI_Win_start"), 69);
        assert_eq!(value("MPI_Win_complete"), 70);
        assert_eq!(by_value(161).unwrap().name, "MPI_Iallgatherv");
    }

    #[test]
    fn iexscan_present() {
        let c = lookup("MPI_Iexscan").unwrap();
        assert_eq!((c.value, c.class), (215, MpiClass::Collective));
        assert_eq!(value("MPI_Exscan"), 214);
        assert_eq!(by_value(219).unwrap().name, "MPI_File_set_size");
    }

    #[test]
    fn pmpi_case_and_large_count() {
        assert_eq!(value("PMPI_Send"), 1);
        assert_eq!(value("mpi_send"), 1);
        assert_eq!(value("MPI_SEND"), 1);
        assert_eq!(value("pmpi_allreduce"), 10);
        assert_eq!(value(" MPI_Bcast "), 7);
        assert_eq!(value("MPI_Send_c"), 1);
        assert_eq!(value("PMPI_Allgatherv_c"), 18);
        assert_eq!(value("MPI_Iexscan_c"), 215);
        assert_eq!(lookup("MPI_Send_c").unwrap().name, "MPI_Send");
        assert!(lookup("MPI_Foo").is_none());
        assert!(lookup("").is_none());
        assert!(lookup("MPI_").is_none());
    }

    #[test]
    fn init_thread_is_traced_as_init() {
        let c = lookup("MPI_Init_thread").unwrap();
        assert_eq!((c.value, c.name), (31, "MPI_Init"));
        assert_eq!(value("PMPI_Init_thread"), 31);
        assert_eq!(value("MPI_Initialized"), 108);
    }

    #[test]
    fn guess_class_one_sided_vs_get_family() {
        assert_eq!(guess_class("MPI_Get_count"), MpiClass::Other);
        assert_eq!(guess_class("MPI_Get"), MpiClass::OneSided);
        // Unknown to Extrae: the heuristic must not treat these as one-sided.
        assert_eq!(guess_class("MPI_Get_version"), MpiClass::Other);
        assert_eq!(guess_class("MPI_Get_library_version"), MpiClass::Other);
        assert_eq!(guess_class("MPI_Get_elements_x"), MpiClass::Other);
        assert_eq!(guess_class("MPI_Get_address"), MpiClass::Other);
        assert_eq!(guess_class("MPI_Rget"), MpiClass::OneSided);
        assert_eq!(guess_class("MPI_Rput"), MpiClass::OneSided);
        assert_eq!(guess_class("MPI_Raccumulate"), MpiClass::OneSided);
        assert_eq!(guess_class("MPI_Rget_accumulate"), MpiClass::OneSided);
        assert_eq!(guess_class("MPI_Win_allocate_shared"), MpiClass::OneSided);
        assert_eq!(guess_class("PMPI_Win_lock_all"), MpiClass::OneSided);
    }

    #[test]
    fn guess_class_unknown_calls() {
        assert_eq!(guess_class("MPI_File_iread_at_all"), MpiClass::Io);
        assert_eq!(guess_class("MPI_File_seek"), MpiClass::Io);
        assert_eq!(guess_class("MPI_Allreduce_init"), MpiClass::Collective);
        assert_eq!(guess_class("MPI_Ibarrier_init_c"), MpiClass::Collective);
        assert_eq!(guess_class("MPI_Reduce_local"), MpiClass::Other);
        assert_eq!(guess_class("MPI_Isendrecv"), MpiClass::PointToPoint);
        assert_eq!(guess_class("MPI_Psend_init"), MpiClass::PointToPoint);
        assert_eq!(guess_class("MPI_Comm_idup"), MpiClass::Other);
        assert_eq!(guess_class("MPI_Request_get_status_any"), MpiClass::Other);
        assert_eq!(guess_class("MPI_Grequest_start"), MpiClass::Other);
        assert_eq!(guess_class("cudaMalloc"), MpiClass::Other);
    }

    #[test]
    fn states_follow_extrae_merger() {
        let expected = [
            ("MPI_Recv", 3),
            ("MPI_Mrecv", 3),
            ("MPI_Send", 4),
            ("MPI_Ssend", 4),
            ("MPI_Barrier", 5),
            ("MPI_Ibarrier", 5),
            ("MPI_Probe", 6),
            ("MPI_Improbe", 6),
            ("MPI_Wait", 8),
            ("MPI_Waitall", 8),
            ("MPI_Test", 8),
            ("MPI_Win_wait", 8),
            ("MPI_Request_free", 8),
            ("MPI_Isend", 10),
            ("MPI_Send_init", 10),
            ("MPI_Irecv", 11),
            ("MPI_Recv_init", 11),
            ("MPI_File_write_all", 12),
            ("MPI_Allreduce", 13),
            ("MPI_Ialltoallv", 13),
            ("MPI_Init", 15),
            ("MPI_Init_thread", 15),
            ("MPI_Comm_dup", 15),
            ("MPI_Cancel", 15),
            ("MPI_Start", 15),
            ("MPI_Win_start", 15),
            ("MPI_Sendrecv", 16),
            ("MPI_Sendrecv_replace", 16),
            ("MPI_Put", 17),
            ("MPI_Win_fence", 17),
            ("MPI_Compare_and_swap", 17),
        ];
        for (name, state) in expected {
            assert_eq!(state_of(name), state, "{name}");
        }
    }

    #[test]
    fn states_of_unknown_calls() {
        let expected = [
            ("MPI_Foo", 15),
            ("MPI_Barrier_init", 5),
            ("MPI_Allreduce_init", 13),
            ("MPI_File_iwrite", 12),
            ("MPI_Isendrecv", 16),
            ("MPI_Psend_init", 10),
            ("MPI_Precv_init", 11),
            ("MPI_Rput", 17),
            ("MPI_Win_lock_all", 15),
            ("MPI_Request_get_status_all", 15),
            ("not_mpi", 15),
        ];
        for (name, state) in expected {
            assert_eq!(state_of(name), state, "{name}");
        }
    }

    #[test]
    fn table_is_sorted_contiguous_and_unique() {
        assert_eq!(MPI_CALLS.len(), 219);
        for (i, c) in MPI_CALLS.iter().enumerate() {
            assert_eq!(c.value, i as i64 + 1, "{}", c.name);
            assert!(i32::try_from(c.value).is_ok());
            assert!(c.name.starts_with("MPI_"), "{}", c.name);
        }
        let values: HashSet<i64> = MPI_CALLS.iter().map(|c| c.value).collect();
        assert_eq!(values.len(), MPI_CALLS.len());
        assert!(!values.contains(&END_VALUE));
        let names: HashSet<String> = MPI_CALLS
            .iter()
            .map(|c| c.name.to_ascii_lowercase())
            .collect();
        assert_eq!(names.len(), MPI_CALLS.len());
        for c in MPI_CALLS {
            assert_eq!(lookup(c.name), Some(c));
            assert_eq!(by_value(c.value), Some(c));
            assert_eq!(guess_class(c.name), c.class);
            assert_eq!(state_of(c.name), c.state);
        }
        assert!(by_value(0).is_none());
        assert!(by_value(220).is_none());
    }

    #[test]
    fn every_class_has_calls() {
        for class in MpiClass::ALL {
            assert!(MPI_CALLS.iter().any(|c| c.class == class), "{class:?}");
        }
    }

    #[test]
    fn event_types_and_labels() {
        let types: Vec<u32> = MpiClass::ALL.iter().map(|c| c.event_type()).collect();
        assert_eq!(types, [50000001, 50000002, 50000003, 50000004, 50000005]);
        assert_eq!(MpiClass::Collective.label(), "MPI Collective Comm");
        assert_eq!(MpiClass::OneSided.label(), "MPI One-sided");
        assert_eq!(MpiClass::Io.label(), "MPI I/O");
        assert_eq!(OUTSIDE_MPI_LABEL, "Outside MPI");
        assert_eq!(
            [
                SEND_SIZE_IN_COLLECTIVE,
                RECV_SIZE_IN_COLLECTIVE,
                ROOT_IN_COLLECTIVE,
                COMMUNICATOR_IN_COLLECTIVE
            ],
            [50100001, 50100002, 50100003, 50100004]
        );
        assert_eq!(SEND_SIZE_IN_COLLECTIVE_LABEL, "Send Size in MPI Global OP");
        assert_eq!(RECV_SIZE_IN_COLLECTIVE_LABEL, "Recv Size in MPI Global OP");
        assert_eq!(ROOT_IN_COLLECTIVE_LABEL, "Root in MPI Global OP");
        assert_eq!(
            COMMUNICATOR_IN_COLLECTIVE_LABEL,
            "Communicator in MPI Global OP"
        );
    }
}
