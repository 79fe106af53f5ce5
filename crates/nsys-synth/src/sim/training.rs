//! The training loop of [`SynthTraining`]: what one process of a data-parallel PyTorch job
//! records per step, on top of the stream and thread model of [`ProcessSim`].
//!
//! NVTX ranges nest on each thread in program order (one stack serves every thread, as the
//! autograd thread runs while the main thread waits inside its "backward" range); each step's
//! ranges are written sorted by start, as the exporter orders rows.

use anyhow::Result;

use super::pipeline::{self, PipelineWork};
use super::ProcessSim;
use crate::activity::KernelNameIds;
use crate::catalog::{self, kernel, KernelDef};
use crate::nvtx::{NvtxRow, DOMAIN_CREATE, PUSH_POP, START_END};
use crate::strings::StringIds;
use crate::{SynthPipeline, SynthTraining};

/// Kernel families of a transformer training step. NCCL kernels are not in the name pool: their
/// names are NCCL's own few.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Gemm,
    Elementwise,
    Norm,
    Attention,
    Optimizer,
    Nccl,
}

use Family::{Attention, Elementwise, Gemm, Norm, Optimizer};

/// Families in the name pool, with their share of `kernel_names` in percent.
const POOL: [(Family, u32); 5] = [
    (Gemm, 40),
    (Elementwise, 30),
    (Norm, 10),
    (Attention, 10),
    (Optimizer, 10),
];

/// Launch shapes and typical durations (ns); the names of these defs are not written.
static GEMM: KernelDef = kernel(
    ["Kernel2"; 3],
    232,
    [[96, 8, 1], [128, 1, 1]],
    [0, 81920, 102400],
    150_000,
    1,
);
static ELEMENTWISE: KernelDef = kernel(
    ["vectorized_elementwise_kernel"; 3],
    24,
    [[8192, 1, 1], [128, 1, 1]],
    [0, 0, 8192],
    10_000,
    1,
);
static NORM: KernelDef = kernel(
    ["vectorized_layer_norm_kernel"; 3],
    40,
    [[4096, 1, 1], [256, 1, 1]],
    [0, 0, 16384],
    20_000,
    1,
);
static ATTENTION: KernelDef = kernel(
    ["flash_fwd_kernel"; 3],
    255,
    [[16, 32, 8], [128, 1, 1]],
    [0, 49152, 102400],
    250_000,
    1,
);
static OPTIMIZER: KernelDef = kernel(
    ["multi_tensor_apply_kernel"; 3],
    64,
    [[320, 1, 1], [512, 1, 1]],
    [0, 0, 8192],
    80_000,
    1,
);
static NCCL: KernelDef = kernel(
    ["ncclDevKernel_AllReduce_Sum_bf16_RING_LL"; 3],
    96,
    [[24, 1, 1], [640, 1, 1]],
    [0, 5264, 102400],
    0,
    1,
);

