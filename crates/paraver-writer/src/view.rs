//! A record as the merge and the formatter see it: its body with what it points
//! into (pairs, shared lists, communications) resolved, whether the record is in
//! a run's memory, read back from a spilled chunk or gathered into a batch.

use crate::chunked::Pairs;
use crate::record::{Body, Comm, EventPair, LocalThread, NO_SHARED};

/// What a run's records point into: pairs, communications, shared lists.
#[derive(Clone, Copy)]
pub(crate) struct Payload<'a> {
    pub pairs: &'a Pairs,
    pub comms: &'a [Comm],
    pub shared: &'a [(u32, u32)],
}

/// A record of a run: time on the run's clock, run thread, rank (see
/// [`crate::record::Record::rank`]) and body.
pub(crate) struct Current<'s> {
    pub(crate) time: i64,
    pub(crate) thread: LocalThread,
    pub(crate) rank: u8,
    pub(crate) body: View<'s>,
}

/// A record's body with what it points into: a state's end (on the run's clock),
/// an event record's pairs, a communication.
pub(crate) enum View<'s> {
    State {
        end: i64,
        state: u32,
    },
    Events {
        closing: bool,
        pairs: EventPairs<'s>,
    },
    Comm(Comm),
}

/// The pairs of an event record: a list the run shares between records (with
/// its number in the run), then the record's own.
#[derive(Clone, Copy)]
pub(crate) struct EventPairs<'s> {
    pub shared: Option<(u32, &'s [EventPair])>,
    pub own: &'s [EventPair],
}

impl<'s> EventPairs<'s> {
    /// Pairs of the record's own only.
    #[inline]
    pub(crate) fn own(own: &'s [EventPair]) -> Self {
        EventPairs { shared: None, own }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.shared.map_or(0, |(_, s)| s.len()) + self.own.len()
    }

    /// Every pair, in order.
    #[inline]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &'s EventPair> {
        let shared: &'s [EventPair] = self.shared.map_or(&[], |(_, s)| s);
        shared.iter().chain(self.own.iter())
    }
}

impl<'s> View<'s> {
    /// A record's body, with what it points into. Always inlined: see
    /// `spill::encode_view`.
    #[inline(always)]
    pub(crate) fn of(body: Body, payload: &Payload<'s>) -> Self {
        match body {
            Body::State { end, state } => View::State { end, state },
            Body::Events {
                first,
                count,
                shared,
                closing,
            } => {
                let shared = (shared != NO_SHARED).then(|| {
                    let (first, count) = payload.shared[shared as usize];
                    (shared, payload.pairs.get(first, count))
                });
                View::Events {
                    closing,
                    pairs: EventPairs {
                        shared,
                        own: payload.pairs.get(first, count),
                    },
                }
            }
            Body::Comm { index } => View::Comm(payload.comms[index as usize]),
        }
    }
}
