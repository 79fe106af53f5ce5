//! The GPipe schedule of [`SynthPipeline`]: when every stage computes and transfers each
//! micro-batch, on the job's common clock. Every rank computes the same schedule and writes its
//! own stage's part, so transfers line up across the rank files.

use crate::SynthPipeline;

/// Time between the job's clock origin and the first step (ns): after every process started
/// (150-250 ms into its session).
pub(crate) const FIRST_STEP_NS: i64 = 400_000_000;
/// After a stage's last backward kernel: its optimizer kernel and the slack before the next
/// step (ns).
const STEP_TAIL_NS: i64 = 500_000;
/// NCCL moves this many bytes per ns between neighbouring stages, after a fixed setup (ns).
const BYTES_PER_NS: i64 = 20;
const TRANSFER_SETUP_NS: i64 = 8_000;

/// What a stage does in one operation of the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipelineWork {
    Forward,
    Backward,
    /// `ncclSend` to the peer stage.
    Send,
    /// `ncclRecv` from the peer stage.
    Recv,
}

/// One operation of one stage, times relative to the step's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineOp {
    pub stage: u32,
    pub micro_batch: u32,
    pub work: PipelineWork,
    pub peer: Option<u32>,
    pub start: i64,
    pub end: i64,
}

/// Every operation of one step, in the order each stage runs them (stage by stage, in time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineSchedule {
    pub ops: Vec<PipelineOp>,
    /// From one step's start to the next's.
    pub period: i64,
}

impl PipelineSchedule {
    /// Stage `stage`'s operations in time order.
    pub fn of_stage(&self, stage: u32) -> impl Iterator<Item = &PipelineOp> + '_ {
        self.ops.iter().filter(move |op| op.stage == stage)
    }

    /// When step `step` starts on the job's clock.
    pub fn step_start(&self, step: u64) -> i64 {
        FIRST_STEP_NS + step as i64 * self.period
    }
}

impl SynthPipeline {
    /// A pipeline of `micro_batches` micro-batches of `forward_ns` each.
    pub fn new(micro_batches: u32) -> Self {
        Self {
            micro_batches,
            forward_ns: 400_000,
            activation_bytes: 4 << 20,
            slow_stage: None,
            slow_factor: 2,
        }
    }

    fn transfer_ns(&self) -> i64 {
        TRANSFER_SETUP_NS + self.activation_bytes / BYTES_PER_NS
    }

    fn forward_of(&self, stage: u32) -> i64 {
        match self.slow_stage {
            Some(slow) if slow == stage => self.forward_ns * self.slow_factor.max(1),
            _ => self.forward_ns,
        }
    }

    /// The schedule of one step of `stages` stages. A transfer's two kernels start when their
    /// stage's stream is free and both end `transfer_ns` after the later of the two starts.
    pub fn schedule(&self, stages: u32) -> PipelineSchedule {
        let stages = stages.max(1) as usize;
        let mut free = vec![0i64; stages];
        let mut ops: Vec<PipelineOp> = Vec::new();
        for backward in [false, true] {
            for m in 0..self.micro_batches {
                // Forward runs stage 0 → last, backward last → 0.
                let order: Vec<usize> = if backward {
                    (0..stages).rev().collect()
                } else {
                    (0..stages).collect()
                };
                let mut sent_at: Option<(usize, i64)> = None;
                for &s in &order {
                    if let Some((from, send_start)) = sent_at.take() {
                        let recv_start = free[s];
                        let end = send_start.max(recv_start) + self.transfer_ns();
                        let op = |stage: usize, work, peer: usize, start| PipelineOp {
                            stage: stage as u32,
                            micro_batch: m,
                            work,
                            peer: Some(peer as u32),
                            start,
                            end,
                        };
                        ops.push(op(from, PipelineWork::Send, s, send_start));
                        ops.push(op(s, PipelineWork::Recv, from, recv_start));
                        free[from] = end;
                        free[s] = end;
                    }
                    let duration = self.forward_of(s as u32) * if backward { 2 } else { 1 };
                    let start = free[s];
                    ops.push(PipelineOp {
                        stage: s as u32,
                        micro_batch: m,
                        work: if backward {
                            PipelineWork::Backward
                        } else {
                            PipelineWork::Forward
                        },
                        peer: None,
                        start,
                        end: start + duration,
                    });
                    free[s] = start + duration;
                    if s != *order.last().expect("at least one stage") {
                        sent_at = Some((s, free[s]));
                    }
                }
            }
        }
        // Each stage's operations in time order (a send and the next receive of a stage
        // never overlap: both wait for its stream).
        ops.sort_by_key(|op| (op.stage, op.start, op.end));
        let period = free.iter().copied().max().unwrap_or(0) + STEP_TAIL_NS;
        PipelineSchedule { ops, period }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two stages, two micro-batches: stage 1 waits for stage 0's first forward, stage 0 for
    /// stage 1's first backward; a transfer's kernels end together.
    #[test]
    fn gpipe_schedule_of_two_stages() {
        let p = SynthPipeline {
            forward_ns: 100,
            activation_bytes: 0,
            ..SynthPipeline::new(2)
        };
        let s = p.schedule(2);
        let x = TRANSFER_SETUP_NS;
        let stage1: Vec<_> = s.of_stage(1).map(|o| (o.work, o.start, o.end)).collect();
        use PipelineWork::*;
        assert_eq!(
            stage1,
            vec![
                (Recv, 0, 100 + x),
                (Forward, 100 + x, 200 + x),
                (Recv, 200 + x, 200 + 2 * x),
                (Forward, 200 + 2 * x, 300 + 2 * x),
                (Backward, 300 + 2 * x, 500 + 2 * x),
                (Send, 500 + 2 * x, 500 + 3 * x),
                (Backward, 500 + 3 * x, 700 + 3 * x),
                (Send, 700 + 3 * x, 700 + 4 * x),
            ]
        );
        let sends = s.ops.iter().filter(|o| o.work == Send).count();
        assert_eq!(sends, 4);
    }
}