impl Family {
    fn def(self) -> &'static KernelDef {
        match self {
            Gemm => &GEMM,
            Elementwise => &ELEMENTWISE,
            Norm => &NORM,
            Attention => &ATTENTION,
            Optimizer => &OPTIMIZER,
            Family::Nccl => &NCCL,
        }
    }

    fn pool_index(self) -> usize {
        POOL.iter()
            .position(|&(f, _)| f == self)
            .expect("NCCL kernels are not pooled")
    }

    /// Short, demangled and mangled name of variant `v`: template arguments decoded from `v`
    /// digit by digit, and what is left of `v` as one more argument, so every variant differs.
    fn names(self, v: u32) -> [String; 3] {
        let mut digits = Digits(v);
        let (short, demangled) = match self {
            Gemm => {
                let m = digits.pick(&[64, 128, 256, 32]);
                let n = digits.pick(&[128, 64, 256, 32]);
                let k = digits.pick(&[32, 64]);
                let stages = digits.pick(&[3, 4, 5, 6]);
                let layout = digits.pick(&["tn", "nn", "nt", "tt"]);
                let align = digits.pick(&[8, 4, 2, 1]);
                let arch = digits.pick(&[80, 90, 86, 89]);
                let inner = format!(
                    "cutlass_{arch}_tensorop_bf16_s16816gemm_relu_bf16_{m}x{n}_{k}x{stages}_{layout}_align{align}{}",
                    digits.rest_suffix("_splitk")
                );
                (
                    "Kernel2".to_owned(),
                    format!("void cutlass::Kernel2<{inner}>({inner}::Params)"),
                )
            }
            Elementwise => {
                let functor = digits.pick(&ELEMENTWISE_FUNCTORS);
                let kind = digits.pick(&[
                    "vectorized_elementwise_kernel",
                    "unrolled_elementwise_kernel",
                ]);
                let vec = digits.pick(&[4, 8, 2]);
                let arity = digits.pick(&[2, 3, 1]);
                (
                    kind.to_owned(),
                    format!(
                        "void at::native::{kind}<(int){vec}, {functor}, at::detail::Array<char *, (int){arity}>{}>(int, T2, T3)",
                        digits.rest_argument()
                    ),
                )
            }
            Norm => {
                let kind = digits.pick(&NORM_KERNELS);
                let t = digits.pick(&["c10::BFloat16", "float", "c10::Half"]);
                let acc = digits.pick(&["float", "double"]);
                (
                    kind.to_owned(),
                    format!(
                        "void at::native::(anonymous namespace)::{kind}<{t}, {acc}{}>(int, {acc}, const {t} *, const {t} *, const {t} *, {acc} *, {acc} *, {t} *)",
                        digits.rest_argument()
                    ),
                )
            }
            Attention => {
                let kind = digits.pick(&FLASH_KERNELS);
                let d = digits.pick(&[128, 64, 96, 256]);
                let bm = digits.pick(&[128, 64]);
                let bn = digits.pick(&[64, 128, 32]);
                let warps = digits.pick(&[4, 8]);
                let causal = digits.pick(&[1, 0]);
                let traits = format!(
                    "Flash_fwd_kernel_traits<(int){d}, (int){bm}, (int){bn}, (int){warps}, (bool)0, (bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int){d}, (int){bm}, (int){bn}, (int){warps}, cutlass::bfloat16_t>>"
                );
                (
                    kind.to_owned(),
                    format!(
                        "void pytorch_flash::{kind}<{traits}, (bool){causal}, (bool)0, (bool)0, (bool)0, (bool)1, (bool)1, (bool)0, (bool)0{}>(Flash_fwd_params)",
                        digits.rest_argument()
                    ),
                )
            }
            Optimizer => {
                let functor =
                    digits.pick(&["FusedAdamMathFunctor", "L2NormFunctor", "ScaleFunctor"]);
                let t = digits.pick(&["float", "c10::BFloat16", "c10::Half"]);
                let lists = digits.pick(&[4, 5, 1, 2, 3]);
                let mode = digits.pick(&[1, 0]);
                (
                    "multi_tensor_apply_kernel".to_owned(),
                    format!(
                        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<(int){lists}>, at::native::(anonymous namespace)::{functor}<{t}, (int){lists}, (at::native::ADAM_MODE){mode}, (bool)0{}>, double *, double, double, double, double, double, bool, float *, float *>(T1, T2, T3...)",
                        digits.rest_argument()
                    ),
                )
            }
            Family::Nccl => {
                let t = digits.pick(&["bf16", "f32", "f16"]);
                let algorithm = digits.pick(&["RING", "TREE"]);
                let protocol = digits.pick(&["LL", "LL128", "SIMPLE"]);
                let name = format!("ncclDevKernel_AllReduce_Sum_{t}_{algorithm}_{protocol}");
                let demangled = format!("{name}(ncclDevKernelArgsStorage<(unsigned long)4096>)");
                (name, demangled)
            }
        };
        let mangled = mangle(&short, &demangled);
        [short, demangled, mangled]
    }
}

const ELEMENTWISE_FUNCTORS: [&str; 8] = [
    "at::native::CUDAFunctor_add<c10::BFloat16>",
    "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float>>",
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 4)]::operator ()() const::[lambda(c10::BFloat16) (instance 1)]",
    "at::native::FillFunctor<c10::BFloat16>",
    "at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, unsigned int, (int)1, (int)4, bool>",
    "at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float>>",
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]::operator ()() const::[lambda() (instance 12)]::operator ()() const::[lambda(c10::BFloat16) (instance 1)]",
    "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 4)]::operator ()() const::[lambda(c10::BFloat16, c10::BFloat16) (instance 1)]",
];

