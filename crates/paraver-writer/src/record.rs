//! The record model: small plain structs, never strings, until the writer formats them.

/// Index of a thread inside one run. Each run carries the table that maps it to a
/// global (task, thread), so producers never need the global layout.
pub type LocalThread = u32;

/// A thread whose records are dropped as they are added (a thread the trace
/// hides): record builders return at once for it.
pub const DISCARDED: LocalThread = LocalThread::MAX;

/// An event value: a plain number, or a handle into the run's name table for the
/// event type, resolved to a stable global value when the trace is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    Raw(i64),
    Name(u32),
}

/// One `type:value` pair of an event line. Laid out flat (16 bytes, not the 24 of a
/// type and a [`Value`]): pairs are most of a run's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventPair {
    pub ty: u32,
    is_name: bool,
    number: i64,
}

impl EventPair {
    pub fn new(ty: u32, value: Value) -> Self {
        match value {
            Value::Raw(v) => Self::raw(ty, v),
            Value::Name(h) => Self::name(ty, h),
        }
    }

    pub fn raw(ty: u32, value: i64) -> Self {
        EventPair {
            ty,
            is_name: false,
            number: value,
        }
    }

    pub fn name(ty: u32, handle: u32) -> Self {
        EventPair {
            ty,
            is_name: true,
            number: i64::from(handle),
        }
    }

    pub fn value(&self) -> Value {
        if self.is_name {
            Value::Name(self.number as u32)
        } else {
            Value::Raw(self.number)
        }
    }
}

/// A communication's payload, kept out of line so that records stay small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comm {
    pub send_physical: i64,
    pub receiver: LocalThread,
    pub recv_logical: i64,
    pub recv_physical: i64,
    pub size: i64,
    pub tag: i64,
}

/// A timed record of one thread (the run keeps each thread's records apart, so
/// the record does not say which). `time` is the primary time (begin of a
/// state, time of an event, logical send of a communication) in the run's own
/// clock. 24 bytes: records are the other half of a run's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub time: i64,
    pub body: Body,
}

/// No shared list of pairs (see [`Body::Events`]).
pub const NO_SHARED: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// State record covering `[time, end)`.
    State { end: i64, state: u32 },
    /// Event pairs: the run's shared list `shared` (one that many records
    /// repeat, stored and formatted once; [`NO_SHARED`] for none), then
    /// `pairs[first..first+count]` of the run; `closing` writes every value as
    /// 0 (the end of an interval that shares the pairs of its begin).
    Events {
        first: u32,
        count: u32,
        shared: u32,
        closing: bool,
    },
    /// Communication `comms[index]` of the run, sent by the record's thread.
    Comm { index: u32 },
}

impl Record {
    /// Order of records that share a time: communications, then interval ends, then
    /// begins and point events, then states (Extrae's convention; ends before begins
    /// so that back-to-back intervals do not clobber each other).
    pub fn rank(&self) -> u8 {
        match self.body {
            Body::Comm { .. } => 0,
            Body::Events { closing: true, .. } => 1,
            Body::Events { closing: false, .. } => 2,
            Body::State { .. } => 3,
        }
    }
}

// Records and pairs are what a run's memory holds: keep them this small.
const _: () = assert!(std::mem::size_of::<Record>() == 24);
const _: () = assert!(std::mem::size_of::<EventPair>() == 16);
