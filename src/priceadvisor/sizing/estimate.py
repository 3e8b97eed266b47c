"""Sizing core: memory, fit, throughput, time and the binding constraint of a
workload on N GPUs of one model. Pure functions over an Architecture and a GPU's specs.

Efficiency priors (docs/accuracy.md lists each with its source) are scaled per regime by factors
fitted on the published measurements in sizing-data/calibration.toml (sizing.calibration).

Contents, in the order a workload's path goes through them:

1. Constants and records (top): bytes per weight, memory utilisation, latency terms, software
   factors; `Scales` (fitted factors), `Workload` (the request), `Estimate` (the answer).
2. `estimate` (section "estimates"): the entry point. It checks the pipeline layout
   (`check_pipeline`), then goes one of three ways:
   - a share of one GPU: `_on_a_share` -> `fractional_gpu`, then the training or serving path;
   - training: `_train` -> `training_memory` (fit), `training_regime` and `regime_factor`,
     `prior_compute_seconds` (`executed_training_flops`, `training_mfu` or
     `moe_compute_seconds`), communication (`exposed_alltoall_seconds`,
     `exposed_tensor_parallel_seconds`, `data_parallel_seconds`), `pipeline_bubble`, then
     hours with `run_goodput` (or the workload's stated `goodput`);
   - serving: `default_tensor_parallel` and `check_tensor_parallel`, then `_serve` ->
     `serving_memory` and `kv_tokens` (fit, KV capacity), `_choose_batch` (the batch the
     latency target allows, by `_tpot_ms`), `_finish_serving` -> `ttft_seconds`
     (`prefill_seconds`), `_tpot_ms` (`decode_seconds`: `weights_read`, `kv_reads`,
     `layer_overhead`, `tp_allreduce_seconds`) and `saturated_step_seconds` (throughput).
     `replicas_for` (last) turns a wanted rate into replicas for the advisor.
   `_note_software` closes every path.
3. Hardware (section "hardware"): what a GPU offers — `peak_flops`, `fp4_peak`, `bandwidth`,
   `usable_gib`, `has_fast_interconnect`, `scale_up_domain`, `link_bandwidth`.
4. Efficiency priors (section "efficiency priors"): what a GPU sustains on a kind of work —
   `training_mfu`, `dense_training_mfu`, `decode_mbu`, `serving_mfu`, `prefill_mfu`,
   `achievable_matmul_share`, `engine_factor`, `allreduce_latency`, each scaled per regime by
   `regime_factor`, with `prior_uncertainty` for the stated range.

Serving with no layout given (`fastest_layout`) ranks every valid TP x PP layout by the helpers
`_serve` uses (`fitting_layouts`: `layout_figures`, one memo entry per layout with its
`fitting_batch` and saturated step) and builds only the chosen one; advice, which reads a few of
the estimate's figures, takes them from the chosen layout without building it
(`fastest_figures`, sizing in full only the layouts whose `replica_speed_bound` can still win;
`priceadvisor.sizing.layoutbounds` computes those bounds for all of a workload's offer shapes at
once), and training's from `training_figures`, which `_train` builds its estimate from.
Helpers marked `per_pass` (positional-only) are computed once per distinct call inside a
sizing pass (`priceadvisor.sizing.memo`): each layout search opens one, the advisor one per
workload, so that a workload's layouts and GPU counts share their figures.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from priceadvisor.gpu_specs import GpuSpec, gpu_catalog
from priceadvisor.llm import GIB, Architecture
from priceadvisor.records import TRAINING_TASKS, Precision, Task
from priceadvisor.sizing.memo import per_pass, sizing_pass
from priceadvisor.workload import (
    DEFAULT_GLOBAL_BATCH_TOKENS,
    EAGER_STACKS,
    MAX_TENSOR_PARALLEL,
    STACK_ALIASES,
    UNKNOWN,
    WorkloadError,
    check_pipeline_layout,
    check_tensor_parallel_limit,
)

WEIGHT_BYTES = {
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5625,  # NVFP4/MXFP4: 4-bit values + one 8-bit scale per 16 (NVFP4) or 32 values
    "int4": 0.56,  # weight-only (AWQ/GPTQ): compute and KV stay 16-bit
}
# Vendor "GB" of HBM/GDDR is about GiB less a driver reserve (A100 40GB shows 39.5 GiB).
USABLE_OF_NOMINAL = 0.9875
SERVING_MEMORY_UTILISATION = 0.90  # vLLM's default gpu_memory_utilization
TRAINING_MEMORY_UTILISATION = 0.95
RUNTIME_OVERHEAD_GIB = 0.5
PREFILL_CHUNK_TOKENS = 8192
# The engines' default cap on the sequences one replica runs at once: a requested batch above
# it is served, with a note that the engine must be configured for it (never capped silently);
# a batch job left unset runs up to it (`engine_batch`). vLLM's max_num_seqs: 256 in its V0
# engine; its V1 engine defaults to 1024 on GPUs with at least 70 GiB other than the A100, else
# 256 (vllm/engine/arg_utils.py, `get_batch_defaults`: "For GPUs like H100 and MI300x, use
# larger default values"). An unknown engine takes vLLM V1's. TensorRT-LLM's trtllm-bench tunes
# its batch to the memory, and SGLang's scheduler admits while its KV pool has room: no cap of
# their own beyond the KV cache here.
ENGINE_DEFAULT_MAX_BATCH = 256
ENGINE_LARGE_GPU_MAX_BATCH = 1024
LARGE_GPU_GIB = 70
UNCAPPED_ENGINES = ("trt-llm", "sglang")
# End-to-end goodput of a long synchronous run: every interruption (failure or planned restart)
# costs a restart plus the work since the last checkpoint. Llama 3 (Dubey et al. 2024, §3.3.4:
# 466 job interruptions, 419 unexpected, in a 54-day snapshot on 16,384 H100s, with "higher
# than 90 % effective training time") gives the rate per GPU-hour and bounds the cost of one
# interruption to ~0.3 h of the whole job. Interruptions grow with GPUs x hours, so the share
# of time lost grows with the GPU count.
INTERRUPTIONS_PER_GPU_HOUR = 466 / (54 * 24 * 16384)
HOURS_LOST_PER_INTERRUPTION = 0.3
HOURS_PER_MONTH = 730
# Sharded data parallelism (PyTorch FSDP / ZeRO-3) moves every 16-bit weight three times per
# step: an all-gather before the forward, another before the backward (the forward's copy is
# freed), and a reduce-scatter of the gradients (Zhao et al. 2023, "PyTorch FSDP", §3.2).
SHARDED_DP_PASSES = 3
# Inter-node network per GPU of an HGX/DGX node: 8 × 400 Gb/s ConnectX-7 for 8 GPUs = 50 GB/s
# (NVIDIA DGX H100/B200 datasheets); parts in an NVL72 rack talk over NVLink instead.
NODE_NETWORK_GBS = 50.0
# Parts whose nodes have less network per GPU: a DGX A100 has one 200 Gb/s HDR InfiniBand port
# per GPU ("8x Single-Port Mellanox ConnectX-6 VPI 200Gb/s HDR InfiniBand", NVIDIA DGX A100
# datasheet), 25 GB/s; Meta's A100 clusters for Llama 2 likewise "interconnect 200 Gbps
# end-points" (Touvron et al. 2023, arXiv 2307.09288, §2.2.1).
NODE_NETWORK_GBS_BY_FAMILY = {"A100": 25.0}
# Decode latency terms (per step), estimated from the kernel structure rather than fitted: a
# decode layer launches ~10 kernels (2 norms, QKV, rotary, attention, output projection,
# gate/up, activation, down, residual) at ~3 µs of launch and tail each; a small-message
# all-reduce (one per attention and one per MLP block under tensor parallelism) is a few
# such steps of synchronisation across the group, ~20 µs — above the one-shot kernel alone on
# H100 (vLLM's 9-12 µs up to 32 KB, sgl-project/sglang#2904): the ranks also wait for the
# slowest to arrive (vllm-project/vllm#52777), which the TensorRT-LLM TP2/TP4 decode rows
# show (docs/accuracy.md, Round 15). The same on every vendor and group
# size inside a node: every GPU reaches every other in one hop — NVSwitch on NVIDIA parts; on
# AMD's an xGMI full mesh ("Each AMD Instinct MI300X system GPU is connected to its seven peer
# GPUs via xGMI links, forming a fully connected mesh", AMD ROCm blog "Understanding RCCL
# Bandwidth and xGMI Performance on AMD Instinct MI300X", 2025) — so decode engines run the
# small all-reduce one-shot: each GPU reads its peers' buffers and reduces locally, one step
# whatever the group (vLLM's custom all-reduce, used on ROCm too: 6-7 µs at TP8 for 24-48 KB,
# vllm-project/vllm#39080; Meta's RCCLX "Direct Data Access" makes RCCL's own small
# all-reduce O(1) in the group for the same reason). vLLM's V0 engine on AMD parts is the
# exception (`allreduce_latency`). The fitted AMD engine factor scales the step's HBM
# bandwidth and tensor rate, never this latency (a collective is not HBM traffic).
LAYER_OVERHEAD_S = 30e-6
ALLREDUCE_LATENCY_S = 20e-6
# The one-shot all-reduce that ROCm engines run on AMD's xGMI mesh, measured on the parts: vLLM's
# custom all-reduce on MI300, 7.07-7.66 µs at TP2 for 4-64 KB (ROCm/aiter#801, "vllm cr"
# column) and 7.18-7.58 µs at TP4 for 2-32 KB (vllm-project/vllm#19744, "baseline"); 6.3-6.7
# µs at TP8 for 24-48 KB on MI355X (vllm-project/vllm#39080). The NVIDIA figure above stays the
# kernel-structure estimate its decode rows were checked with.
AMD_ONE_SHOT_ALLREDUCE_S = 7.5e-6
# AMD's 8-GPU platforms join the GPUs in a full mesh, one xGMI link to each of the seven peers
# (AMD ROCm blog, "Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X",
# March 2025): a collective over t GPUs of the node moves its data over the t-1 links between
# them, never the whole fabric as an NVSwitch port does. A link is rated 64 GB/s per direction
# on MI300X (the catalog's 896 GB/s over 7 links, both directions) and "CRC bit correction and
# protocol overhead ... reduce the usable bandwidth to approximately 48 GB/s per link" (75 %,
# the same blog). Checked on measurements: vLLM's all-reduce of 16 MB at TP2 on MI300 takes
# 356 µs, 47 GB/s over the one link (ROCm/aiter#801); at TP4, 230 µs, a bus bandwidth of
# 109 GB/s of the 3 x 48 (vllm-project/vllm#19744); MI355X states its peak as (N-1) x 76.8
# GB/s, 1075 GB/s over 7 links and 2 directions (vllm-project/vllm#39080).
# The parts on such 8-GPU platforms (MI350X/MI355X: 7 links of 153.6 GB/s both ways, 1075 GB/s;
# the 75 % usable share is MI300X's, assumed for them); MI250X nodes join their GCDs otherwise
# and keep `link_bandwidth` and ALLREDUCE_LATENCY_S.
XGMI_PEER_LINKS = 7
XGMI_USABLE_SHARE = 0.75
XGMI_MESH_FAMILIES = ("MI300X", "MI325X", "MI350X", "MI355X")
# RCCL's all-reduce over all eight GPUs of an MI300X platform reaches the mesh's usable rate
# (7 x 48 GB/s) only for very large messages: rccl-tests `all_reduce_perf` on 8 MI300X (RCCL
# 2.22.3, ROCm 6.3, out-of-place, one process per GPU; AMD ROCm blog "Understanding RCCL
# Bandwidth and xGMI Performance on AMD Instinct MI300X", March 2025) measures these bus
# bandwidths (GB/s) by message size: the ring's 14 steps each move 1/8 of the message, and a
# step's fixed cost weighs on small chunks. Between two sizes the share is interpolated on a
# log scale; below 1 MiB the engines' one-shot all-reduce (AMD_ONE_SHOT_ALLREDUCE_S) carries
# the cost and the 1 MiB share is kept; above 16 GiB, the last one. Only the whole 8-GPU mesh
# was measured: groups of 2 and 4 keep the mesh's usable rate (vLLM's own all-reduce of 16 MB
# takes 1.02x that at TP2, ROCm/aiter#801, and 1.3x at TP4, vllm-project/vllm#19744, where no
# RCCL table exists); MI325X has MI300X's links; MI350X/MI355X (faster links) have no table.
MESH_ALLREDUCE_BUS_GBS = (
    (2**20, 66.93),
    (2**21, 105.43),
    (2**22, 141.91),
    (2**23, 175.43),
    (2**24, 197.26),
    (2**25, 240.57),
    (2**26, 273.66),
    (2**27, 294.55),
    (2**28, 305.62),
    (2**29, 310.46),
    (2**30, 314.72),
    (2**31, 316.04),
    (2**32, 317.40),
    (2**33, 317.96),
    (2**34, 318.98),
)
MESH_ALLREDUCE_GROUP = 8
MESH_ALLREDUCE_FAMILIES = ("MI300X", "MI325X")
KERNEL_OVERHEAD_S = LAYER_OVERHEAD_S / 10  # one of the ~10 kernels above
# Engines that quantise a GEMM's input activations (W8A8 FP8/INT8, FP4) in a kernel of their
# own before each of a layer's four GEMMs (fused QKV, output projection, fused gate/up, down):
# vLLM's FP8 linear layer runs `scaled_fp8_quant` and then the scaled GEMM
# (vllm/model_executor/layers/quantization/utils/w8a8_utils.py, `apply_fp8_linear`), SGLang
# its `static_quant_fp8`/`per_token_group_quant_fp8` before the FP8 GEMM. Four more kernels per
# layer (a dynamic scale adds a reduction kernel; the lower count is used). vLLM's V1 engine
# compiled with Inductor can fuse some into the norm before (an overstatement of at most 12 µs
# per layer). TensorRT-LLM's FP8 engines emit the quantised activations from the preceding
# norm/activation kernel; an unknown engine keeps the pooled step. Weight-only INT4
# dequantises inside its GEMM: no extra kernel.
SEPARATE_ACTIVATION_QUANT_ENGINES = ("vllm", "vllm-v0", "sglang")
QUANTISED_ACTIVATION_PRECISIONS = ("fp8", "int8", "fp4")
GEMMS_PER_LAYER = 4
# Regime-like factor fitted per fold on the AMD serving/decode cases: the share of NVIDIA's
# engine efficiency (HBM bandwidth, tensor throughput) that ROCm engines reach on the same
# work. Its prior is 1 (same efficiency); never a hand-picked constant.
ENGINE_FACTOR = "engine-amd"
# MoE training: share of the expert all-to-all (dispatch + combine, forward and backward) that
# is not hidden behind compute in DeepEP-style overlapped schedules.
MOE_EXPOSED_COMMUNICATION = 0.35
# MoE training prior: model-FLOPs utilisation of the 16-bit peak (published MoE runs 0.15-0.25).
MOE_TRAINING_MFU = 0.25
# Dense FP4 (NVFP4/MXFP4) tensor peaks of the parts that have FP4 units (vendor datasheets, as
# in the catalog notes); other parts store FP4 weights but compute at FP8 or 16 bit.
FP4_DENSE_TFLOPS = {"B200": 9000, "GB200": 10000, "B300": 15000, "GB300": 15000, "MI355X": 10066}
FP4_OVER_FP8 = 1.25
# The software that runs the work carries its own efficiency: the same GPU and model differ
# 1.3-4x between engines and training stacks in the published rows (docs/accuracy.md). Each
# known engine/stack (priceadvisor.workload.ENGINES, STACKS) has one factor on the regime
# priors, fitted only where at least two publications state it; "unknown" (the default) uses
# the pooled regime factors alone and states the wider pooled range. "megatron-2021" is also a
# layout: A100 TP+PP with full activation recomputation by default (regime train-3d). "vllm"
# is vLLM's V1 engine (the default from 0.8, 2025), "vllm-v0" its V0 engine (earlier
# releases): their kernel paths differ (`kv_reads`), and the published vLLM rows are mostly
# V0's.

# Calibrated regimes: each scales one efficiency prior (see docs/accuracy.md).
TRAIN_REGIMES = ("train-dense", "train-3d", "train-moe", "train-lora")
REGIMES = (*TRAIN_REGIMES, "train-e2e", "prefill", "decode", "serve-throughput")
SERVING_REGIMES = ("prefill", "decode", "serve-throughput")
# A regime whose prior is another's, sized with that regime's fitted factor until it has the
# cases to fit its own: LoRA runs the dense training GEMMs (the forward and the activation
# gradients, 4·N of dense training's 6·N) on the same stacks, at the dense prior.
PARENT_REGIME = {"train-lora": "train-dense"}


@dataclass(frozen=True, slots=True)
class Scales:
    """Factors on the efficiency priors per regime, and the stated relative uncertainty per
    regime, fitted by `priceadvisor.sizing.calibration` and handed in as data; empty means the
    published priors unchanged and the prior uncertainty."""

    factors: Mapping[str, float] = field(default_factory=dict)
    uncertainty: Mapping[str, float] = field(default_factory=dict)

    def factor(self, regime: str) -> float:
        """The regime's fitted factor; a regime too small to fit takes its parent's."""
        if regime in self.factors:
            return self.factors[regime]
        return self.factors.get(PARENT_REGIME.get(regime, ""), 1.0)

    def software_factor(self, key: str) -> float:
        """The engine's or stack's factor (`software_key`); 1 = the pooled regime factors."""
        return self.factors.get(key, 1.0) if key else 1.0

    def range_for(self, regime: str, software: str) -> float:
        """Stated range of the regime: its held-out p90 with the software's own factor when
        one was fitted, else the (wider) held-out p90 of the pooled prediction."""
        if software in self.factors:
            return self.uncertainty.get(regime, 0.0)
        return self.uncertainty.get(pooled_key(regime), self.uncertainty.get(regime, 0.0))


def pooled_key(regime: str) -> str:
    """Uncertainty key of a regime predicted without an engine/stack factor."""
    return f"{regime}:{UNKNOWN}"


def software_key(work: Workload) -> str:
    """Factor key of the software running `work`: its serving engine or training stack; empty
    when unknown."""
    name = work.stack if work.task in TRAINING_TASKS else work.engine
    name = STACK_ALIASES.get(name, name)
    if name == UNKNOWN:
        return ""
    return f"{'stack' if work.task in TRAINING_TASKS else 'engine'}:{name}"


PRIORS = Scales()


@dataclass(frozen=True, slots=True)
class Workload:
    """What sizing needs of a workload (the config's validated profile maps onto this).

    `concurrency` is the number of requests in flight (serve) or the batch (batch); None
    (batch only) lets the engine decide (`engine_batch`);
    `stack` the training software (STACKS; "megatron-2021" is also the A100 tensor+pipeline
    layout with full recomputation) and `engine` the serving engine (ENGINES), each "unknown"
    for the pooled efficiency and range;
    `expert_parallel` the MoE expert-parallel degree (default: `expert_parallel()`);
    `recompute` the activation recomputation of training (RECOMPUTE; default: the stack's);
    `moe_overlap` how MoE training hides its expert all-to-all (MOE_OVERLAP);
    `one_wave` (batch) that every request of the batch starts at once with the same input and
    output length — a synthetic throughput benchmark whose prompts all fit the engine's cap —
    so they grow in lockstep (`wave_recompute_tokens`);
    `pipeline_parallel`, `virtual_stages` and `micro_batches` the training pipeline: stages,
    model chunks per GPU (interleaved 1F1B) and micro-batches per pipeline per optimizer step
    (`pipeline_bubble`); serving takes `pipeline_parallel` alone: the stages of one replica
    (`decode_seconds` describes that layout)."""

    task: Task
    arch: Architecture
    precision: Precision = "bf16"
    input_tokens: int = 1000
    output_tokens: int = 250
    concurrency: int | None = 16
    ttft_ms_max: float | None = None
    tpot_ms_max: float | None = None
    monthly_output_tokens: float | None = None
    train_tokens: float | None = None
    seq_len: int = 4096
    kv_precision: Precision | None = None
    stack: str = UNKNOWN
    engine: str = UNKNOWN
    expert_parallel: int | None = None  # MoE training: GPUs an expert group spans
    recompute: str | None = None  # training: none, selective or full (None: the stack's)
    moe_overlap: str | None = None  # MoE training: MOE_OVERLAP (None: partial)
    pipeline_parallel: int = 1  # pipeline stages (GPUs one model copy spans in depth)
    virtual_stages: int = 1  # training: model chunks per GPU (interleaved 1F1B)
    micro_batches: int | None = None  # training: micro-batches per pipeline per step
    global_batch_tokens: float = DEFAULT_GLOBAL_BATCH_TOKENS  # training: tokens per step
    goodput: float | None = None  # whole run: share of wall time training (None: modelled)
    tensor_parallel: int | None = None  # training: GPUs a layer is split over (None: the stack's)
    packed_document_tokens: int | None = None  # training: mean length of packed documents
    one_wave: bool = (
        False  # batch: all requests start together, same lengths (`wave_recompute_tokens`)
    )
    scales: Scales = field(default_factory=lambda: PRIORS)


@dataclass(slots=True)
class Estimate:
    gpu_model: str
    gpu_count: float
    fits: bool
    binding: str
    memory_gib: dict[str, float]
    memory_available_gib: float
    tokens_per_s: float = 0.0  # training: tokens trained per second; serving: output tokens/s
    hours: float | None = None  # training: wall hours of the run
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    batch: int | None = None
    max_concurrency: int | None = None
    uncertainty: float = 0.3
    notes: list[str] = field(default_factory=list)
    tensor_parallel: int = 1  # serving: GPUs per pipeline stage of a replica
    regime: str = ""
    pipeline_parallel: int = 1  # serving: pipeline stages per replica
    recompute: str | None = None  # training: the activation recomputation sized
    batch_assumed: str | None = None  # batch left to the engine: which batch and why
    layout_chosen: str | None = None  # serving layout left to the tool: which and why

    @property
    def replicas(self) -> int:
        return replicas_of(self.gpu_count, self.tensor_parallel, self.pipeline_parallel)

    @property
    def gpu_hours(self) -> float | None:
        return None if self.hours is None else self.hours * self.gpu_count

    def as_dict(self) -> dict[str, Any]:
        return {
            "gpu_model": self.gpu_model,
            "gpu_count": self.gpu_count,
            "fits": self.fits,
            "binding": self.binding,
            "memory_gib": {k: round(v, 2) for k, v in self.memory_gib.items()},
            "memory_needed_gib": round(sum(self.memory_gib.values()), 2),
            "memory_available_gib": round(self.memory_available_gib, 2),
            "tokens_per_s": round(self.tokens_per_s, 2),
            "hours": _round(self.hours),
            "gpu_hours": _round(self.gpu_hours),
            "ttft_ms": _round(self.ttft_ms),
            "tpot_ms": _round(self.tpot_ms),
            "batch": self.batch,
            "max_concurrency": self.max_concurrency,
            "tensor_parallel": self.tensor_parallel,
            "pipeline_parallel": self.pipeline_parallel,
            "replicas": self.replicas,
            "regime": self.regime,
            "recompute": self.recompute,
            "batch_assumed": self.batch_assumed,
            "layout_chosen": self.layout_chosen,
            "uncertainty": self.uncertainty,
            "notes": self.notes,
        }


def replicas_of(gpus: float, tp: int, pp: int) -> int:
    """Serving replicas of TP x PP GPUs that `gpus` GPUs hold (at least one)."""
    return max(1, int(gpus) // (tp * pp))


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


# --- hardware -------------------------------------------------------------------------------


class SizingError(ValueError):
    """A layout that cannot be sized (e.g. a tensor-parallel degree that makes no sense)."""


def peak_flops(gpu: GpuSpec, precision: str) -> float:
    """Dense tensor FLOP/s for the precision; parts without FP8/INT8/FP4 units compute at the
    next wider format they have (the weights are still stored at the low precision). INT4 is
    weight-only: it computes at 16 bit."""
    specs = gpu.specs
    sixteen = (
        specs.get("bf16_dense_tflops")
        or specs.get("fp16_dense_tflops")
        or specs.get("fp32_tflops")
        or 0.0
    )
    if precision == "fp16":
        sixteen = specs.get("fp16_dense_tflops") or sixteen
    fp8 = specs.get("fp8_dense_tflops")
    low = {"fp8": fp8, "int8": specs.get("int8_dense_tops"), "fp4": fp4_peak(gpu) or fp8}
    return float(low.get(precision) or sixteen) * 1e12


def fp4_peak(gpu: GpuSpec) -> float | None:
    """Effective FP4 tensor TFLOP/s. Measured FP4 runs gain ~1.1-1.3x over FP8 on the same
    part (MLPerf v5.0 B200 FP4 vs H200 FP8 per GPU: 2.8x on a 2.3x FP8-peak ratio; NVFP4
    training 1.1-1.2x), far from the 2x datasheet ratio: FP4 weights halve the bytes read,
    the other GEMMs, attention and the quantisation stay wider. Sized at 1.25x the FP8 peak,
    capped by the datasheet FP4 peak."""
    datasheet = FP4_DENSE_TFLOPS.get(gpu.family)
    fp8 = gpu.specs.get("fp8_dense_tflops")
    if not datasheet or not fp8:
        return None
    return min(float(datasheet), FP4_OVER_FP8 * float(fp8))


def bandwidth(gpu: GpuSpec) -> float:
    return float(gpu.specs.get("memory_bandwidth_gbs") or 0.0) * 1e9


def usable_gib(gpu: GpuSpec, utilisation: float) -> float:
    return gpu.memory_gb * USABLE_OF_NOMINAL * utilisation


@per_pass(objects=1)  # asked for every layout and collective: once per GPU in a pass
def has_fast_interconnect(gpu: GpuSpec, /) -> bool:
    text = str(gpu.specs.get("interconnect") or "")
    return (
        ("NVLink" in text and "no NVLink" not in text)
        or "Infinity Fabric" in text
        or ("RoCE" in text)
    )


def scale_up_domain(gpu: GpuSpec) -> int:
    """GPUs one NVLink/Infinity Fabric domain joins: an NVL72 rack for GB parts, else a node."""
    return 72 if gpu.family.startswith("GB") else 8


def mesh_link_bandwidth(gpu: GpuSpec) -> float | None:
    """Usable bytes/s of one xGMI link, one direction, on an AMD 8-GPU full mesh
    (XGMI_MESH_FAMILIES); None for a switched fabric (NVSwitch), another topology or none."""
    fabric = float(gpu.specs.get("nvlink_bandwidth_gbs") or 0.0)
    if gpu.family not in XGMI_MESH_FAMILIES or not fabric:
        return None
    return fabric / XGMI_PEER_LINKS / 2 * XGMI_USABLE_SHARE * 1e9


def collective_bandwidth(gpu: GpuSpec, group: int) -> float:
    """Bytes/s one GPU moves into a collective over `group` GPUs: on AMD's xGMI mesh inside a
    node the group-1 links to its peers, else `link_bandwidth` (NVSwitch gives every GPU its
    whole fabric whatever the group)."""
    link = mesh_link_bandwidth(gpu)
    if link is None or group > scale_up_domain(gpu):
        return link_bandwidth(gpu, group)
    return max(1, group - 1) * link


@per_pass(objects=1)  # asked for every decode step and prefill: once per GPU and group a pass
def point_to_point_bandwidth(gpu: GpuSpec, group: int, /) -> float:
    """Bytes/s of one GPU's send to one peer: one xGMI link on AMD's mesh inside a node, else
    `link_bandwidth`."""
    link = mesh_link_bandwidth(gpu)
    if link is None or group > scale_up_domain(gpu):
        return link_bandwidth(gpu, group)
    return link


def link_bandwidth(gpu: GpuSpec, group: int) -> float:
    """Bytes/s one GPU sends to a group of `group` GPUs: one direction of NVLink/Infinity
    Fabric inside a node (or an NVL72 rack), the node's network beyond it."""
    fabric = float(gpu.specs.get("nvlink_bandwidth_gbs") or 0.0) / 2
    if group <= scale_up_domain(gpu) and fabric:
        return fabric * 1e9
    return node_network_bandwidth(gpu)


def node_network_bandwidth(gpu: GpuSpec) -> float:
    """Bytes/s of the network beyond the node, per GPU (NODE_NETWORK_GBS_BY_FAMILY)."""
    return NODE_NETWORK_GBS_BY_FAMILY.get(gpu.family, NODE_NETWORK_GBS) * 1e9


def _vendor_class(gpu: GpuSpec) -> str:
    return _vendor_class_of(gpu.vendor, gpu.family, gpu.specs.get("architecture"))


@functools.cache  # a few GPU models, asked on every estimate
def _vendor_class_of(vendor: str, family: str, architecture: object) -> str:
    if vendor == "AMD":
        return "amd"
    if vendor != "NVIDIA":
        return "other"
    if family.startswith("RTX") and family[3:4].isdigit():
        return "consumer"
    return str(architecture or "").split(" ")[0].lower()  # hopper, ampere…


# --- efficiency priors (docs/accuracy.md), scaled per regime by calibration -----------------------


def training_regime(work: Workload) -> str:
    if work.task in ("lora", "qlora"):
        return "train-lora"
    if work.arch.is_moe:
        return "train-moe"
    return "train-3d" if work.stack == "megatron-2021" else "train-dense"


def training_mfu(gpu: GpuSpec, arch: Architecture, precision: str) -> float:
    """Model-FLOPs utilisation prior of training (of the precision's peak; MoE: of the 16-bit
    peak, see `moe_compute_seconds` for what a lower precision speeds up)."""
    if arch.is_moe:
        return MOE_TRAINING_MFU
    return dense_training_mfu(gpu, precision)


def dense_training_mfu(gpu: GpuSpec, precision: str) -> float:
    """Model-FLOPs utilisation prior of dense GEMM-bound training (of the precision's peak)."""
    kind = _vendor_class(gpu)
    if kind == "amd":
        return 0.30
    if precision in ("fp8", "fp4") and gpu.specs.get("fp8_dense_tflops"):
        return 0.35
    if kind == "ampere":
        return 0.50
    if kind in ("hopper", "blackwell"):
        return 0.42
    return 0.35


def moe_compute_seconds(work: Workload, gpu: GpuSpec, flops: float) -> float:
    """Compute seconds of `flops` of MoE training at the priors. The MoE prior (MFU 0.25 of
    the 16-bit peak) is split into the GEMMs, at the dense prior (0.42 on H100/B200: 60 % of
    the time), and the rest — routing, token permutation, the grouped GEMMs' small per-expert
    shapes, waiting on the dispatch — which a lower precision does not speed up. At FP8/FP4
    only the GEMMs move, to the dense prior of that precision (0.35 of the FP8 peak, 1.67x
    BF16; measured FP8 matmuls reach 1.77x BF16 on H100 and 1.97x on B200, MAMF table of
    Bekman's Machine Learning Engineering): FP8 MoE training is 1.31x its BF16 speed on
    H100/B200, where dense training gains 1.67x. A format the part cannot run faster than
    16 bit never slows the GEMMs down."""
    sixteen = peak_flops(gpu, "bf16")
    at_sixteen = flops / (sixteen * MOE_TRAINING_MFU)
    gemm_sixteen = flops / (sixteen * dense_training_mfu(gpu, "bf16"))
    gemm = flops / (peak_flops(gpu, work.precision) * dense_training_mfu(gpu, work.precision))
    if peak_flops(gpu, work.precision) > sixteen:
        gemm += expert_quantisation_seconds(work.arch, gpu)
    return at_sixteen - gemm_sixteen + min(gemm, gemm_sixteen)


# Low-precision expert GEMMs quantise their operands first, in memory-bound kernels: torchao's
# MXFP8 grouped-GEMM breakdown (pytorch/ao torchao/prototype/moe_training/README.md, "MXFP8
# Kernel Breakdown by Pass", DeepSeek-V3 shapes on B200) runs them at 72-83 % of the HBM peak
# and measures 2.2 ms of quantisation beside 6.1 ms of GEMMs, so the MoE layer gains 1.15x over
# BF16 where Llama 4's wider experts gain 1.43x ("single MoE layer" table). Per element of each
# GEMM's input (forward) and output gradient (backward) a fused cast-transpose reads 16 bits
# and writes a row-wise and a column-wise 8-bit copy (the second feeds the weight gradient).
QUANTISATION_BYTES_PER_ELEMENT = 4
QUANTISATION_BANDWIDTH_SHARE = 0.8


def expert_quantisation_seconds(arch: Architecture, gpu: GpuSpec) -> float:
    """Seconds per trained token of quantising the routed experts' GEMM operands at FP8/FP4.
    Each of a token's top-k copies per MoE layer casts the up projection's input (d) and
    output gradient (2·e gated, e otherwise) and the down projection's input (e) and output
    gradient (d): 2·d + 3·e elements for a gated expert of width e. Against the expert GEMMs'
    18·d·e FLOPs per copy that is ~4/(9·e) + 2/(3·d) bytes per FLOP: a fine-grained MoE's
    narrow experts pay it in a larger share than a dense layer, whose casts the dense FP8
    prior already includes (~2 % of a 70B's GEMM time)."""
    width = arch.expert_ffn or arch.ffn
    gradients = 2 * width if arch.gated else width
    elements = 2 * arch.hidden + width + gradients
    copies = arch.moe_layers * arch.experts_per_token
    traffic = copies * elements * QUANTISATION_BYTES_PER_ELEMENT
    return traffic / (bandwidth(gpu) * QUANTISATION_BANDWIDTH_SHARE)


@per_pass(objects=2)  # the same at every GPU count: once per GPU model and policy in a pass
def prior_compute_seconds(work: Workload, gpu: GpuSpec, /) -> float:
    """Compute seconds per trained token on one GPU at the efficiency priors (before the
    fitted regime and stack factors)."""
    flops = executed_training_flops(work)
    if work.arch.is_moe:
        return moe_compute_seconds(work, gpu, flops)
    sixteen = sixteen_bit_training_flops(work)
    return dense_seconds(gpu, work.precision, flops - sixteen) + dense_seconds(
        gpu, sixteen_bit(work.precision), sixteen
    )


def dense_seconds(gpu: GpuSpec, precision: str, flops: float) -> float:
    """Seconds of `flops` of dense training work at the precision's peak and prior."""
    return flops / (peak_flops(gpu, precision) * dense_training_mfu(gpu, precision))


# Stacks that run the model's PyTorch code eagerly (priceadvisor.workload.EAGER_STACKS): every
# elementwise op of a decoder layer is its own kernel, reading its inputs from HBM and writing
# its output back. Fused stacks (Transformer Engine, torch.compile, Triton) keep those tensors
# in registers, so the term is theirs alone; an unknown stack keeps today's pooled prediction
# (its fitted factors already average over both kinds). Bytes per token per layer, as (forward,
# backward) per element, 16-bit activations, d = hidden, f = MLP width; the op sequence is
# Hugging Face transformers' models/llama/modeling_llama.py (LlamaRMSNorm.forward,
# apply_rotary_pos_emb and rotate_half, LlamaMLP.forward, LlamaDecoderLayer.forward) and PEFT's
# tuners/lora/layer.py (Linear.forward), each op's backward the autograd formula of that op:
# - RMSNorm, twice per layer, per element of d: forward cast to fp32 (2+4), square (4+4), mean
#   (4), scale by the rsqrt (4+4), cast back (4+2), weight multiply (2+2) = 36; backward the
#   same chain in reverse (weight multiply 4, cast 6, the rsqrt multiply's two gradients 8+16,
#   mean 4, square 12, summing x's two gradients 12, cast 6) = 68;
# - rotary, per element of q and of k: forward multiply by cos (2 elements moved),
#   rotate_half's negate and concatenate (3), multiply by sin (2), add (3) = 10 elements, 20
#   bytes; backward the two multiplies (4+4), the negate (2), summing the two gradients (6) = 16;
# - gated MLP (SwiGLU), per element of f: silu (2+2) and the multiply (6) = 10; backward silu
#   (6) and the multiply's two gradients (10) = 16; a plain MLP's activation alone 4, 6;
# - the two residual adds, per element of d: 12 forward; backward sums the gradients of each
#   residual's two consumers, 12;
# - LoRA on every linear layer (the modules a run adapts are not an input): per element of a
#   module's input, dropout (read, write, a one-byte mask) = 5, backward dropout (5) and adding
#   the branch's gradient to the input's (6) = 11; per element of its output, the scaling (4)
#   and the add to the frozen layer's output (6) = 10, backward the scaling alone, 4.
# Full recomputation (HF's gradient checkpointing) runs the forward once more. Left out: the
# loss head's casts and softmax (per token, not per layer), norm weight gradients of full
# fine-tuning, and layout copies (transposes before attention).
EAGER_NORM_BYTES = (36, 68)
EAGER_ROTARY_BYTES = (20, 16)
EAGER_GATED_MLP_BYTES = (10, 16)
EAGER_PLAIN_MLP_BYTES = (4, 6)
EAGER_RESIDUAL_BYTES = (12, 12)
LORA_INPUT_BYTES = (5, 11)
LORA_OUTPUT_BYTES = (10, 4)
# Memory-bound kernels reach the same share of the HBM peak as the quantisation casts above.
ELEMENTWISE_BANDWIDTH_SHARE = QUANTISATION_BANDWIDTH_SHARE


def eager_elementwise_seconds(work: Workload, gpu: GpuSpec) -> float:
    """Seconds per trained token of the unfused elementwise kernels of an eager stack, at the
    GPU's memory bandwidth; 0 on fused and unknown stacks."""
    if work.stack not in EAGER_STACKS:
        return 0.0
    forward = 2 if recompute_mode(work) == "full" else 1
    traffic = sum(
        elements * (forward * pair[0] + pair[1]) for elements, pair in eager_layer_ops(work)
    )
    return work.arch.layers * traffic / (bandwidth(gpu) * ELEMENTWISE_BANDWIDTH_SHARE)


def eager_layer_ops(work: Workload) -> list[tuple[int, tuple[int, int]]]:
    """One eager decoder layer's elementwise ops per token: (elements, (forward, backward)
    bytes per element), as counted above."""
    arch = work.arch
    d, q, kv = arch.hidden, arch.heads * arch.dim_head, arch.kv_heads * arch.dim_head
    width = mlp_width(arch)
    ops = [
        (2 * d, EAGER_NORM_BYTES),
        (q + kv, EAGER_ROTARY_BYTES),
        (width, EAGER_GATED_MLP_BYTES if arch.gated else EAGER_PLAIN_MLP_BYTES),
        (d, EAGER_RESIDUAL_BYTES),
    ]
    if work.task in ("lora", "qlora"):
        up = 2 if arch.gated else 1
        inputs = 3 * d + q + up * d + width  # q, k, v, o, gate/up, down
        outputs = q + 2 * kv + d + up * width + d
        ops += [(inputs, LORA_INPUT_BYTES), (outputs, LORA_OUTPUT_BYTES)]
    return ops


def mlp_width(arch: Architecture) -> int:
    """MLP width a token passes through per layer: its routed experts' on a MoE model."""
    if arch.is_moe:
        return (arch.expert_ffn or arch.ffn) * arch.experts_per_token
    return arch.ffn


def sixteen_bit(precision: str) -> str:
    """The 16-bit format the work of a lower-precision run falls back to."""
    return precision if precision in ("bf16", "fp16") else "bf16"


# How the training schedule overlaps the expert all-to-all with compute (`Workload.moe_overlap`,
# one of priceadvisor.workload.MOE_OVERLAP): "partial" (the default) leaves
# MOE_EXPOSED_COMMUNICATION of it exposed; "full" hides all of it that the compute can cover —
# DualPipe-style schedules that run one micro-batch's dispatch and combine under another's
# compute (the DeepSeek-V3 report, arXiv 2412.19437: "near-full computation-communication
# overlap"); "none" runs it on the critical path (a dispatcher without communication overlap).
def exposed_alltoall_seconds(work: Workload, gpu: GpuSpec, gpus: int, compute: float) -> float:
    """The part of the expert all-to-all per trained token that the schedule does not hide
    behind `compute` seconds of work (MOE_OVERLAP)."""
    transfer = moe_alltoall_seconds(work, gpu, gpus)
    overlap = work.moe_overlap or "partial"
    if overlap == "full":
        return max(0.0, transfer - compute)
    return transfer if overlap == "none" else MOE_EXPOSED_COMMUNICATION * transfer


# The megatron-2021 layout's tensor-parallel degree: the 8 GPUs of a DGX A100 node, as in every
# Megatron-LM SC21 Table 1 run (pipeline parallelism spans the nodes).
MEGATRON_2021_TENSOR_PARALLEL = 8


def training_tensor_parallel(work: Workload, gpus: int) -> int:
    """GPUs each layer of a training run is split over: as stated, else the megatron-2021
    layout's TP8 (within the GPUs), else none."""
    if work.tensor_parallel:
        return work.tensor_parallel
    if work.stack == "megatron-2021":
        return min(gpus, MEGATRON_2021_TENSOR_PARALLEL)
    return 1


def tensor_parallel_training_seconds(work: Workload, gpu: GpuSpec, gpus: int) -> float:
    """GPU-seconds per trained token of a training run's tensor-parallel all-reduces (zero
    without tensor parallelism). Megatron's layer split (Narayanan et al. 2021, SC21, §3.3.2:
    8·b·s·h·(t-1)/t per layer and micro-batch per device) all-reduces the layer's b·s·h
    16-bit activations twice in the forward and twice in the backward pass — sequence
    parallelism's all-gather and reduce-scatter move the same bytes — and twice more in the
    recomputed forward under full recomputation. A ring all-reduce moves 2(t-1)/t of them over
    one direction of the GPU's link (NVLink/Infinity Fabric inside a node, the node's network
    beyond it), and all t GPUs of the group wait for it."""
    t = training_tensor_parallel(work, gpus)
    if t <= 1:
        return 0.0
    allreduces = 6 if recompute_mode(work) == "full" else 4
    per_allreduce = 2 * (t - 1) / t * work.arch.hidden * 2 / collective_bandwidth(gpu, t)
    return t * work.arch.layers * allreduces * per_allreduce


def exposed_tensor_parallel_seconds(
    work: Workload, gpu: GpuSpec, gpus: int, compute: float
) -> float:
    """The part of `tensor_parallel_training_seconds` on the critical path. The 2021
    Megatron-LM runs its all-reduces between the GEMMs, exposed in full (every SC21 Table 1
    run is TP8 inside a node). Later stacks overlap them with the layer's GEMMs (Transformer
    Engine's tensor-parallel communication overlap in Megatron-Core, torchtitan's AsyncTP), so
    only what exceeds `compute` seconds of work is exposed — a lower bound that matters once
    a tensor-parallel group leaves the node."""
    transfer = tensor_parallel_training_seconds(work, gpu, gpus)
    if work.stack == "megatron-2021":
        return transfer
    return max(0.0, transfer - compute)


def check_training_layout(work: Workload, gpus: int) -> None:
    """Refuse a stated training tensor-parallel degree that the GPUs (with the pipeline
    stages) or the model's heads cannot take."""
    if work.tensor_parallel:
        check_tensor_parallel(work, gpus, work.tensor_parallel, unit="groups")


def data_parallel_seconds(work: Workload, gpu: GpuSpec, gpus: int, compute: float) -> float:
    """GPU-seconds per trained token of sharded data-parallel weight traffic that the step's
    compute cannot hide. Each GPU moves SHARDED_DP_PASSES x its model-parallel share of the
    16-bit weights per step (ring collectives: (dp-1)/dp of it over its link) while it computes
    `global_batch_tokens`/gpus tokens; the traffic is taken as overlapped with that compute at
    best (FSDP prefetches the next layer's all-gather and reduce-scatters during the backward),
    so only the excess is exposed — a lower bound: small per-GPU batches turn a run
    communication-bound (the reason whole runs of small models on many GPUs reach a low MFU).
    LoRA moves no gradients of frozen weights, and MoE sharding follows its expert layout:
    neither is counted here."""
    replicas = data_parallel_replicas(work, gpus)
    if work.task == "lora" or work.arch.is_moe or replicas <= 1:
        return 0.0
    shard_bytes = 2 * work.arch.total_params * replicas / gpus
    traffic = SHARDED_DP_PASSES * shard_bytes * (replicas - 1) / replicas
    transfer = traffic / link_bandwidth(gpu, gpus)
    tokens_per_gpu = work.global_batch_tokens / gpus
    exposed = max(0.0, transfer - compute * tokens_per_gpu)
    return exposed / tokens_per_gpu


def data_parallel_replicas(work: Workload, gpus: int) -> int:
    """Model copies the data-parallel dimension runs: the GPUs over the stated model-parallel
    layout (tensor parallel x pipeline stages; TP8 for megatron-2021), and never more than the
    step's whole sequences — a data-parallel rank takes whole sequences, so a global batch of fewer
    sequences than GPUs leaves the rest of the GPUs to model parallelism (tensor or context
    parallel inside the node; Llama 3 405B: 2,048 sequences of 8k on 16,384 GPUs, TP8)."""
    model_parallel = work.pipeline_parallel * training_tensor_parallel(work, gpus)
    sequences = max(1, int(work.global_batch_tokens // work.seq_len))
    return max(1, min(gpus // model_parallel, sequences))


def moe_alltoall_seconds(work: Workload, gpu: GpuSpec, gpus: int) -> float:
    """Expert-parallel all-to-all transfer time per trained token on one GPU: dispatch and
    combine of the token's hidden vector per MoE layer (a model's leading dense layers route
    nothing: `Architecture.dense_layers`), once forward and twice backward. Inside
    one NVLink domain every top-k copy travels over NVLink; beyond it a token crosses the
    network once per remote node holding one of its experts and is forwarded over NVLink there
    (DeepEP's node-level deduplication), at most `topk_group` nodes with node-limited routing
    (DeepSeek-V3). Without expert parallelism (degree 1) every GPU holds all the experts of its
    layers (sharded data parallelism gathers them like any weight): no token leaves its GPU."""
    arch = work.arch
    group = min(gpus, expert_parallel(work, gpu))
    if not arch.is_moe or group <= 1:
        return 0.0
    domain = scale_up_domain(gpu)
    copies = float(arch.experts_per_token)
    if group > domain:
        copies = remote_nodes_per_token(arch, math.ceil(group / domain))
    bytes_per_token = arch.moe_layers * copies * arch.hidden * 2 * 2 * 3
    return bytes_per_token / link_bandwidth(gpu, group)


def remote_nodes_per_token(arch: Architecture, nodes: int) -> float:
    """Expected remote nodes one token's top-k experts land on, experts spread evenly over
    `nodes`: each node is hit with probability 1-(1-1/nodes)^k, capped by node-limited
    routing; the token's own node is reached over NVLink."""
    k = arch.experts_per_token
    reached = nodes * (1 - (1 - 1 / nodes) ** k)
    if arch.routed_groups:
        reached = min(reached, float(arch.routed_groups))
    return reached * (nodes - 1) / nodes


def expert_parallel(work: Workload, gpu: GpuSpec) -> int:
    """Expert-parallel degree: as given, else the smallest power of two from 8 (one node) whose
    share of the 16-bit expert weights fits in half of one GPU's memory."""
    if work.expert_parallel:
        return work.expert_parallel
    arch = work.arch
    experts_bytes = (arch.total_params - arch.active_params) * 2
    degree = 8
    while degree < min(arch.experts, 256) and experts_bytes / degree > gpu.memory_gb * 1e9 / 2:
        degree *= 2
    return degree


def engine_factor(gpu: GpuSpec, scales: Scales) -> float:
    """Serving engine efficiency of the GPU's vendor relative to NVIDIA's (fitted, prior 1)."""
    return scales.factor(ENGINE_FACTOR) if _vendor_class(gpu) == "amd" else 1.0


def decode_mbu(gpu: GpuSpec, scales: Scales = PRIORS) -> float:
    """Share of HBM bandwidth a decode step reaches on weight reads: 0.57–0.83 measured at TP1
    on NVIDIA (FasterTransformer, LMDeploy, NIM), prior 0.75, scaled by the engine factor."""
    return 0.75 * engine_factor(gpu, scales)


def allreduce_latency(work: Workload, gpu: GpuSpec, tp: int) -> float:
    """One small-message all-reduce over `tp` GPUs: one-shot, whatever the group (above):
    ALLREDUCE_LATENCY_S on NVIDIA, the measured AMD_ONE_SHOT_ALLREDUCE_S on AMD's mesh;
    except vLLM's V0 engine on AMD parts: upstream vLLM ran its one-shot
    custom all-reduce on NVIDIA only until 2025 (AMD's ROCm/vllm fork enabled it for xGMI in
    ROCm/vllm#27, May 2024; upstream still lacked it in vllm-project/vllm#14755, March 2025),
    so those releases all-reduce through RCCL, sized as recursive doubling of log2(tp) steps
    (the latency term of Thakur, Rabenseifner & Gropp 2005) — the poor TP scaling the
    LLM-Inference-Bench MI300X rows measure."""
    if gpu.vendor != "AMD":
        return ALLREDUCE_LATENCY_S
    if work.engine == "vllm-v0":
        return math.log2(tp) * ALLREDUCE_LATENCY_S
    return AMD_ONE_SHOT_ALLREDUCE_S if gpu.family in XGMI_MESH_FAMILIES else ALLREDUCE_LATENCY_S


def serving_mfu(gpu: GpuSpec, scales: Scales = PRIORS) -> float:
    """Saturated serving compute efficiency: 45 % of dense peak counting 2·N·(in+out) FLOPs per
    request (TensorRT-LLM performance tables, H100), times the part's sustained matmul share
    relative to its vendor's reference part, scaled by the engine factor."""
    return 0.45 * achievable_matmul_share(gpu) * engine_factor(gpu, scales)


# Share of the datasheet dense 16-bit tensor peak that a large GEMM sustains on the part:
# "maximum achievable matmul FLOPS" (MAMF) measured per part in Stas Bekman's ml-engineering
# book (compute/accelerator, MAMF table), over the catalog's dense BF16 peak: A100 271 of 312,
# H100 SXM 795 of 989, GH200 829 of 989, B200 1745 of 2250, MI300X 668 of 1307 (ROCm 6.3),
# MI325X 785 of 1307, MI355X 1565 of 2517, Gaudi 2 419 of 432, Gaudi 3 1243 of 1835. H200 is
# the H100's die at the same 700 W: its share. Clocks under sustained tensor load (power
# limits: MI300X 750 W, MI325X 1000 W on the same die) make the difference, not the datasheet.
# Keyed by family with the SXM/OAM figure: lower-power PCIe variants sustain a little less
# (A100 PCIe 253 of 312), which is not modelled.
ACHIEVABLE_MATMUL_SHARE = {
    "A100": 0.87,
    "H100": 0.80,
    "H200": 0.80,
    "GH200": 0.84,
    "B200": 0.78,
    "MI300X": 0.51,
    "MI325X": 0.60,
    "MI355X": 0.62,
    "GAUDI2": 0.97,
    "GAUDI3": 0.68,
}


# The gap between vendors is the AMD engine factor's (fitted per fold: hardware and ROCm
# together), so a part's share counts relative to its vendor's reference part; other vendors
# have no engine factor and count relative to the H100 the serving priors were measured on.
VENDOR_REFERENCE_PART = {"NVIDIA": "H100", "AMD": "MI300X"}


def achievable_matmul_share(gpu: GpuSpec) -> float:
    """Sustained share of the dense tensor peak on the part (ACHIEVABLE_MATMUL_SHARE),
    relative to its vendor's reference part; 1 for a part without a measurement."""
    own = ACHIEVABLE_MATMUL_SHARE.get(gpu.family)
    if own is None:
        return 1.0
    return own / ACHIEVABLE_MATMUL_SHARE[VENDOR_REFERENCE_PART.get(gpu.vendor, "H100")]


PREFILL_MFU = 0.50


def prefill_mfu(gpu: GpuSpec, work: Workload) -> float:
    """Prefill is the forward pass of training (the same GEMMs, one request's prompt): 50 % of
    the 16-bit peak, and at 8/4 bit the same lower share of the low-precision peak that training
    reaches there (FP8 delivers ~1.7x, not 2x, the 16-bit speed: quantisation and the
    attention, norms and softmax that stay 16 bit); times the part's sustained matmul share
    relative to its vendor's reference part."""
    low = training_mfu(gpu, work.arch, work.precision)
    return PREFILL_MFU * low / training_mfu(gpu, work.arch, "bf16") * achievable_matmul_share(gpu)


def prior_uncertainty(gpu: GpuSpec, arch: Architecture, task: str) -> float:
    """Published-accuracy priors, used where calibration states no wider error for the regime:
    tuned NVIDIA training ±20 %, serving ±30 %; MoE, AMD/Intel, consumer cards and parts with
    no published measurements ±45 %."""
    kind = _vendor_class(gpu)
    if arch.is_moe or kind in ("amd", "other", "consumer") or gpu.family in ("L4", "T4", "V100"):
        return 0.45
    return 0.20 if task in TRAINING_TASKS else 0.30


@per_pass(objects=2)
def _uncertainty(work: Workload, gpu: GpuSpec, regime: str, /) -> float:
    prior = prior_uncertainty(gpu, work.arch, work.task)
    return round(max(prior, work.scales.range_for(regime, software_key(work))), 3)


def regime_factor(work: Workload, regime: str) -> float:
    """Fitted factor on the regime's efficiency prior: the pooled regime factor times the
    factor of the engine/stack running the work (1 when unknown or not fitted)."""
    return work.scales.factor(regime) * work.scales.software_factor(software_key(work))


# --- estimates ------------------------------------------------------------------------------


def estimate(
    work: Workload, gpu_model: str, gpu_count: float, tensor_parallel: int | None = None
) -> Estimate:
    """Training on `gpu_count` GPUs, or serving on `gpu_count` GPUs as replicas of
    `tensor_parallel` x `work.pipeline_parallel` GPUs each (TP default: the smallest degree
    that fits the workload). A count below one is a share of one GPU."""
    gpu = gpu_catalog().gpus[gpu_model]
    check_sizable(gpu)
    check_pipeline(work, gpu_count)
    if 0 < gpu_count < 1:
        result = _on_a_share(work, gpu, gpu_count)
    elif work.task in TRAINING_TASKS:
        result = _train(work, gpu, int(gpu_count), tensor_parallel)
    elif tensor_parallel:
        check_tensor_parallel(work, int(gpu_count), tensor_parallel)
        result = _serve(work, gpu, int(gpu_count), tensor_parallel)
    else:
        result = fastest_layout(work, gpu, int(gpu_count))
    _note_software(result, work)
    return result


# What every estimate reads of a model's specs: memory bandwidth, and a dense rate to fall back
# through (peak_flops).
SIZING_SPECS = (
    ("memory bandwidth", ("memory_bandwidth_gbs",)),
    ("dense tensor rate", ("bf16_dense_tflops", "fp16_dense_tflops", "fp32_tflops")),
)


@per_pass(objects=1)  # asked by every estimate: once per GPU model in a pass (a refusal raises)
def check_sizable(gpu: GpuSpec, /) -> None:
    """Refuse a model the efficiency priors have no published basis for (Trainium, Inferentia):
    a number from GPU-calibrated priors would look precise and be wrong; and a model whose
    catalog entry lacks a figure every estimate divides by."""
    if gpu.sizing_unsupported:
        raise SizingError(f"{gpu.id} ({gpu.name}) cannot be sized: {gpu.sizing_unsupported}")
    missing = [name for name, keys in SIZING_SPECS if not any(gpu.specs.get(k) for k in keys)]
    if missing:  # the estimate divides by both: a catalog gap must not become a crash
        raise SizingError(f"{gpu.id} cannot be sized: the catalog has no {' or '.join(missing)}")


def _note_software(result: Estimate, work: Workload) -> None:
    """Say when a named engine/stack has no fitted factor of its own (calibrated scales only)."""
    key = software_key(work)
    if key and work.scales.factors and key not in work.scales.factors:
        result.notes.append(
            f"no fitted factor for {key.replace(':', ' ')} (fewer than two publications "
            "measure it): pooled efficiency and range"
        )


def _on_a_share(work: Workload, gpu: GpuSpec, share: float) -> Estimate:
    """A fractional-GPU offer (a MIG slice such as 1/7 of an A100, a time-shared vGPU) sized
    as one GPU with memory, bandwidth and tensor rates in proportion."""
    part = fractional_gpu(gpu, share)
    training = work.task in TRAINING_TASKS
    result = _train(work, part, 1, None) if training else _serve(work, part, 1, 1)
    result.gpu_count = share
    result.notes.append(f"{share:.3g} of a {gpu.id}: memory and rates scaled in proportion")
    return result


RATE_KEYS = (
    "memory_bandwidth_gbs",
    "bf16_dense_tflops",
    "fp16_dense_tflops",
    "fp8_dense_tflops",
    "int8_dense_tops",
    "fp32_tflops",
)


def fractional_gpu(gpu: GpuSpec, share: float) -> GpuSpec:
    specs = {k: v * share if k in RATE_KEYS and v else v for k, v in gpu.specs.items()}
    return dataclasses.replace(gpu, memory_gb=gpu.memory_gb * share, specs=specs)


def check_tensor_parallel(work: Workload, gpus: int, tp: int, unit: str = "replicas") -> None:
    """Refuse a tensor-parallel degree (with the workload's pipeline stages) that `gpus` GPUs
    cannot be split into `unit` of (serving replicas, training model-parallel groups), or that
    the model's attention heads cannot take."""
    pp = work.pipeline_parallel
    if tp < 1 or gpus % (tp * pp):
        layout = f"{tp}" if pp == 1 else f"TP{tp} x PP{pp}"
        must = "TP" if pp == 1 else "TP·PP"
        raise SizingError(
            f"{gpus} GPUs cannot be split into {unit} of {layout} ({must} must divide)"
        )
    try:
        check_tensor_parallel_limit(tp, work.arch.heads)
    except WorkloadError as exc:
        raise SizingError(str(exc)) from None


# Pipeline stages tried for a serving replica when the workload states none.
PIPELINE_CHOICES = (1, 2, 4, 8)
TENSOR_PARALLEL_CHOICES = (1, 2, 4, 8, 16, 32, 64)


def serving_layouts(work: Workload, gpus: int) -> list[tuple[int, int]]:
    """(TP, PP) replica layouts the GPUs divide into and the model takes (at most one attention
    head per GPU, one layer per stage): PP as given when the workload states more than one
    stage, else each of PIPELINE_CHOICES."""
    arch = work.arch
    stages = (work.pipeline_parallel,) if work.pipeline_parallel > 1 else PIPELINE_CHOICES
    return [
        (tp, pp)
        for pp in stages
        for tp in TENSOR_PARALLEL_CHOICES
        if gpus % (tp * pp) == 0
        and (arch.heads <= 1 or tp <= arch.heads)
        and tp <= MAX_TENSOR_PARALLEL
        and (not arch.layers or pp <= arch.layers)
    ]


def fastest_layout(work: Workload, gpu: GpuSpec, gpus: int) -> Estimate:
    """Serving with no layout given: of the valid layouts (`serving_layouts`) that fit and meet
    the latency targets, the one the model predicts the most output tokens/s for (ties: more
    replicas, then fewer stages), with why in `layout_chosen`; when none fits, the smallest
    tensor-parallel degree that holds the workload (`default_tensor_parallel`), to say why."""
    with sizing_pass():
        ranked = fitting_layouts(work, gpu, gpus)
        if not ranked:
            return _serve(work, gpu, gpus, default_tensor_parallel(work, gpu, gpus))
        best = _serve(ranked[0].work, gpu, gpus, ranked[0].tp)
        runner = _runner_up(ranked[1], gpu) if len(ranked) > 1 else None
    best.layout_chosen = _layout_reason(best, runner, len(ranked))
    return best


class RankedLayout(NamedTuple):
    """A layout that fits, as the search ranks it: TP, the workload in its pipeline stages,
    the batch a replica runs and the output tokens/s of the GPUs' replicas."""

    tp: int
    work: Workload
    batch: int
    tokens_per_s: float


def fitting_layouts(work: Workload, gpu: GpuSpec, gpus: int) -> list[RankedLayout]:
    """The valid layouts that fit and meet the latency targets, fastest first (ties: more
    replicas, then fewer stages, then the order of `serving_layouts`). Each is ranked by the
    figures `_serve` gives it — the same helpers, without building an estimate: only the
    chosen layout is built."""
    ranked: list[tuple[float, int, int, RankedLayout]] = []
    for tp, pp in layouts_in_pass(work, gpus):
        figures = layout_figures(work, gpu, tp, pp)
        if figures is not None:
            staged, batch, step = figures
            speed = replicas_of(gpus, tp, pp) * batch / step  # as `serving_tokens_per_s`
            ranked.append((-speed, tp * pp, len(ranked), RankedLayout(tp, staged, batch, speed)))
    ranked.sort(key=lambda entry: entry[:3])
    return [layout for *_, layout in ranked]


@per_pass(objects=1)  # asked for every GPU model of a workload: once per GPU count in a pass
def layouts_in_pass(work: Workload, gpus: int, /) -> tuple[tuple[int, int], ...]:
    """`serving_layouts`, as a tuple the pass can share."""
    return tuple(serving_layouts(work, gpus))


@per_pass(objects=2)  # every GPU count holding the layout asks: once per layout in a pass
def layout_figures(work: Workload, gpu: GpuSpec, tp: int, pp: int, /) -> LayoutFigures | None:
    """What the search ranks a layout of TP x PP by, whatever the GPU count: the workload in
    its `pp` stages, the batch a replica runs (`fitting_batch`) and its saturated step
    (`saturated_step_seconds`); None when the layout does not fit or misses a latency target.
    One memo entry per layout, so that the search asks the pass once per layout and count."""
    staged = with_stages(work, pp)
    batch = fitting_batch(staged, gpu, tp)
    if batch is None:
        return None
    return LayoutFigures(staged, batch, saturated_step_seconds(staged, gpu, tp, batch))


class LayoutFigures(NamedTuple):
    """A fitting layout's figures for the search (`layout_figures`)."""

    work: Workload
    batch: int
    step: float


def _runner_up(layout: RankedLayout, gpu: GpuSpec) -> tuple[str, float, float]:
    """What the reason says of the runner-up: its name, tokens/s and TPOT (as `_serve` gives
    them)."""
    tpot = _tpot_ms(layout.work, gpu, layout.tp, layout.batch)
    return _layout_name(layout.tp, layout.work.pipeline_parallel), layout.tokens_per_s, tpot


def fitting_batch(work: Workload, gpu: GpuSpec, tp: int) -> int | None:
    """The batch a replica of TP x `work.pipeline_parallel` runs when it fits and meets the
    latency targets, else None; a replica whose memory holds no request is not sized further.
    Not memoised: `layout_figures`, its caller, is (once per layout in a pass)."""
    if not holds_a_request(work, gpu, tp):
        return None
    batch, _ = replica_batch(work, gpu, tp)
    return batch if meets_latency(work, gpu, tp, batch) else None


@per_pass(objects=1)
def with_stages(work: Workload, stages: int, /) -> Workload:
    """`work` served in `stages` pipeline stages: one object per (workload, stages) in a sizing
    pass, so that every layout and GPU count of the pass shares the memoised helpers."""
    if stages == work.pipeline_parallel:
        return work
    return dataclasses.replace(work, pipeline_parallel=stages)


def _layout_name(tp: int, pp: int) -> str:
    return f"TP{tp}" if pp == 1 else f"TP{tp} x PP{pp}"


def _layout_reason(best: Estimate, runner: tuple[str, float, float] | None, fitting: int) -> str:
    """Why the layout: its figures, how many fit, and the runner-up's (name, tokens/s, TPOT)."""
    reason = (
        f"{_layout_name(best.tensor_parallel, best.pipeline_parallel)} x {best.replicas} "
        f"replica(s): {best.tokens_per_s:,.0f} tok/s (TPOT {best.tpot_ms or 0:.0f} ms), the "
        f"fastest of {fitting} layouts that fit"
    )
    if runner:
        name, tokens_per_s, tpot_ms = runner
        reason += (
            f"; next {name}: {tokens_per_s:,.0f} tok/s (TPOT {tpot_ms or 0:.0f} ms); "
            "--tp/--pp set it"
        )
    return reason


def tensor_parallel_degrees(work: Workload, gpus: int) -> list[int]:
    """The degrees `default_tensor_parallel` chooses from: powers of two whose replicas of
    TP x PP GPUs divide the GPUs."""
    pp = work.pipeline_parallel
    return [d for d in (1, 2, 4, 8, 16, 32, 64) if gpus % (d * pp) == 0 and d * pp <= gpus]


def default_tensor_parallel(work: Workload, gpu: GpuSpec, gpus: int) -> int:
    """Smallest power-of-two TP whose replicas of TP x PP GPUs divide the GPUs and hold the
    requested concurrency in KV cache (else the smallest that fits at all; else all GPUs,
    capped)."""
    degrees = tensor_parallel_degrees(work, gpus)
    wanted = (work.concurrency or 1) * kv_tokens_per_request(work)
    for enough in (wanted, 1):
        for degree in degrees:
            if kv_tokens(work, gpu, degree) >= enough:
                return degree
    return degrees[-1]


@per_pass(objects=1)  # the same on every GPU model: once per count and policy in a pass
def training_memory(work: Workload, gpus: int, /) -> dict[str, float]:
    """Per GPU, GiB. Full/pre-training: mixed-precision AdamW at 16 B/param sharded ZeRO-3 over
    the GPUs; LoRA: frozen 16-bit weights (QLoRA: NF4 ≈ 0.56 B) + adapters; the activations the
    recompute policy keeps (`activation_bytes_per_token`) for one sequence, and the logits
    buffer, split by model parallelism over up to the 8 GPUs of a node."""
    arch, n = work.arch, work.arch.total_params
    if work.task in ("pretrain", "finetune"):
        state = {"model_state": 16 * n / gpus}
    else:
        frozen = 0.56 if work.task == "qlora" else WEIGHT_BYTES.get(work.precision, 2.0)
        adapters = 0.005 * n * 16  # rank-16 adapters on attention+MLP ≈ 0.5 % of N at 16 B
        state = {"weights": frozen * n / gpus, "adapters_and_optimizer": adapters}
    # Model parallelism (tensor/pipeline) inside a node splits activations across its GPUs.
    model_parallel = min(gpus, 8)
    activations = work.seq_len * activation_bytes_per_token(work) / model_parallel
    logits = work.seq_len * arch.vocab * 4 / model_parallel
    parts = state | {"activations": float(activations), "logits": float(logits)}
    return {k: v / GIB for k, v in parts.items()}


# Activations training keeps for the backward pass, bytes per layer and token of a micro-batch
# of one sequence (16-bit activations), from Korthikanti et al. 2022, "Reducing Activation
# Recomputation in Large Transformer Models" (MLSys 2023, §4, eq. 1-2 and Table 2): per layer
# s·b·h·(34 + 5·a·s/h) without recomputation, 34·s·b·h with selective recomputation (the
# attention core — QKᵀ, softmax, its dropout and the product with V — is re-run, which drops
# the 5·a·s²·b term), 2·s·b·h with full recomputation (each layer's input alone); with tensor
# and sequence parallelism all three divide by t (`training_memory` splits over the node).
# Assumptions: the 34 is the paper's GPT block (GeLU MLP at 4h, dropout); a Llama block
# (SwiGLU at ~3.5h, GQA, no dropout) keeps ~37·s·b·h by the same count — within the ±30 % the
# form is good for. FlashAttention (Dao et al. 2022, "FlashAttention: Fast and Memory-Efficient
# Exact Attention with IO-Awareness") never stores the s×s scores: its backward recomputes them
# from O(s) softmax statistics, so on every stack that uses it (all but megatron-2021, which
# predates it) no recomputation keeps 34·s·b·h, as selective recomputation does.
ACTIVATION_BYTES_PER_HIDDEN = {"none": 34.0, "selective": 34.0, "full": 2.0}
ATTENTION_SCORE_BYTES = 5.0  # × a·s per layer and token without FlashAttention
# The policies in order of recomputation: unset, a run takes the first whose memory fits.
RECOMPUTE_ORDER = ("none", "selective", "full")


def activation_bytes_per_token(work: Workload) -> float:
    """Bytes of activations kept per token of a sequence over all layers, under the run's
    recompute policy (ACTIVATION_BYTES_PER_HIDDEN)."""
    arch, policy = work.arch, recompute_mode(work)
    per_layer = ACTIVATION_BYTES_PER_HIDDEN[policy] * arch.hidden
    if policy == "none" and not uses_flash_attention(work):
        per_layer += ATTENTION_SCORE_BYTES * arch.heads * work.seq_len
    return per_layer * arch.layers


def uses_flash_attention(work: Workload) -> bool:
    """Whether the training stack runs FlashAttention (every one but the 2021 Megatron-LM)."""
    return work.stack != "megatron-2021"


def choose_recompute(work: Workload, gpu: GpuSpec, gpus: int) -> tuple[Workload, str]:
    """The workload with its recompute policy settled, and where the policy comes from: as
    given; else the stack's layout (megatron-2021: full); else the least recomputation whose
    memory fits (RECOMPUTE_ORDER), full when none does."""
    if work.recompute:
        return work, "given"
    if work.stack == "megatron-2021":
        return with_recompute(work, "full"), "the megatron-2021 layout's"
    available = usable_gib(gpu, TRAINING_MEMORY_UTILISATION)
    for policy in RECOMPUTE_ORDER:
        settled = with_recompute(work, policy)
        if sum(training_memory(settled, gpus).values()) <= available:
            return settled, "assumed: the least recomputation whose activations fit"
    return with_recompute(work, "full"), "assumed: the least memory (none fits)"


@per_pass(objects=1)
def with_training_tensor_parallel(work: Workload, tp: int | None, /) -> Workload:
    """`work` trained at tensor-parallel degree `tp`: one object per (workload, degree) in a
    sizing pass (the workload itself when it states that degree), so that the GPU models and
    counts of a pass share its recompute choices (`with_recompute`)."""
    if tp == work.tensor_parallel:
        return work
    return dataclasses.replace(work, tensor_parallel=tp)


@per_pass(objects=1)
def with_recompute(work: Workload, policy: str, /) -> Workload:
    """`work` under the recompute `policy`: one object per (workload, policy) in a sizing pass."""
    return dataclasses.replace(work, recompute=policy)


def attention_training_flops(arch: Architecture, seq_len: int) -> float:
    """Attention-score FLOPs per trained token, which 6·N leaves out: QKᵀ and AV are 4·t·d
    per layer at position t (d = heads x head dim), s/2 on average under a causal mask, and
    training runs them three times (forward, and gradients for both operands) — 6·L·s·d. They
    have no weights, so LoRA pays them in full: a larger share of its 4·N·D."""
    return 6.0 * arch.layers * seq_len * arch.heads * arch.dim_head


def attention_length(work: Workload) -> int:
    """Tokens a trained token attends over, on average twice its mean causal position: the
    sequence, or with packed fine-tuning data the document it belongs to. Packing
    concatenates short samples into one sequence but keeps each sample's attention to itself
    ("each input sequence should be treated individually": NeMo's sequence packing passes the
    samples' boundaries, cu_seqlens, to FlashAttention's variable-length kernels), so the
    attention-score FLOPs follow the samples' length, not the pack's."""
    if work.packed_document_tokens:
        return min(work.seq_len, work.packed_document_tokens)
    return work.seq_len


# Activation recomputation (`Workload.recompute`, one of priceadvisor.workload.RECOMPUTE):
# "full" re-runs every transformer layer's forward pass in the backward pass — 8 FLOPs per
# block parameter executed for 6 of model FLOPs in full training (Megatron-LM 2021 reports
# hardware FLOPs of that count), 6 for LoRA's 4; "selective" (Korthikanti et al. 2022) re-runs
# only the attention core, a few percent that FlashAttention's backward pays anyway, so it adds
# no GEMM FLOPs; "none" keeps every activation (`activation_bytes_per_token` gives what each
# keeps). Full recomputation checkpoints the transformer layers alone: Hugging Face's
# `gradient_checkpointing` wraps each decoder layer (the layer's forward under
# torch.utils.checkpoint), and Megatron-LM's `--recompute-granularity full` recomputes the
# transformer layers (TransformerBlock), not the output layer, so the LM head never runs twice.
# Unset, `_train` settles it first (`choose_recompute`): megatron-2021 recomputes in full,
# every other stack takes the least recomputation whose memory fits.
def recompute_mode(work: Workload) -> str:
    """The activation recomputation a training run uses: as given (or settled by
    `choose_recompute`), else the stack's layout."""
    if work.recompute:
        return work.recompute
    return "full" if work.stack == "megatron-2021" else "none"


# FLOPs per trained token by component, as Megatron-LM counts them (Narayanan et al. 2021,
# "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", appendix
# "Floating-Point Operations": 96·B·s·l·h²·(1 + s/6h + V/16lh) with full recomputation, whose
# last term is the logit layer's 6·B·s·h·V, run once; Korthikanti et al. 2022, "Reducing
# Activation Recomputation in Large Transformer Models", §6 counts it alike): the transformer
# blocks k·N_blocks (k = 6 for full training: forward, input and weight gradients; 4 with
# frozen weights), plus 2·N_blocks with full recomputation; the LM head k·V·d, never
# recomputed — and frozen under LoRA, so 4·V·d; the input embedding nothing (a row lookup, its
# gradient a scatter-add: no GEMM); a tied matrix still runs the LM-head GEMM once; the
# attention scores as `attention_training_flops`.
def executed_training_flops(work: Workload) -> float:
    """FLOPs executed per trained token: the blocks' k·N_blocks plus the attention scores
    (with full recomputation one more forward pass of both: 2·N_blocks and a third of the
    attention FLOPs) and the LM head's k·V·d. Throughput counts trained tokens, so
    recomputation shows as a lower model-FLOPs utilisation at the same hardware efficiency."""
    arch = work.arch
    attention = attention_training_flops(arch, attention_length(work))
    return _block_flops(work, arch.block_params, attention) + _lm_head_flops(work)


def sixteen_bit_training_flops(work: Workload) -> float:
    """The part of `executed_training_flops` that runs at 16 bit whatever the precision:
    low-precision training recipes quantise only the linear layers inside the transformer
    blocks ("The default low-precision LLM training recipe applies FP8 computation exclusively
    to the linear layers within the Transformer block", Megatron-Bridge performance tuning
    guide, "Low Precision Training"): the dot-product attention (Transformer Engine's FP8
    attention is off by default: recipe option `fp8_dpa=False`) and the vocabulary
    projection (Megatron's output layer is not a Transformer Engine module) stay 16-bit.
    Dense models; MoE training's prior splits its time its own way (`moe_compute_seconds`)."""
    attention = attention_training_flops(work.arch, attention_length(work))
    return _block_flops(work, 0.0, attention) + _lm_head_flops(work)


def _gemm_flops_per_param(work: Workload) -> int:
    """6 with trained weights (forward, input and weight gradients), 4 with frozen ones."""
    return 6 if work.task in ("pretrain", "finetune") else 4


def _block_flops(work: Workload, params: float, attention: float) -> float:
    useful = _gemm_flops_per_param(work) * params + attention
    if recompute_mode(work) != "full":
        return useful
    return useful + 2 * params + attention / 3


def _lm_head_flops(work: Workload) -> float:
    return _gemm_flops_per_param(work) * work.arch.lm_head_params


def pipeline_bubble(work: Workload) -> float:
    """Idle share a training pipeline adds to a step, relative to the step's work: m
    micro-batches through p stages leave each stage idle for p-1 micro-batch times while the
    pipeline fills and drains (GPipe and 1F1B alike), and v model chunks per GPU (Megatron's
    interleaved 1F1B) make those micro-batch times v-fold shorter: (p-1)/(v·m) (Narayanan et
    al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
    Megatron-LM", SC21, §2.2.1–2.2.2). The stages' point-to-point transfers are not counted."""
    p = work.pipeline_parallel
    if p <= 1 or not work.micro_batches:
        return 0.0
    return (p - 1) / (work.virtual_stages * work.micro_batches)


def check_pipeline(work: Workload, gpus: float) -> None:
    """Refuse a pipeline layout the GPUs or the model cannot take: the checks every workload
    passes (`priceadvisor.workload.check_pipeline_layout`), and whole GPUs the stages divide
    (no pipeline on a share of one)."""
    p = work.pipeline_parallel
    try:
        check_pipeline_layout(
            work.task, p, work.virtual_stages, work.micro_batches, work.arch.layers
        )
    except WorkloadError as exc:
        raise SizingError(str(exc)) from None
    if p > 1 and (gpus < 1 or int(gpus) % p):
        raise SizingError(
            f"{gpus:g} GPUs cannot be split into {p} pipeline stages (PP must divide)"
        )


def _train(work: Workload, gpu: GpuSpec, gpus: int, tensor_parallel: int | None) -> Estimate:
    figures = training_figures(work, gpu, gpus, tensor_parallel)
    result = Estimate(
        gpu.id,
        gpus,
        figures.fits,
        figures.binding,
        dict(figures.memory),  # the estimate's own copy of a dict a pass shares
        figures.available,
        tokens_per_s=figures.tokens_per_s,
        hours=figures.hours,
        uncertainty=figures.uncertainty,
        regime=figures.regime,
        recompute=recompute_mode(figures.work),
    )
    _note_training(result, figures, gpus)
    return result


class TrainingFigures(NamedTuple):
    """A training run's figures on `gpus` GPUs of a model (`training_figures`): what `_train`
    builds its estimate and notes from, and what advice reads without them."""

    work: Workload  # with its tensor-parallel degree and recompute policy settled
    recompute_source: str  # where the policy comes from (`choose_recompute`)
    memory: dict[str, float]  # per GPU, GiB (a pass shares it: never changed)
    available: float
    fits: bool
    binding: str
    regime: str
    uncertainty: float
    on_pcie: bool  # several GPUs of a PCIe-only part: scaled down
    eager: float  # seconds per token of an eager stack's elementwise kernels
    compute: float  # seconds per token of compute on one GPU
    bubble: float
    tokens_per_s: float
    hours: float | None


def training_figures(
    work: Workload, gpu: GpuSpec, gpus: int, tensor_parallel: int | None
) -> TrainingFigures:
    """Training's memory, fit, throughput and hours on `gpus` GPUs (`_train` without its
    notes)."""
    work = with_training_tensor_parallel(work, tensor_parallel or work.tensor_parallel)
    check_training_layout(work, gpus)
    work, recompute_source = choose_recompute(work, gpu, gpus)
    memory = training_memory(work, gpus)
    available = usable_gib(gpu, TRAINING_MEMORY_UTILISATION)
    fits = sum(memory.values()) <= available
    regime = training_regime(work)
    uncertainty = _uncertainty(work, gpu, regime)
    scale = regime_factor(work, regime)
    on_pcie = gpus > 1 and not has_fast_interconnect(gpu)
    if on_pcie:
        scale *= 0.8
    eager = eager_elementwise_seconds(work, gpu)
    compute = prior_compute_seconds(work, gpu) / scale + eager
    communication = exposed_alltoall_seconds(work, gpu, gpus, compute)
    communication += exposed_tensor_parallel_seconds(work, gpu, gpus, compute)
    communication += data_parallel_seconds(work, gpu, gpus, compute)
    binding = "communication" if communication > 0.2 * compute else "compute"
    bubble = pipeline_bubble(work)
    tokens_per_s = gpus / ((compute + communication) * (1 + bubble))
    hours = None
    if work.train_tokens and tokens_per_s > 0:
        goodput = run_goodput(gpus, work.scales) if work.goodput is None else work.goodput
        rate = tokens_per_s * goodput
        hours = work.train_tokens / rate / 3600
        if work.task == "pretrain":  # a whole run's hours carry the end-to-end range too
            uncertainty = max(uncertainty, _uncertainty(work, gpu, "train-e2e"))
    return TrainingFigures(
        work,
        recompute_source,
        memory,
        available,
        fits,
        binding if fits else "memory",
        regime,
        uncertainty,
        on_pcie,
        eager,
        compute,
        bubble,
        tokens_per_s,
        hours,
    )


def training_advice(
    work: Workload, gpu_model: str, gpus: int, tensor_parallel: int | None
) -> TrainingFigures:
    """`estimate(work, gpu_model, gpus, tensor_parallel)`'s figures for training on whole GPUs,
    without building the estimate (its notes, which advice never reads). Raises SizingError
    where `estimate` does."""
    gpu = gpu_catalog().gpus[gpu_model]
    check_sizable(gpu)
    check_pipeline(work, gpus)
    return training_figures(work, gpu, gpus, tensor_parallel)


def _note_training(result: Estimate, figures: TrainingFigures, gpus: int) -> None:
    """What a training estimate says beyond its figures, in this order: the recompute policy,
    the stated layout, a PCIe-only part, an eager stack's share, a pipeline bubble."""
    if figures.recompute_source != "given":
        result.notes.append(
            f"recompute {result.recompute} ({figures.recompute_source}; --recompute "
            "none|selective|full sets it)"
        )
    if figures.work.tensor_parallel:
        result.notes.append(_training_layout_note(figures.work, gpus))
    if figures.on_pcie:
        result.notes.append("multi-GPU training on a PCIe-only part: scales poorly")
    if figures.eager:
        result.notes.append(
            f"eager stack: unfused elementwise ops take {figures.eager / figures.compute:.0%} "
            "of the compute time, at memory bandwidth (fused kernels would skip most of it)"
        )
    if figures.bubble >= 0.05:
        result.notes.append(
            f"pipeline bubble: {figures.bubble:.0%} of the step idle ((PP-1)/(VP·micro-batches)); "
            "more micro-batches or interleaved stages (--vp) shrink it"
        )


def _training_layout_note(work: Workload, gpus: int) -> str:
    """The stated training layout in words (the estimate's tensor_parallel/replicas fields
    describe serving replicas)."""
    pipeline = f" x PP{work.pipeline_parallel}" if work.pipeline_parallel > 1 else ""
    replicas = data_parallel_replicas(work, gpus)
    return f"training layout TP{work.tensor_parallel}{pipeline}: data parallel over {replicas}"


def run_goodput(gpus: int, scales: Scales = PRIORS) -> float:
    """Share of a long run's wall time spent on steady-state training: each productive hour
    brings INTERRUPTIONS_PER_GPU_HOUR x gpus interruptions costing HOURS_LOST_PER_INTERRUPTION
    each; the fitted train-e2e factor (prior 1) carries the rest (evaluations, stalls)."""
    lost = INTERRUPTIONS_PER_GPU_HOUR * gpus * HOURS_LOST_PER_INTERRUPTION
    return scales.factor("train-e2e") / (1 + lost)


@per_pass(objects=2)
def serving_memory(work: Workload, gpu: GpuSpec, tp: int, /) -> tuple[dict[str, float], float]:
    """Per GPU, GiB: weights, prefill activation peak, runtime overhead; and what is left for KV.
    A pipeline stage holds 1/PP of the layers, so the weights split over TP x PP GPUs; the
    activation peak is one layer's (and the logits'), which the stages do not split."""
    parts = serving_parts(work, tp)
    if work.engine in FREE_MEMORY_KV_ENGINES:
        free = (usable_gib(gpu, 1.0) - sum(parts.values())) * SERVING_MEMORY_UTILISATION
    else:
        free = usable_gib(gpu, SERVING_MEMORY_UTILISATION) - sum(parts.values())
    return parts, free


@per_pass(objects=1)  # the same on every GPU model: once per layout in a pass (never mutated)
def serving_parts(work: Workload, tp: int, /) -> dict[str, float]:
    """`serving_memory`'s parts, per GPU in GiB, which depend on the layout and not the GPU."""
    arch = work.arch
    stored = arch.total_params * WEIGHT_BYTES[work.precision] + sixteen_bit_extra(work)
    weights = stored / (tp * work.pipeline_parallel) / GIB
    mlp_width = arch.expert_ffn * arch.experts_per_token if arch.is_moe else arch.ffn
    per_token = arch.vocab * 8 + mlp_width * 8 + arch.hidden * 16
    activation = PREFILL_CHUNK_TOKENS * per_token / tp / GIB
    return {"weights": weights, "activation_peak": activation, "runtime": RUNTIME_OVERHEAD_GIB}


# Engines that size the KV pool as a share of the memory left after loading the model, not of
# the whole GPU: TensorRT-LLM's `kv_cache_free_gpu_mem_fraction` (default 0.90, "The
# percentage of memory to use for KV Cache after model load", trtllm-bench's options in
# tensorrt_llm/bench/benchmark/; the LLM API's KvCacheConfig.free_gpu_memory_fraction).
# vLLM's gpu_memory_utilization (0.90) is a share of the whole GPU that weights, activations
# and KV share.
FREE_MEMORY_KV_ENGINES = ("trt-llm",)


def kv_bytes(work: Workload) -> float:
    """KV cache bytes per value: FP8 with FP8/FP4 weights, 16-bit otherwise (INT4 is
    weight-only, its KV stays 16-bit) unless set explicitly."""
    default = "fp8" if work.precision in ("fp8", "fp4") else "bf16"
    return WEIGHT_BYTES[work.kv_precision or default]


@per_pass(objects=1)  # read by every decode step and KV split: once per layout in a pass
def kv_per_token(work: Workload, tp: int, /) -> float:
    """KV bytes per token per GPU (a pipeline stage caches its 1/PP of the layers); for a model
    given by its parameter count alone, a Llama-like GQA layout (8 KV heads of 128, layers ≈
    32·(N/8B)^⅓: 32 at 8B, 66 at 70B where Llama 3 has 80) — the KV term is then approximate,
    and the estimate says so."""
    arch = work.arch
    if arch.layers:
        return arch.kv_bytes_per_token_per_gpu(kv_bytes(work), tp) / work.pipeline_parallel
    layers = round(32 * math.cbrt(arch.total_params / 8e9))
    return 2.0 * layers * 8 * 128 * kv_bytes(work) / min(tp, 8) / work.pipeline_parallel


# What a paged KV cache holds per request in flight. A paged engine allocates a sequence's KV
# blocks as it grows and admits new requests against the blocks in use (vLLM: Kwon et al.
# 2023, "Efficient Memory Management for Large Language Model Serving with PagedAttention",
# SOSP'23, §4.2-4.5: blocks allocated on demand, preemption when they run out; SGLang's and
# LMDeploy's schedulers likewise admit against current use). With requests at every stage of
# their output in a saturated batch, one holds input + output/2 tokens on average.
# TensorRT-LLM's default capacity scheduler, GUARANTEED_NO_EVICT, reserves a request's prompt
# plus its maximum output before starting it ("Useful Runtime Options", TensorRT-LLM
# performance tuning guide: "guarantee that a started request is never paused";
# MAX_UTILIZATION admits against current use): it admits input + output per request.
FULL_RESERVATION_ENGINES = ("trt-llm",)


def kv_tokens_per_request(work: Workload) -> float:
    """KV tokens one request in flight takes from the engine's admission budget (above)."""
    if work.engine in FULL_RESERVATION_ENGINES:
        return float(work.input_tokens + work.output_tokens)
    return work.input_tokens + work.output_tokens / 2


def max_requests(work: Workload, capacity: int) -> int:
    """Requests a replica's KV cache of `capacity` tokens admits at once: none unless one
    request's whole sequence fits, else the capacity over each one's admission share."""
    if capacity < work.input_tokens + work.output_tokens:
        return 0
    return int(capacity // kv_tokens_per_request(work))


@per_pass(objects=2)
def kv_tokens(work: Workload, gpu: GpuSpec, tp: int, /) -> int:
    _, free = serving_memory(work, gpu, tp)
    return max(0, int(free * GIB / kv_per_token(work, tp)))


def weights_read(work: Workload, batch: float) -> float:
    """Weight bytes a decode step reads. MoE: shared weights plus the experts the batch routes
    to — with top-k of E experts per token, a random batch of B touches 1-(1-k/E)^B of them
    (a real B: its continuous extension, which a speed bound reads)."""
    arch = work.arch
    byte = WEIGHT_BYTES[work.precision]
    if not arch.is_moe:
        return arch.total_params * byte + sixteen_bit_extra(work)
    k, e = arch.experts_per_token, arch.experts
    expert_total = (arch.total_params - arch.active_params) * e / max(1, e - k)
    shared = arch.total_params - expert_total
    touched: float = 1 - (1 - k / e) ** max(1, batch)  # float ** float: typed Any
    return (shared + expert_total * touched) * byte + sixteen_bit_extra(work)


def sixteen_bit_extra(work: Workload) -> float:
    """Bytes the embedding table and LM head add beyond the weight precision: quantisation
    recipes keep them at 16 bit (vLLM's FP8 method quantises linear layers, not the vocabulary
    embedding or LM head; llm-compressor recipes ignore "lm_head" and embeddings; AutoRound
    quantises the LM head only when asked), so a ModelOpt Llama 3.1 8B checkpoint is ~9 GB in
    FP8 and ~6 GB in NVFP4, not 8 and 4.5. Counted like the other weights: stored, and read
    once per decode step (the byte convention the bandwidth prior was measured with)."""
    arch = work.arch
    byte = WEIGHT_BYTES[work.precision]
    return arch.vocab * arch.hidden * (1 if arch.tied else 2) * max(0.0, 2.0 - byte)


@per_pass(objects=2)
def decode_seconds(work: Workload, gpu: GpuSpec, tp: int, batch: int, /) -> tuple[float, float]:
    """(memory term, compute term) of one decode step for `batch` concurrent requests, prefill
    excluded, per GPU of a replica. Memory: weights read + KV read at the mean context,
    per-layer launch overhead and the two all-reduces per layer under TP (latency and bytes);
    compute: 2·N_active FLOPs per token.

    Pipeline-parallel serving (PP stages of TP GPUs, each stage 1/PP of the layers) keeps PP
    micro-batches of b = ⌈B/PP⌉ requests in flight (TensorRT-LLM's and vLLM's pipeline
    parallelism, as GPipe's micro-batches in training, Huang et al. 2019): each tick every stage
    runs its L/PP layers for one micro-batch, and a request advances one token every PP ticks.
    One decode step of the whole batch is PP ticks; per GPU it reads its weights once per tick
    (weights_read(b)/TP in all), the KV of the PP·b requests' tokens over TP x PP, computes the
    PP·b tokens' 2·N_active over TP x PP, launches L/PP layers a tick (L in all), all-reduces
    only inside a stage (L layers of b tokens) and sends each tick's micro-batch activations
    to the next stage (`pipeline_send_seconds`). Continuous batching keeps every stage busy, so
    steady-state decode has no pipeline bubble. At PP 1 this is the tensor-parallel replica."""
    arch, pp = work.arch, work.pipeline_parallel
    rates = decode_rates(work, gpu)
    micro = math.ceil(batch / pp)
    context = work.input_tokens + work.output_tokens / 2
    kv = pp * micro * context * kv_per_token(work, tp) * kv_reads(work, gpu, tp)
    memory = (weights_read(work, micro) / tp + kv) / rates.bytes_per_s
    memory += rates.launch_seconds + reduce_latency(work, gpu, tp)
    memory += tp_allreduce_seconds(work, gpu, tp, micro)
    memory += pipeline_send_seconds(work, gpu, tp, pp * micro)
    compute = 2 * arch.active_params * micro / (tp * rates.peak_flops * rates.mfu)
    return memory, compute


class DecodeRates(NamedTuple):
    """The terms of a decode step that depend on the workload and GPU alone, not on the layout
    or batch (`decode_rates`)."""

    bytes_per_s: float  # HBM bandwidth x the decode MBU (regime-scaled)
    launch_seconds: float  # the layers' kernel launch and tail time of one step
    peak_flops: float  # dense tensor FLOP/s at the workload's precision
    mfu: float  # saturated serving MFU (regime-scaled)


@per_pass(objects=2)
def decode_rates(work: Workload, gpu: GpuSpec, /) -> DecodeRates:
    """`DecodeRates` of the workload on the GPU: computed once per pass, read by every layout
    and batch of `decode_seconds` and `saturated_step_seconds`."""
    mbu = decode_mbu(gpu, work.scales) * regime_factor(work, "decode")
    mfu = serving_mfu(gpu, work.scales) * regime_factor(work, "serve-throughput")
    return DecodeRates(
        bandwidth(gpu) * mbu,
        (work.arch.layers or 32) * layer_overhead(work),
        peak_flops(gpu, work.precision),
        mfu,
    )


def pipeline_send_seconds(work: Workload, gpu: GpuSpec, tp: int, tokens: int) -> float:
    """Time a pipeline stage spends sending the 16-bit activations (hidden values) of `tokens`
    tokens to the next stage over one direction of the link (none without a pipeline)."""
    pp = work.pipeline_parallel
    if pp <= 1:
        return 0.0
    return tokens * work.arch.hidden * 2 / point_to_point_bandwidth(gpu, tp * pp)


def kv_reads(work: Workload, gpu: GpuSpec, tp: int = 1) -> float:
    """Times a decode step reads each cached KV byte. Once in a GQA-aware kernel (FlashAttention,
    FlashInfer, TensorRT-LLM's); but vLLM's V0 engine on NVIDIA parts cannot run an 8-bit KV
    cache in FlashAttention-2 ("Cannot use FlashAttention-2 backend for FP8 KV cache") and,
    unless FlashInfer is installed, decodes it in its own PagedAttention kernel, which gives
    each query head a thread block of its own (csrc/attention/attention_kernels.cu; vLLM's
    "Paged Attention" design notes): each KV head is read once per query head of its group.
    That kernel ran 3x slower than FlashAttention on an A100 at GQA 7 and batch 64
    (Dao-AILab/flash-attention#797), and inside it an FP8 cache 30 % below a 16-bit one end to
    end on H200 (vllm-project/vllm#7798). vLLM's V1 engine reads FP8 KV in FlashAttention 3 or
    FlashInfer (vLLM docs, "Quantized KV Cache"); no AMD row shows the effect. Per GPU under
    `tp`: heads/tp query heads over max(1, kv_heads/tp) KV heads (replicated beyond kv_heads)."""
    arch = work.arch
    paged = work.engine == "vllm-v0" and gpu.vendor == "NVIDIA" and kv_bytes(work) < 2
    if not paged or not arch.kv_heads:
        return 1.0
    return max(1.0, arch.heads / max(tp, arch.kv_heads))


def layer_overhead(work: Workload) -> float:
    """Launch and tail time of one decode layer's kernels: LAYER_OVERHEAD_S, plus one
    quantisation kernel per GEMM where the engine quantises activations separately
    (SEPARATE_ACTIVATION_QUANT_ENGINES) at a W8A8/FP4 precision."""
    separate = (
        work.engine in SEPARATE_ACTIVATION_QUANT_ENGINES
        and work.precision in QUANTISED_ACTIVATION_PRECISIONS
    )
    return LAYER_OVERHEAD_S + (GEMMS_PER_LAYER * KERNEL_OVERHEAD_S if separate else 0.0)


def prefill_seconds(work: Workload, gpu: GpuSpec, tp: int, requests: int = 1) -> float:
    """Compute time of prefilling `requests` prompts (attention FLOPs included). Under pipeline
    parallelism the prompts cross the stages one after another, so prefill runs at TP-way
    parallelism (no speed-up from the stages) and pays the stage-to-stage sends; a static
    batch's prompts are sized the same way (conservative: an engine may pipeline them)."""
    arch, s = work.arch, work.input_tokens
    flops = requests * (2 * arch.active_params * s + 2 * arch.layers * s * s * arch.hidden)
    mfu = prefill_mfu(gpu, work) * regime_factor(work, "prefill")
    compute = flops / (tp * peak_flops(gpu, work.precision) * mfu)
    sends = pipeline_send_seconds(work, gpu, tp, (work.pipeline_parallel - 1) * requests * s)
    return compute + requests * tp_allreduce_seconds(work, gpu, tp, s) + sends


# Share of NVLink's line rate that NCCL's ring all-reduce moves: "450GB/s is the line rate. With
# the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s" on H100
# (NCCL's maintainer, NVIDIA/nccl-tests#212, 2024; 368.8 GB/s measured with NVLink SHARP off in
# NVIDIA/nccl-tests#309). The same packet protocol runs on every NVLink generation; AMD's mesh
# carries its own usable share (XGMI_USABLE_SHARE). NVLink SHARP (NCCL 2.18+ on H100 nodes)
# can exceed it for very large messages; the engines' prefill all-reduces are tens of MB.
NVLINK_PROTOCOL_SHARE = 370 / 450


def tp_allreduce_seconds(
    work: Workload, gpu: GpuSpec, tp: int, tokens: int, message_tokens: int | None = None
) -> float:
    """Ring all-reduce of the activations of `tokens` tokens, twice per layer, under tensor
    parallelism: 2(t-1)/t of the 16-bit activations over one direction of the GPU's links
    into the group (`collective_bandwidth`: on AMD's mesh the t-1 links to its peers), at the
    share of NVLink's line rate that NCCL reaches (NVLINK_PROTOCOL_SHARE), or on the whole
    MI300X mesh the share RCCL reaches at the size of one all-reduce (`mesh_allreduce_share`:
    `message_tokens` tokens' activations when the step's tokens are all-reduced in other
    pieces, e.g. prefill chunks; else `tokens`)."""
    if tp <= 1:
        return 0.0
    size = tokens * work.arch.hidden * 2
    message = (message_tokens or tokens) * work.arch.hidden * 2
    bandwidth = allreduce_bandwidth(gpu, tp) * mesh_allreduce_share(gpu, tp, message)
    return 2 * work.arch.layers * 2 * (tp - 1) / tp * size / bandwidth


def mesh_allreduce_share(gpu: GpuSpec, tp: int, message_bytes: float) -> float:
    """Share of the mesh's usable rate that RCCL's all-reduce of `message_bytes` reaches over
    the eight GPUs of an MI300X/MI325X platform (MESH_ALLREDUCE_BUS_GBS, log-interpolated); 1
    for any other group or part."""
    if tp != MESH_ALLREDUCE_GROUP or gpu.family not in MESH_ALLREDUCE_FAMILIES:
        return 1.0
    usable = XGMI_PEER_LINKS * 48.0  # MI300X: 7 links of ~48 GB/s usable, the table's ceiling
    sizes = MESH_ALLREDUCE_BUS_GBS
    if message_bytes <= sizes[0][0]:
        return sizes[0][1] / usable
    for (low, low_gbs), (high, high_gbs) in itertools.pairwise(sizes):
        if message_bytes <= high:
            step = math.log(message_bytes / low) / math.log(high / low)
            return (low_gbs + step * (high_gbs - low_gbs)) / usable
    return sizes[-1][1] / usable


@per_pass(objects=1)  # asked for every decode step and prefill: once per GPU and degree a pass
def allreduce_bandwidth(gpu: GpuSpec, tp: int, /) -> float:
    """Bytes/s a tensor-parallel all-reduce moves per GPU: `collective_bandwidth`, at NCCL's
    share of the line rate where the group talks over NVLink."""
    nvlink = gpu.vendor == "NVIDIA" and tp <= scale_up_domain(gpu) and has_fast_interconnect(gpu)
    return collective_bandwidth(gpu, tp) * (NVLINK_PROTOCOL_SHARE if nvlink else 1.0)


@per_pass(objects=2)
def ttft_seconds(work: Workload, gpu: GpuSpec, tp: int, requests: int = 1) -> float:
    """The prefill pass: its compute plus its memory side — one pass over the weights, the
    layers' kernel launches and the small all-reduces' latency, the memory term of one decode
    step (`decode_seconds` of one request), added like decode's two terms. The first token is
    sampled from the prefill's last logits: TensorRT-LLM measures TTFT as a run with one output
    token (its performance docs, "Reproducing First Token Latency"), no decode step after it.
    Under pipeline parallelism both cross the stages in turn: TP-way prefill, all the weights
    read at TP, so the stages never shorten the TTFT."""
    return prefill_seconds(work, gpu, tp, requests) + decode_seconds(work, gpu, tp, requests)[0]


def request_seconds(work: Workload, gpu: GpuSpec, tp: int, batch: int) -> float:
    """Wall time of a static batch: its prefill, then every output token as a decode step."""
    return ttft_seconds(work, gpu, tp, batch) + work.output_tokens * _step(work, gpu, tp, batch)


def _step(work: Workload, gpu: GpuSpec, tp: int, batch: int) -> float:
    return sum(decode_seconds(work, gpu, tp, batch))


def _serve(work: Workload, gpu: GpuSpec, gpus: int, tp: int) -> Estimate:
    memory, free = serving_memory(work, gpu, tp)
    available = usable_gib(gpu, SERVING_MEMORY_UTILISATION)
    capacity = kv_tokens(work, gpu, tp)
    max_concurrency = max_requests(work, capacity)
    regime = serving_regime(work)
    result = Estimate(
        gpu.id,
        gpus,
        holds_a_request(work, gpu, tp),
        "bandwidth",
        memory | {"kv_cache": max(free, 0.0)},
        available,
        max_concurrency=max_concurrency,
        uncertainty=_uncertainty(work, gpu, regime),
        tensor_parallel=tp,
        regime=regime,
        pipeline_parallel=work.pipeline_parallel,
    )
    if tp > 1 and not has_fast_interconnect(gpu):
        result.notes.append("tensor parallel over PCIe: expect lower throughput")
    if kv_reads(work, gpu, tp) > 1:
        result.notes.append(
            "vLLM's V0 engine decodes an 8-bit KV cache in its PagedAttention kernel, reading "
            f"it {kv_reads(work, gpu, tp):g}x (once per query head); its V1 engine (--engine vllm) "
            "or a 16-bit KV cache (--kv-precision bf16) reads it once"
        )
    if not work.arch.layers:
        result.notes.append(
            "KV cache sized for a Llama-like GQA layout: give --layers/--kv-heads/--head-dim"
        )
    if not result.fits:
        result.binding = "memory"
        return result
    requested = requested_batch(work, gpu, max_concurrency)
    batch, binding = serving_binding(work, gpu, tp, max_concurrency)
    if binding == "kv capacity":
        result.notes.append(
            f"KV cache holds {max_concurrency} requests per replica of the {requested} requested"
        )
    if work.concurrency is None:
        result.batch_assumed = _engine_batch_reason(work, gpu, batch, max_concurrency)
    _note_engine_cap(result, work, gpu, batch)
    _finish_serving(result, work, gpu, tp, batch, binding)
    _note_wave(result, work, gpu, tp, batch)
    return result


def serving_regime(work: Workload) -> str:
    """The regime whose fitted range a serving estimate states."""
    return "decode" if work.task == "serve" and (work.concurrency or 0) <= 4 else "serve-throughput"


def serving_binding(work: Workload, gpu: GpuSpec, tp: int, admitted: int) -> tuple[int, str]:
    """A fitting replica's batch and what binds it: `replica_batch`'s, or the KV capacity when
    it admits fewer requests than asked and no latency target binds first."""
    batch, binding = replica_batch(work, gpu, tp)
    if binding != "latency target" and admitted < requested_batch(work, gpu, admitted):
        binding = "kv capacity"
    return batch, binding


class ServingFigures(NamedTuple):
    """What advice reads of a serving estimate (`fastest_figures`), as the estimate has it."""

    gpu_model: str
    replicas: int
    tokens_per_s: float
    ttft_ms: float
    tpot_ms: float
    binding: str
    uncertainty: float


def fastest_figures(work: Workload, gpu_model: str, gpus: int) -> ServingFigures | None:
    """`estimate(work, gpu_model, gpus)`'s figures that advice reads, for serving on whole GPUs
    with no layout given, without building the estimate (its memory parts, notes and the
    reasons for its layout and batch, which advice never reads): the fastest layout's, as
    `_serve` gives them. None when no layout fits: the estimate then says why. Raises
    SizingError where `estimate` does."""
    gpu = gpu_catalog().gpus[gpu_model]
    check_sizable(gpu)
    check_pipeline(work, gpus)
    with sizing_pass():
        best = fastest_fitting(work, gpu, gpus)
        return None if best is None else chosen_figures(best.work, gpu, gpus, best.tp)


def unfit_for_certain(work: Workload, gpu_model: str, gpus: int) -> bool:
    """When `fastest_figures` found no layout that fits: whether the estimate does not fit
    either. It falls back to the smallest TP that holds the workload
    (`default_tensor_parallel`) at the workload's stages; when that layout is one the search
    tried, the search found it holds no request or misses a latency target, and so does the
    estimate. Else (a TP the search leaves out) only the estimate can say. When the search
    tried every degree the fallback can choose, which one it is does not matter."""
    gpu = gpu_catalog().gpus[gpu_model]
    with sizing_pass():
        tried = layouts_in_pass(work, gpus)
        pp = work.pipeline_parallel
        if all((tp, pp) in tried for tp in tensor_parallel_degrees(work, gpus)):
            return True
        return (default_tensor_parallel(work, gpu, gpus), pp) in tried


def fastest_fitting(work: Workload, gpu: GpuSpec, gpus: int) -> RankedLayout | None:
    """`fitting_layouts(work, gpu, gpus)[0]` (None when none fits) without sizing the layouts
    that cannot win: they are sized in the order of an upper bound on their tokens/s
    (`replica_speed_bound` x replicas) until the next one's bound is below the fastest found.
    The same layout as the full search: one left out is slower than the one chosen, never tied
    with it."""
    bounded = []
    for index, (tp, pp) in enumerate(layouts_in_pass(work, gpus)):
        bound = replica_speed_bound(work, gpu, tp, pp)
        if bound is not None:
            bounded.append((-bound * replicas_of(gpus, tp, pp), index, tp, pp))
    bounded.sort()
    return fastest_of_bounded(work, gpu, gpus, bounded)


# A layout the search may size: (-bound on its tokens/s, its index in `serving_layouts`, TP, PP).
BoundedLayout = tuple[float, int, int, int]


def fastest_of_bounded(
    work: Workload, gpu: GpuSpec, gpus: int, bounded: list[BoundedLayout]
) -> RankedLayout | None:
    """`fastest_fitting`'s search over the layouts that hold a request, sorted by their bound
    (highest first): each is sized in full until the next one's bound is below the fastest
    found."""
    best: tuple[tuple[float, int, int], RankedLayout] | None = None
    for negative_bound, index, tp, pp in bounded:
        if best is not None and -negative_bound < best[1].tokens_per_s:
            break
        figures = layout_figures(work, gpu, tp, pp)
        if figures is not None:
            speed = replicas_of(gpus, tp, pp) * figures.batch / figures.step
            key = (-speed, tp * pp, index)  # `fitting_layouts`' order
            if best is None or key < best[0]:
                best = key, RankedLayout(tp, figures.work, figures.batch, speed)
    return None if best is None else best[1]


# Covers the rounding of the bound's few operations against the exact figures' (~1e-15 each).
SPEED_BOUND_MARGIN = 1 + 1e-6


@per_pass(objects=2)  # every GPU count holding the layout asks: once per layout in a pass
def replica_speed_bound(work: Workload, gpu: GpuSpec, tp: int, pp: int, /) -> float | None:
    """An upper bound on the output tokens/s of one replica of TP x PP (`serving_tokens_per_s`
    at the layout's batch, over its replicas), from the replica's memory and the decode rates;
    None when a replica holds no request (the layout does not fit). A saturated step
    of B requests (`saturated_step_seconds`) is at least the parts of its decode step and
    prefill that every layout pays: the weights its micro-batch routes to over TP GPUs
    (`routed_batch`) and the KV of B requests at the mean context, read at the decode
    bandwidth, the layers' launches and, under TP, their small all-reduces' latency
    (`reduce_latency`), and 2·N_active FLOPs for each decode token of its ceil(B/PP) ≥ B/PP
    micro-batch and each prompt token prefilled per step, over TP x PP GPUs; the all-reduces'
    bytes, sends and preempted tokens only add. So B / step ≤ B / (a + b·B), which grows
    with B, and B is at most the batch asked of a replica within what its KV cache admits
    (exactly that batch without a TPOT target). With a TPOT target, B is also at most the
    batch whose decode step alone (`_step`: the same terms without the prefill's FLOPs) can
    meet it (`tpot_batch_cap`); on a MoE model whose routed weights grow concavely with the
    micro-batch (`routing_grows_concavely`), B / (a + W(B/PP)/TP/bandwidth + b·B) grows with B,
    so the weights of that bound's B/PP requests (`weights_read` of a real micro-batch, at
    most those of the ceil(B/PP) it runs) bound every smaller batch the target lets run."""
    staged = with_stages(work, pp)
    if not holds_a_request(staged, gpu, tp):
        return None
    admitted = max_requests(staged, kv_tokens(staged, gpu, tp))
    asked = max(1, min(requested_batch(staged, gpu, admitted), admitted))
    rates = decode_rates(staged, gpu)
    context = staged.input_tokens + staged.output_tokens / 2
    tokens = 1 + staged.input_tokens / max(1, staged.output_tokens)  # per decode token
    weights = weights_read(staged, routed_batch(staged, asked))
    fixed = weights / tp / rates.bytes_per_s + rates.launch_seconds
    fixed += reduce_latency(staged, gpu, tp)
    kv_read = context * kv_per_token(staged, tp) / rates.bytes_per_s
    flops_per_s = tp * pp * rates.peak_flops * rates.mfu
    batch: float = asked
    if staged.tpot_ms_max is not None:
        decode = kv_read + 2 * staged.arch.active_params / flops_per_s
        batch = max(1, min(asked, tpot_batch_cap(staged.tpot_ms_max, fixed, decode)))
        if routing_grows_concavely(staged):
            weights = weights_read(staged, batch / pp)
            fixed = weights / tp / rates.bytes_per_s + rates.launch_seconds
            fixed += reduce_latency(staged, gpu, tp)
    per_request = kv_read + 2 * staged.arch.active_params * tokens / flops_per_s
    step = fixed + per_request * batch
    return batch / step * SPEED_BOUND_MARGIN


def tpot_batch_cap(tpot_ms_max: float, fixed: float, per_request: float) -> float:
    """The largest batch B (not rounded) whose decode step can meet a TPOT target when the
    step is at least `fixed` + `per_request` x B seconds; the target is widened by
    SPEED_BOUND_MARGIN against the rounding of the step's own few operations."""
    return (tpot_ms_max / 1000 * SPEED_BOUND_MARGIN - fixed) / per_request


def routing_grows_concavely(work: Workload, /) -> bool:
    """Whether `weights_read` grows with the micro-batch as a concave function whose value at
    an empty batch is not negative (a MoE model whose weights outside the experts, the shared
    ones, are not negative): then x / (a + c·W(x) + b·x) grows with x for a, b, c ≥ 0, which
    `replica_speed_bound` relies on under a TPOT target."""
    arch = work.arch
    if not arch.is_moe:
        return False
    k, e = arch.experts_per_token, arch.experts
    expert_total = (arch.total_params - arch.active_params) * e / max(1, e - k)
    experts_not_negative = arch.total_params >= arch.active_params
    return 0 < k <= e and experts_not_negative and arch.total_params - expert_total >= 0


def routed_batch(work: Workload, batch: int) -> int:
    """The micro-batch whose routed weights (`weights_read`, which grows with it on a MoE
    model) a replica's decode step reads at least, for a bound on `batch`: without a TPOT
    target the replica runs that batch (`_choose_batch`), so ceil(batch/PP); with one, its
    batch may be smaller, so one request."""
    if work.tpot_ms_max is not None or not work.arch.is_moe:
        return 1
    return math.ceil(batch / work.pipeline_parallel)


def reduce_latency(work: Workload, gpu: GpuSpec, tp: int) -> float:
    """The latency of a decode step's small all-reduces, two per layer under TP (the term of
    `decode_seconds`)."""
    if tp <= 1:
        return 0.0
    return 2 * (work.arch.layers or 32) * allreduce_latency(work, gpu, tp)


def chosen_figures(work: Workload, gpu: GpuSpec, gpus: int, tp: int) -> ServingFigures:
    """What advice reads of the estimate of `gpus` GPUs in replicas of TP x PP (the chosen
    layout's `_serve`)."""
    replica = replica_figures(work, gpu, tp)
    replicas = replicas_of(gpus, tp, work.pipeline_parallel)
    return ServingFigures(
        gpu.id,
        replicas,
        serving_tokens_per_s(work, gpu, tp, replica.batch, replicas),
        replica.ttft_ms,
        replica.tpot_ms,
        replica.binding,
        replica.uncertainty,
    )


class ReplicaFigures(NamedTuple):
    """`chosen_figures`' part that one replica of a layout gives, whatever the GPU count."""

    batch: int
    ttft_ms: float
    tpot_ms: float
    binding: str
    uncertainty: float


@per_pass(objects=2)  # the layout that wins at several counts: once per layout in a pass
def replica_figures(work: Workload, gpu: GpuSpec, tp: int, /) -> ReplicaFigures:
    admitted = max_requests(work, kv_tokens(work, gpu, tp))
    batch, binding = serving_binding(work, gpu, tp, admitted)
    return ReplicaFigures(
        batch,
        ttft_seconds(work, gpu, tp) * 1000,
        _tpot_ms(work, gpu, tp, batch),
        binding,
        _uncertainty(work, gpu, serving_regime(work)),
    )


def holds_a_request(work: Workload, gpu: GpuSpec, tp: int) -> bool:
    """Whether a replica's memory holds the weights and one whole request's KV cache."""
    _, free = serving_memory(work, gpu, tp)
    return free > 0 and max_requests(work, kv_tokens(work, gpu, tp)) >= 1


def requested_batch(work: Workload, gpu: GpuSpec, admitted: int) -> int:
    """The batch asked of a replica: the workload's concurrency, else the engine's
    (`engine_batch`)."""
    return work.concurrency or engine_batch(work, gpu, admitted)


@per_pass(objects=2)
def replica_batch(work: Workload, gpu: GpuSpec, tp: int, /) -> tuple[int, str]:
    """The batch a replica runs — the requested one within what its KV cache admits and the
    TPOT target allows (`_choose_batch`) — and what binds it there."""
    admitted = max_requests(work, kv_tokens(work, gpu, tp))
    return _choose_batch(work, gpu, tp, min(requested_batch(work, gpu, admitted), admitted))


def _note_wave(result: Estimate, work: Workload, gpu: GpuSpec, tp: int, batch: int) -> None:
    recompute = wave_recompute_tokens(work, gpu, tp, batch)
    if recompute > 0:
        whole = kv_tokens(work, gpu, tp) // (work.input_tokens + work.output_tokens)
        result.notes.append(
            f"the wave outgrows the KV cache: {work.engine} preempts and re-prefills "
            f"~{recompute / 1e6:.2g} M tokens; a batch of {whole} fits at full length"
        )


def engine_cap(work: Workload, gpu: GpuSpec) -> int | None:
    """The engine's default cap on the sequences a replica runs (ENGINE_DEFAULT_MAX_BATCH);
    None for an engine that admits while its KV cache has room."""
    if work.engine in UNCAPPED_ENGINES:
        return None
    large = gpu.memory_gb * USABLE_OF_NOMINAL >= LARGE_GPU_GIB and gpu.family != "A100"
    if work.engine != "vllm-v0" and large:
        return ENGINE_LARGE_GPU_MAX_BATCH
    return ENGINE_DEFAULT_MAX_BATCH


def engine_batch(work: Workload, gpu: GpuSpec, admitted: int) -> int:
    """The batch an engine runs when the user states none: as many sequences as its KV cache
    admits, up to its default cap."""
    cap = engine_cap(work, gpu)
    return max(1, admitted if cap is None else min(admitted, cap))


def _engine_batch_reason(work: Workload, gpu: GpuSpec, batch: int, admitted: int) -> str:
    cap = engine_cap(work, gpu)
    name = "the engine" if work.engine == UNKNOWN else work.engine
    if cap is not None and cap <= admitted:
        return (
            f"{batch} ({name}'s default cap on running sequences; the KV cache admits {admitted})"
        )
    return f"{batch} (as many sequences as the KV cache admits; --concurrency sets it)"


def _note_engine_cap(result: Estimate, work: Workload, gpu: GpuSpec, batch: int) -> None:
    cap = engine_cap(work, gpu)
    if work.concurrency is not None and cap is not None and batch > cap:
        result.notes.append(
            f"batch {batch} exceeds the engine's default cap of {cap} running sequences "
            "(vLLM: max_num_seqs): raise it or the engine caps it"
        )


def _choose_batch(work: Workload, gpu: GpuSpec, tp: int, batch: int) -> tuple[int, str]:
    """Largest batch ≤ `batch` whose TPOT meets the target (binary search)."""
    if work.tpot_ms_max is None or _tpot_ms(work, gpu, tp, batch) <= work.tpot_ms_max:
        memory, compute = decode_seconds(work, gpu, tp, max(batch, 1))
        return max(batch, 1), "compute" if compute > memory else "bandwidth"
    low, high = 0, batch
    while low < high:
        middle = (low + high + 1) // 2
        if _tpot_ms(work, gpu, tp, middle) <= work.tpot_ms_max:
            low = middle
        else:
            high = middle - 1
    return low, "latency target"


def _tpot_ms(work: Workload, gpu: GpuSpec, tp: int, batch: int) -> float:
    return _step(work, gpu, tp, batch) * 1000


def _finish_serving(
    result: Estimate, work: Workload, gpu: GpuSpec, tp: int, batch: int, binding: str
) -> None:
    """TTFT of one request on an idle replica; TPOT of a pure decode step at the batch (no
    prefill in it, so TTFT + n·TPOT is one request's latency); throughput over all replicas
    with every request's prefill paid (continuous batching interleaves it)."""
    result.ttft_ms = ttft_seconds(work, gpu, tp) * 1000
    if not meets_latency(work, gpu, tp, batch):
        result.fits, result.binding = False, "latency target"
        return
    result.batch, result.binding = batch, binding
    result.tpot_ms = _tpot_ms(work, gpu, tp, batch)
    result.tokens_per_s = serving_tokens_per_s(work, gpu, tp, batch, result.replicas)


def meets_latency(work: Workload, gpu: GpuSpec, tp: int, batch: int) -> bool:
    """Whether a replica running `batch` meets the TPOT target (a batch of at least one) and
    the TTFT target."""
    if batch < 1:
        return False
    return work.ttft_ms_max is None or not ttft_seconds(work, gpu, tp) * 1000 > work.ttft_ms_max


def serving_tokens_per_s(work: Workload, gpu: GpuSpec, tp: int, batch: int, replicas: int) -> float:
    """Output tokens/s of `replicas` saturated replicas running `batch` each."""
    return replicas * batch / saturated_step_seconds(work, gpu, tp, batch)


@per_pass(objects=2)
def saturated_step_seconds(work: Workload, gpu: GpuSpec, tp: int, batch: int, /) -> float:
    """Time per decode step of a saturated replica with every request's prefill spread over
    its output tokens. Memory and compute terms add up (their sum fits the measurements better
    than a roofline maximum). Under pipeline parallelism the prefill chunks travel through the
    stages with the decode micro-batches, so their compute and all-reduces spread over all
    TP x PP GPUs (each stage runs L/PP layers of every prompt token) and each stage sends the
    prompt tokens' activations on."""
    arch, pp = work.arch, work.pipeline_parallel
    prompt_tokens = batch * work.input_tokens + wave_recompute_tokens(work, gpu, tp, batch)
    prefill_flops = 2 * arch.active_params * prompt_tokens / max(1, work.output_tokens)
    rates = decode_rates(work, gpu)
    prefill = prefill_flops / (tp * pp * rates.peak_flops * rates.mfu)
    prefill_tokens = int(prompt_tokens) // max(1, work.output_tokens)
    # The prompts are all-reduced chunk by chunk as they are prefilled, not spread per step.
    chunk = min(PREFILL_CHUNK_TOKENS, max(1, int(prompt_tokens)))
    communication = tp_allreduce_seconds(work, gpu, tp, prefill_tokens, chunk) / pp
    communication += pipeline_send_seconds(work, gpu, tp, prefill_tokens)
    return _step(work, gpu, tp, batch) + prefill + communication


# Engines that free a preempted request's KV blocks and later recompute them: vLLM ("Preempted
# requests are recomputed when sufficient KV cache space becomes available again ...
# PreemptionMode.RECOMPUTE", vLLM 0.9.1 docs, "Optimization and Tuning" > "Preemption"; Kwon et
# al. 2023, §4.5, recomputation). V1's scheduler (vllm/v1/core/sched/scheduler.py) pops the
# most recently admitted running request, frees its blocks, sets its computed tokens to 0 and
# puts it at the head of the waiting queue: readmitted, it re-prefills its prompt and the
# tokens it had generated (its freed blocks, though still hashed for prefix caching, are the
# next ones the growing survivors take from a full pool). TensorRT-LLM's default
# scheduler reserves every request's full length up front and never preempts
# (FULL_RESERVATION_ENGINES); other engines are not described here and pay nothing.
RECOMPUTE_PREEMPTION_ENGINES = ("vllm", "vllm-v0")


def wave_recompute_tokens(work: Workload, gpu: GpuSpec, tp: int, batch: int) -> float:
    """Tokens a lockstep wave (`Workload.one_wave`) re-prefills after preemption. Admitted
    against current use, `batch` requests that start together all grow by one token a step;
    once their length L1 = C/batch fills the KV pool of C tokens the engine preempts requests
    so that the C/L still running keep growing, until the survivors finish at the full length
    L2 = input + output. C/L² dL of them are preempted at length L and each re-prefills those
    L tokens when readmitted: C·ln(L2/L1) tokens in all. The preempted come back after the
    survivors finish; if even they overflow the pool (batch·L2 > 2C) they are preempted again,
    which this does not count (a lower bound). No preemption when the wave fits at full length."""
    if not work.one_wave or work.engine not in RECOMPUTE_PREEMPTION_ENGINES:
        return 0.0
    capacity = kv_tokens(work, gpu, tp)
    full = work.input_tokens + work.output_tokens
    if capacity <= 0 or batch * full <= capacity:
        return 0.0
    filled = max(capacity / batch, float(work.input_tokens))
    return capacity * math.log(full / filled)


def replicas_for(work: Workload, tokens_per_s: float) -> int:
    """Always-on replicas needed for the monthly output volume (at least one)."""
    if not work.monthly_output_tokens or tokens_per_s <= 0:
        return 1
    per_replica = tokens_per_s * 3600 * HOURS_PER_MONTH
    return max(1, math.ceil(work.monthly_output_tokens / per_replica))