const NORM_KERNELS: [&str; 5] = [
    "vectorized_layer_norm_kernel",
    "layer_norm_grad_input_kernel_vectorized",
    "GammaBetaBackwardCUDAKernel_32x32",
    "RowwiseMomentsCUDAKernel",
    "cuComputePartGradGammaBeta",
];

const FLASH_KERNELS: [&str; 4] = [
    "flash_fwd_kernel",
    "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel",
    "flash_bwd_dot_do_o_kernel",
    "flash_bwd_convert_dq_kernel",
];

/// A plausible Itanium-style mangled name (not a faithful mangling: nothing demangles it).
fn mangle(short: &str, demangled: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in demangled.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("_Z{}{short}I{hash:016x}EvT_", short.len())
}

/// Mixed-radix digits of a variant number.
struct Digits(u32);

impl Digits {
    fn pick<T: Copy>(&mut self, choices: &[T]) -> T {
        let n = choices.len() as u32;
        let choice = choices[(self.0 % n) as usize];
        self.0 /= n;
        choice
    }

    /// What is left, as one more template argument (nothing when zero).
    fn rest_argument(&self) -> String {
        if self.0 == 0 {
            String::new()
        } else {
            format!(", (unsigned int){}", self.0)
        }
    }

    fn rest_suffix(&self, prefix: &str) -> String {
        if self.0 == 0 {
            String::new()
        } else {
            format!("{prefix}{}", self.0)
        }
    }
}

/// An operator of the model: its NVTX name and the kernels it launches.
type Operator = (&'static str, &'static [Family]);

const FORWARD: [Operator; 11] = [
    ("aten::layer_norm", &[Norm]),
    ("aten::linear", &[Gemm]),
    ("aten::scaled_dot_product_attention", &[Attention]),
    ("aten::linear", &[Gemm]),
    ("aten::dropout", &[Elementwise]),
    ("aten::add", &[Elementwise]),
    ("aten::layer_norm", &[Norm]),
    ("aten::linear", &[Gemm]),
    ("aten::gelu", &[Elementwise]),
    ("aten::linear", &[Gemm]),
    ("aten::add", &[Elementwise]),
];

const BACKWARD: [Operator; 10] = [
    ("AddBackward0", &[Elementwise]),
    ("LinearBackward0", &[Gemm, Gemm, Elementwise]),
    ("GeluBackward0", &[Elementwise]),
    ("LinearBackward0", &[Gemm, Gemm, Elementwise]),
    ("NativeLayerNormBackward0", &[Norm, Norm]),
    ("NativeDropoutBackward0", &[Elementwise]),
    ("LinearBackward0", &[Gemm, Gemm, Elementwise]),
    (
        "ScaledDotProductFlashAttentionBackward0",
        &[Attention, Attention, Elementwise],
    ),
    ("LinearBackward0", &[Gemm, Gemm, Elementwise]),
    ("NativeLayerNormBackward0", &[Norm, Norm, Elementwise]),
];

/// Ranges nested inside operators (dispatcher internals), deepest last.
const INNER: [&str; 8] = [
    "aten::addmm",
    "aten::_to_copy",
    "aten::empty_strided",
    "aten::copy_",
    "aten::contiguous",
    "aten::clone",
    "aten::mm",
    "aten::mul",
];

/// Operators that only change views: ranges without kernels.
const CPU_OPS: [&str; 8] = [
    "aten::view",
    "aten::reshape",
    "aten::transpose",
    "aten::t",
    "aten::expand",
    "aten::select",
    "aten::slice",
    "aten::as_strided",
];

/// The NVTX domain NCCL registers, per process; PyTorch's ranges are in the default domain (0).
const NCCL_DOMAIN: &str = "NCCL";
const NCCL_DOMAIN_ID: i64 = 1;
/// The kernel of NCCL's point-to-point operations.
const SEND_RECV: &str = "ncclDevKernel_SendRecv";
/// The job's one communicator (NCCL's `commHash`, the same on every rank) when the process is
/// part of a parallel job.
const JOB_COMMUNICATOR: i64 = 0x5eed_c0de_0001;
/// Gradient bucket size (PyTorch DDP's default 25 MiB); the last bucket of a step is smaller.
const BUCKET_BYTES: i64 = 25 << 20;
/// NCCL moves about this many bytes per ns on one node.
const NCCL_BYTES_PER_NS: i64 = 40;
/// A global batch of token ids and labels, copied in each step.
const BATCH_BYTES: i64 = 8 << 20;
/// `ENUM_CUDA_MEMCPY_OPER`: host to device, device to host.
const HOST_TO_DEVICE: usize = 1;
const DEVICE_TO_HOST: usize = 2;
/// Time between NVTX calls and the calls around them (ns).
const NVTX_CALL: (i64, i64) = (150, 700);
/// A range of a view operator that launches nothing lasts this long (ns).
const CPU_OP: (i64, i64) = (1_500, 6_000);

/// Time between the starts of two data-parallel steps on the job's clock: 5/4 of a step's
/// nominal GPU time, plus what is injected, plus 1 ms.
fn data_parallel_period(spec: &SynthTraining) -> i64 {
    let kernels = |ops: &[Operator]| -> i64 {
        ops.iter()
            .flat_map(|(_, families)| families.iter())
            .map(|f| f.def().duration)
            .sum()
    };
    let per_layer = kernels(&FORWARD) + kernels(&BACKWARD);
    let buckets = i64::from(spec.buckets.max(1));
    let per_bucket = OPTIMIZER.duration + 20_000 + BUCKET_BYTES / NCCL_BYTES_PER_NS;
    let nominal = i64::from(spec.layers) * per_layer + buckets * per_bucket + 1_000_000;
    let late = spec.parallel.late_rank.map_or(0, |l| l.late_ns) * buckets;
    nominal * 5 / 4 + spec.parallel.host_gap_ns + spec.parallel.stream_wait_ns + late + 1_000_000
}

/// StringIds of every name the training loop writes.
pub(crate) struct TrainingNames {
    step: i64,
    data_load: i64,
    forward: i64,
    loss: i64,
    backward: i64,
    optimizer: i64,
    layers: Vec<i64>,
    layers_backward: Vec<i64>,
    forward_ops: Vec<i64>,
    backward_ops: Vec<i64>,
    inner: Vec<i64>,
    cpu_ops: Vec<i64>,
    all_reduce: i64,
    epochs: Vec<i64>,
    /// Per pooled family (in `POOL` order), its distinct names.
    pool: Vec<Vec<KernelNameIds>>,
    /// The short names of `pool`.
    pool_short: Vec<Vec<String>>,
    nccl: Vec<KernelNameIds>,
    /// Interned only for a pipeline, so that other loops' string ids stay as they were.
    pipeline: Option<PipelineNames>,
    /// `cudaStreamWaitEvent`, interned only for `stream_wait_ns` (after every other name).
    stream_wait: Option<i64>,
}

/// Names a pipeline stage writes besides the loop's.
pub(crate) struct PipelineNames {
    send: i64,
    recv: i64,
    send_recv: KernelNameIds,
}

fn intern_kernel(
    strings: &mut StringIds,
    [short, demangled, mangled]: [String; 3],
) -> KernelNameIds {
    KernelNameIds {
        short: strings.intern(&short),
        demangled: strings.intern(&demangled),
        mangled: strings.intern(&mangled),
    }
}

impl TrainingNames {
    pub(crate) fn intern(strings: &mut StringIds, training: &SynthTraining) -> Self {
        let mut intern_all = |names: &[&str]| -> Vec<i64> {
            names.iter().map(|name| strings.intern(name)).collect()
        };
        let forward_ops = intern_all(&FORWARD.map(|(name, _)| name));
        let backward_ops = intern_all(&BACKWARD.map(|(name, _)| name));
        let inner = intern_all(&INNER);
        let cpu_ops = intern_all(&CPU_OPS);
        let epochs = training.steps.div_ceil(training.steps_per_epoch.max(1));
        let total = training.kernel_names.max(POOL.len() as u32);
        let mut pool_short = Vec::new();
        let pool = POOL
            .iter()
            .map(|&(family, percent)| {
                let size = (total * percent / 100).max(1);
                let names: Vec<[String; 3]> = (0..size).map(|v| family.names(v)).collect();
                pool_short.push(names.iter().map(|n| n[0].clone()).collect());
                names
                    .into_iter()
                    .map(|n| intern_kernel(strings, n))
                    .collect()
            })
            .collect();
        Self {
            step: strings.intern("train_step"),
            data_load: strings.intern("data_load"),
            forward: strings.intern("forward"),
            loss: strings.intern("loss"),
            backward: strings.intern("backward"),
            optimizer: strings.intern("optimizer.step#AdamW.step"),
            layers: (0..training.layers)
                .map(|l| strings.intern(&format!("model.layers.{l}")))
                .collect(),
            layers_backward: (0..training.layers)
                .map(|l| strings.intern(&format!("model.layers.{l}.backward")))
                .collect(),
            forward_ops,
            backward_ops,
            inner,
            cpu_ops,
            all_reduce: strings.intern("ncclAllReduce"),
            epochs: (0..epochs)
                .map(|e| strings.intern(&format!("epoch {e}")))
                .collect(),
            pool,
            pool_short,
            nccl: (0..18)
                .map(|v| intern_kernel(strings, Family::Nccl.names(v)))
                .collect(),
            pipeline: training.parallel.pipeline.as_ref().map(|_| PipelineNames {
                send: strings.intern("ncclSend"),
                recv: strings.intern("ncclRecv"),
                send_recv: intern_kernel(
                    strings,
                    [
                        SEND_RECV.to_owned(),
                        format!("{SEND_RECV}(ncclDevKernelArgsStorage<(unsigned long)4096>)"),
                        mangle(SEND_RECV, SEND_RECV),
                    ],
                ),
            }),
            stream_wait: (training.parallel.stream_wait_ns > 0)
                .then(|| strings.intern(catalog::STREAM_WAIT_EVENT)),
        }
    }
}

/// What a process of the training job needs: the loop's shape and names.
#[derive(Clone, Copy)]
pub(crate) struct Training<'a> {
    pub spec: &'a SynthTraining,
    pub names: &'a TrainingNames,
}

/// A push/pop range still open.
struct OpenRange {
    thread: usize,
    start: i64,
    text_id: i64,
    domain_id: i64,
    json: Option<String>,
}

/// The loop's own state next to the process model.
#[derive(Default)]
pub(crate) struct LoopState {
    open: Vec<OpenRange>,
    /// Finished ranges of the current step, and whether each is an NCCL one.
    finished: Vec<(NvtxRow, bool)>,
    /// How many kernels of each pooled family were launched: the next name to use.
    launched: [u32; POOL.len()],
    all_reduces: u64,
}

/// The streams a training process uses: compute, NCCL, copies (created streams when there are
/// enough, else the compute one).
#[derive(Clone, Copy)]
struct Lanes {
    compute: usize,
    nccl: usize,
    copy: usize,
}

impl ProcessSim<'_, '_> {
    fn training_lanes(&self) -> Lanes {
        let created: Vec<usize> = (0..self.lanes.len())
            .filter(|&l| !self.lanes[l].is_null_stream)
            .collect();
        let compute = created.first().copied().unwrap_or(0);
        Lanes {
            compute,
            nccl: created.get(1).copied().unwrap_or(compute),
            copy: created.get(2).copied().unwrap_or(compute),
        }
    }

    /// Runs every step of the loop.
    pub(super) fn train(&mut self, training: Training<'_>) -> Result<()> {
        let main = 0;
        self.define_nccl_domain(main)?;
        let lanes = self.training_lanes();
        let spec = training.spec;
        let mut epoch_start = None;
        for step in 0..spec.steps {
            if step % spec.steps_per_epoch == 0 {
                self.close_epoch(training, main, step, epoch_start.take())?;
                epoch_start = Some(self.nvtx_time(main));
            }
            match &spec.parallel.pipeline {
                Some(pipeline) => self.pipeline_step(training, pipeline, lanes, step)?,
                None => {
                    self.align_step(spec, step);
                    self.step(training, lanes)?
                }
            }
            self.flush_ranges()?;
        }
        self.close_epoch(training, main, spec.steps, epoch_start)
    }

    /// In a data-parallel job, every rank starts step `step` at the same time on the job's clock
    /// (its threads idle until then), as the previous step's collectives keep them in step.
    fn align_step(&mut self, spec: &SynthTraining, step: u64) {
        let parallel = &spec.parallel;
        if parallel.world == 0 {
            return;
        }
        let start = pipeline::FIRST_STEP_NS + step as i64 * data_parallel_period(spec)
            - parallel.session_offset_ns;
        for thread in &mut self.threads {
            thread.now = thread.now.max(start);
        }
    }

    fn define_nccl_domain(&mut self, main: usize) -> Result<()> {
        let start = self.nvtx_time(main);
        let row = NvtxRow {
            start,
            end: None,
            event_type: DOMAIN_CREATE,
            range_id: None,
            text: Some(NCCL_DOMAIN),
            text_id: None,
            global_tid: self.threads[main].global_tid,
            end_global_tid: None,
            domain_id: NCCL_DOMAIN_ID,
            color: None,
            json: None,
        };
        self.out.nvtx(&row, false)
    }

    /// Ends the epoch that began at `start` (if any) with a start/end range.
    fn close_epoch(
        &mut self,
        training: Training<'_>,
        main: usize,
        step: u64,
        start: Option<i64>,
    ) -> Result<()> {
        let Some(start) = start else { return Ok(()) };
        let epoch = (step - 1) / training.spec.steps_per_epoch;
        let end = self.nvtx_time(main);
        let global_tid = self.threads[main].global_tid;
        let row = NvtxRow {
            start,
            end: Some(end),
            event_type: START_END,
            range_id: Some(epoch as i64 + 1),
            text: None,
            text_id: Some(training.names.epochs[epoch as usize]),
            global_tid,
            end_global_tid: Some(global_tid),
            domain_id: 0,
            color: None,
            json: None,
        };
        self.out.nvtx(&row, false)
    }

    /// The thread's clock a moment after its last call: when an NVTX call happens.
    fn nvtx_time(&mut self, thread: usize) -> i64 {
        let at = self.threads[thread].now + self.between(NVTX_CALL);
        self.threads[thread].now = at;
        at
    }

    fn push(&mut self, thread: usize, text_id: i64) {
        self.push_in(thread, text_id, 0, None);
    }

    fn push_in(&mut self, thread: usize, text_id: i64, domain_id: i64, json: Option<String>) {
        let start = self.nvtx_time(thread);
        self.training_state.open.push(OpenRange {
            thread,
            start,
            text_id,
            domain_id,
            json,
        });
    }

    /// Closes the innermost open range (which the caller opened on the same thread).
    fn pop(&mut self) {
        let open = self
            .training_state
            .open
            .pop()
            .expect("pops match pushes in the training loop");
        let end = self.nvtx_time(open.thread);
        let nccl = open.domain_id == NCCL_DOMAIN_ID;
        let row = NvtxRow {
            start: open.start,
            end: Some(end),
            event_type: PUSH_POP,
            range_id: None,
            text: None,
            text_id: Some(open.text_id),
            global_tid: self.threads[open.thread].global_tid,
            end_global_tid: None,
            domain_id: open.domain_id,
            color: None,
            json: open.json,
        };
        self.training_state.finished.push((row, nccl));
    }

    fn flush_ranges(&mut self) -> Result<()> {
        let mut finished = std::mem::take(&mut self.training_state.finished);
        finished.sort_by_key(|(row, _)| row.start);
        for (row, nccl) in &finished {
            self.out.nvtx(row, *nccl)?;
        }
        Ok(())
    }

    fn step(&mut self, training: Training<'_>, lanes: Lanes) -> Result<()> {
        let names = training.names;
        let spec = training.spec;
        let main = 0;
        let autograd = 1.min(self.threads.len() - 1);
        self.push(main, names.step);

        self.push(main, names.data_load);
        // A host-bound gap: the CPU prepares the batch, the GPU has nothing to do.
        self.threads[main].now += spec.parallel.host_gap_ns;
        for bytes in [BATCH_BYTES, BATCH_BYTES / 4] {
            self.issue_copy(main, lanes.copy, HOST_TO_DEVICE, bytes)?;
        }
        self.threads[main].now += spec.data_load_delay_ns;
        self.pop();

        if let Some(name_id) = names.stream_wait {
            self.stream_wait_event(main, lanes.compute, spec.parallel.stream_wait_ns, name_id)?;
        }

        self.push(main, names.forward);
        for layer in 0..spec.layers as usize {
            self.push(main, names.layers[layer]);
            for (op, &(_, kernels)) in FORWARD.iter().enumerate() {
                let text_id = names.forward_ops[op];
                self.operator(training, main, lanes.compute, (op, text_id), kernels)?;
            }
            self.pop();
        }
        self.pop();

        self.push(main, names.loss);
        self.pooled_kernel(training, main, lanes.compute, Elementwise)?;
        self.pooled_kernel(training, main, lanes.compute, Norm)?;
        self.issue_copy(main, lanes.compute, DEVICE_TO_HOST, 4)?;
        self.stream_sync(main, lanes.compute)?;
        self.pop();

        self.push(main, names.backward);
        self.backward(training, autograd, lanes)?;
        let done = self.threads[autograd].now;
        self.threads[main].now = self.threads[main].now.max(done);
        self.pop();

        self.push(main, names.optimizer);
        self.stream_sync(main, lanes.nccl)?;
        for _ in 0..spec.buckets.max(1) {
            self.pooled_kernel(training, main, lanes.compute, Optimizer)?;
            self.issue_memset(main, lanes.compute, BUCKET_BYTES)?;
        }
        self.pop();

        self.pop();
        Ok(())
    }

    /// The autograd thread goes through the layers backwards; after every few layers a bucket
    /// of gradients is ready and all-reduced.
    fn backward(&mut self, training: Training<'_>, thread: usize, lanes: Lanes) -> Result<()> {
        let (names, spec) = (training.names, training.spec);
        let started = self.threads[0].now;
        self.threads[thread].now = self.threads[thread].now.max(started);
        let layers = u64::from(spec.layers);
        let buckets = u64::from(spec.buckets);
        for (done, layer) in (0..spec.layers as usize).rev().enumerate() {
            self.push(thread, names.layers_backward[layer]);
            for (op, &(_, kernels)) in BACKWARD.iter().enumerate() {
                let text_id = names.backward_ops[op];
                self.operator(training, thread, lanes.compute, (op, text_id), kernels)?;
            }
            self.pop();
            let done = done as u64;
            let ready = (done + 1) * buckets / layers - done * buckets / layers;
            for _ in 0..ready {
                self.all_reduce(training, thread, lanes.nccl)?;
            }
        }
        Ok(())
    }

    /// An operator's range, its inner ranges and kernels, then view operators' ranges.
    fn operator(
        &mut self,
        training: Training<'_>,
        thread: usize,
        lane: usize,
        (op, text_id): (usize, i64),
        kernels: &[Family],
    ) -> Result<()> {
        let (names, spec) = (training.names, training.spec);
        self.push(thread, text_id);
        let inner = spec.nvtx_depth.saturating_sub(4) as usize;
        for level in 0..inner {
            self.push(thread, names.inner[(op + level) % names.inner.len()]);
        }
        for &family in kernels {
            self.pooled_kernel(training, thread, lane, family)?;
        }
        for _ in 0..inner {
            self.pop();
        }
        self.pop();
        for k in 0..spec.cpu_ops_per_op as usize {
            self.push(thread, names.cpu_ops[(op + k) % names.cpu_ops.len()]);
            let busy = self.between(CPU_OP);
            self.threads[thread].now += busy;
            self.pop();
        }
        Ok(())
    }

    /// Launches the next kernel name of `family` from the pool.
    fn pooled_kernel(
        &mut self,
        training: Training<'_>,
        thread: usize,
        lane: usize,
        family: Family,
    ) -> Result<()> {
        let (names, variant) = self.next_pooled_name(training, family);
        let def = family.def();
        let mut duration = self.rng.jitter(def.duration);
        if let Some((short, percent)) = &training.spec.slower_kernel {
            if training.names.pool_short[family.pool_index()][variant] == *short {
                duration += duration * i64::from(*percent) / 100;
            }
        }
        self.issue_kernel(thread, lane, def, names, duration)
    }

    /// One step of a pipeline stage: its part of the GPipe schedule on the compute stream at the
    /// schedule's times (the job's clock), the CPU launching ahead, then its optimizer.
    fn pipeline_step(
        &mut self,
        training: Training<'_>,
        pipeline: &SynthPipeline,
        lanes: Lanes,
        step: u64,
    ) -> Result<()> {
        let (names, parallel) = (training.names, &training.spec.parallel);
        let p2p = names
            .pipeline
            .as_ref()
            .expect("a pipeline's names are interned");
        let schedule = pipeline.schedule(parallel.world);
        let origin = schedule.step_start(step) - parallel.session_offset_ns;
        let (main, lane) = (0, lanes.compute);
        self.threads[main].now = self.threads[main].now.max(origin - 1_000_000);
        self.push(main, names.step);
        let mut in_backward: Option<bool> = None;
        for op in schedule.of_stage(parallel.rank) {
            let peer = op.peer.unwrap_or(0);
            let backward = match op.work {
                PipelineWork::Forward => false,
                PipelineWork::Backward => true,
                PipelineWork::Send => peer < op.stage,
                PipelineWork::Recv => peer > op.stage,
            };
            if in_backward != Some(backward) {
                if in_backward.is_some() {
                    self.pop();
                }
                self.push(
                    main,
                    if backward {
                        names.backward
                    } else {
                        names.forward
                    },
                );
                in_backward = Some(backward);
            }
            let times = (origin + op.start, origin + op.end);
            match op.work {
                PipelineWork::Forward | PipelineWork::Backward => {
                    let (kernel, _) = self.next_pooled_name(training, Gemm);
                    let window = self.enqueue_at(main, lane, times);
                    self.launch_kernel_in(main, lane, Gemm.def(), kernel, window)?;
                }
                PipelineWork::Send | PipelineWork::Recv => {
                    let json = format!(
                        r#"{{"NCCL communicator ID": {JOB_COMMUNICATOR}, "Message size [bytes]": {}, "Peer rank": {peer}}}"#,
                        pipeline.activation_bytes
                    );
                    let text_id = if op.work == PipelineWork::Send {
                        p2p.send
                    } else {
                        p2p.recv
                    };
                    self.push_in(main, text_id, NCCL_DOMAIN_ID, Some(json));
                    let window = self.enqueue_at(main, lane, times);
                    self.launch_kernel_in(main, lane, Family::Nccl.def(), p2p.send_recv, window)?;
                    self.pop();
                }
            }
        }
        if in_backward.is_some() {
            self.pop();
        }
        self.push(main, names.optimizer);
        self.pooled_kernel(training, main, lane, Optimizer)?;
        self.pop();
        self.pop();
        Ok(())
    }

    /// The next name of `family` from the pool, with its index in the pool.
    fn next_pooled_name(
        &mut self,
        training: Training<'_>,
        family: Family,
    ) -> (KernelNameIds, usize) {
        let index = family.pool_index();
        let pool = &training.names.pool[index];
        let launched = &mut self.training_state.launched[index];
        let variant = *launched as usize % pool.len();
        let names = pool[variant];
        *launched = launched.wrapping_add(1);
        (names, variant)
    }

    /// One bucket's all-reduce: an NCCL-domain range with its payload around the kernel launch.
    fn all_reduce(&mut self, training: Training<'_>, thread: usize, lane: usize) -> Result<()> {
        let bytes = if self.rng.chance(4) {
            self.rng.range(1 << 20, BUCKET_BYTES)
        } else {
            BUCKET_BYTES
        };
        let parallel = &training.spec.parallel;
        let communicator = if parallel.world > 0 {
            JOB_COMMUNICATOR
        } else {
            0x7f3a_0000_0000 + i64::from(self.process.pid)
        };
        // The late rank is busy before it joins; the others' kernels wait for it.
        let (late, waited) = match parallel.late_rank {
            Some(l) if l.rank == parallel.rank => (l.late_ns, 0),
            Some(l) => (0, l.late_ns),
            None => (0, 0),
        };
        self.threads[thread].now += late;
        let json = format!(
            r#"{{"NCCL communicator ID": {communicator}, "Message size [bytes]": {bytes}, "Reduction operation": "Sum"}}"#
        );
        self.push_in(
            thread,
            training.names.all_reduce,
            NCCL_DOMAIN_ID,
            Some(json),
        );
        let state = &mut self.training_state;
        // Real jobs use one or two NCCL kernels per collective.
        let names = training.names.nccl[state.all_reduces as usize % 3];
        state.all_reduces += 1;
        let duration = 20_000 + bytes / NCCL_BYTES_PER_NS + waited;
        self.issue_kernel(thread, lane, Family::Nccl.def(), names, duration)?;
        self.pop();
        Ok(())
    }
}
