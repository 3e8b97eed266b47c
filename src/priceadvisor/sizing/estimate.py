"""Sizing core: memory, fit, throughput, time and the binding constraint of a
workload on N GPUs of one model. Pure functions over an Architecture and a GPU's specs.

Formulas and priors: docs/accuracy.md; efficiency priors are scaled by factors fitted
on the published measurements in providers/calibration.toml (priceadvisor.sizing.calibration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from priceadvisor.catalog import GpuSpec, gpu_catalog
from priceadvisor.llm import GIB, Architecture
from priceadvisor.models import TRAINING_TASKS, Precision, Task

WEIGHT_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.56}
# Vendor "GB" of HBM/GDDR is about GiB less a driver reserve (A100 40GB shows 39.5 GiB).
USABLE_OF_NOMINAL = 0.9875
SERVING_MEMORY_UTILISATION = 0.90  # vLLM's default gpu_memory_utilization
TRAINING_MEMORY_UTILISATION = 0.95
RUNTIME_OVERHEAD_GIB = 0.5
PREFILL_CHUNK_TOKENS = 8192
ENGINE_MAX_BATCH = 256
END_TO_END = 0.75  # restarts, evals, checkpoints: a typical run's productive share
HOURS_PER_MONTH = 730


@dataclass(frozen=True, slots=True)
class Scales:
    """Factors on the efficiency priors, fitted by `priceadvisor.sizing.calibration` and handed
    in as data; 1.0 everywhere means the published priors unchanged."""

    train: float = 1.0
    throughput: float = 1.0
    tpot: float = 1.0


PRIORS = Scales()


@dataclass(frozen=True, slots=True)
class Workload:
    """What sizing needs of a workload (the config's validated profile maps onto this)."""

    task: Task
    arch: Architecture
    precision: Precision = "bf16"
    input_tokens: int = 1000
    output_tokens: int = 250
    concurrency: int = 16
    ttft_ms_max: float | None = None
    tpot_ms_max: float | None = None
    monthly_output_tokens: float | None = None
    train_tokens: float | None = None
    seq_len: int = 4096
    kv_precision: Precision | None = None
    scales: Scales = field(default_factory=lambda: PRIORS)


@dataclass(slots=True)
class Estimate:
    gpu_model: str
    gpu_count: int
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
            "uncertainty": self.uncertainty,
            "notes": self.notes,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


# --- hardware -------------------------------------------------------------------------------


def peak_flops(gpu: GpuSpec, precision: str) -> float:
    """Dense tensor FLOP/s for the precision; parts without FP8/INT8 units compute at 16 bit
    (the weights are still stored at the low precision)."""
    specs = gpu.specs
    sixteen = (
        specs.get("bf16_dense_tflops")
        or specs.get("fp16_dense_tflops")
        or specs.get("fp32_tflops")
        or 0.0
    )
    if precision == "fp16":
        sixteen = specs.get("fp16_dense_tflops") or sixteen
    low = {"fp8": specs.get("fp8_dense_tflops"), "int8": specs.get("int8_dense_tops")}
    return float(low.get(precision) or sixteen) * 1e12


def bandwidth(gpu: GpuSpec) -> float:
    return float(gpu.specs.get("memory_bandwidth_gbs") or 0.0) * 1e9


def usable_gib(gpu: GpuSpec, utilisation: float) -> float:
    return gpu.memory_gb * USABLE_OF_NOMINAL * utilisation


def has_fast_interconnect(gpu: GpuSpec) -> bool:
    text = str(gpu.specs.get("interconnect") or "")
    return (
        ("NVLink" in text and "no NVLink" not in text)
        or "Infinity Fabric" in text
        or ("RoCE" in text)
    )


def _vendor_class(gpu: GpuSpec) -> str:
    if gpu.vendor == "AMD":
        return "amd"
    if gpu.vendor != "NVIDIA":
        return "other"
    if gpu.family.startswith("RTX") and gpu.family[3:4].isdigit():
        return "consumer"
    return str(gpu.specs.get("architecture") or "").split(" ")[0].lower()  # hopper, ampere…


# --- efficiency priors (docs/accuracy.md), scaled by calibration ---------------------------


def training_mfu(gpu: GpuSpec, arch: Architecture, precision: str) -> float:
    kind = _vendor_class(gpu)
    if arch.is_moe:
        prior = 0.20
    elif kind == "amd":
        prior = 0.30
    elif precision == "fp8" and gpu.specs.get("fp8_dense_tflops"):
        prior = 0.35
    elif kind == "ampere":
        prior = 0.50
    elif kind in ("hopper", "blackwell"):
        prior = 0.42
    else:
        prior = 0.35
    return prior


def decode_mbu(tensor_parallel: int) -> float:
    return 0.70 if tensor_parallel == 1 else 0.55


def serving_mfu(gpu: GpuSpec) -> float:
    return 0.45 * (0.65 if _vendor_class(gpu) == "amd" else 1.0)


PREFILL_MFU = 0.50


def uncertainty(gpu: GpuSpec, arch: Architecture, task: str) -> float:
    """Uncertainty bands: tuned NVIDIA training ±20 %, serving ±30 %; MoE, AMD/Intel, consumer
    cards and parts with no published measurements ±45 %."""
    kind = _vendor_class(gpu)
    if arch.is_moe or kind in ("amd", "other", "consumer") or gpu.family in ("L4", "T4", "V100"):
        return 0.45
    return 0.20 if task in TRAINING_TASKS else 0.30


# --- estimates ------------------------------------------------------------------------------


def estimate(work: Workload, gpu_model: str, gpu_count: int) -> Estimate:
    gpu = gpu_catalog().gpus[gpu_model]
    if work.task in TRAINING_TASKS:
        return _train(work, gpu, gpu_count)
    return _serve(work, gpu, gpu_count)


def training_memory(work: Workload, gpus: int) -> dict[str, float]:
    """Per GPU, GiB. Full/pre-training: mixed-precision AdamW at 16 B/param sharded ZeRO-3 over
    the GPUs; LoRA: frozen 16-bit weights (QLoRA: NF4 ≈ 0.56 B) + adapters; activations with
    full recomputation (2·s·h bytes per layer) and the logits buffer, split by model
    parallelism over up to the 8 GPUs of a node."""
    arch, n = work.arch, work.arch.total_params
    if work.task in ("pretrain", "finetune"):
        state = {"model_state": 16 * n / gpus}
    else:
        frozen = 0.56 if work.task == "qlora" else WEIGHT_BYTES.get(work.precision, 2.0)
        adapters = 0.005 * n * 16  # rank-16 adapters on attention+MLP ≈ 0.5 % of N at 16 B
        state = {"weights": frozen * n / gpus, "adapters_and_optimizer": adapters}
    # Model parallelism (tensor/pipeline) inside a node splits activations across its GPUs.
    model_parallel = min(gpus, 8)
    activations = 2 * work.seq_len * arch.hidden * arch.layers * 2 / model_parallel
    logits = work.seq_len * arch.vocab * 4 / model_parallel
    parts = state | {"activations": float(activations), "logits": float(logits)}
    return {k: v / GIB for k, v in parts.items()}


def _train(work: Workload, gpu: GpuSpec, gpus: int) -> Estimate:
    memory = training_memory(work, gpus)
    available = usable_gib(gpu, TRAINING_MEMORY_UTILISATION)
    result = Estimate(
        gpu.id,
        gpus,
        sum(memory.values()) <= available,
        "compute",
        memory,
        available,
        uncertainty=uncertainty(gpu, work.arch, work.task),
    )
    k = 6 if work.task in ("pretrain", "finetune") else 4  # LoRA: no weight gradients (~4ND)
    efficiency = training_mfu(gpu, work.arch, work.precision) * work.scales.train
    if gpus > 1 and not has_fast_interconnect(gpu):
        efficiency *= 0.8
        result.notes.append("multi-GPU training on a PCIe-only part: scales poorly")
    flops_per_token = k * work.arch.active_params
    result.tokens_per_s = gpus * peak_flops(gpu, work.precision) * efficiency / flops_per_token
    if not result.fits:
        result.binding = "memory"
    if work.train_tokens and result.tokens_per_s > 0:
        result.hours = work.train_tokens / (result.tokens_per_s * END_TO_END) / 3600
    return result


def serving_memory(work: Workload, gpu: GpuSpec, tp: int) -> tuple[dict[str, float], float]:
    """Per GPU, GiB: weights, prefill activation peak, runtime overhead; and what is left for KV."""
    arch = work.arch
    weights = arch.total_params * WEIGHT_BYTES[work.precision] / tp / GIB
    mlp_width = arch.expert_ffn * arch.experts_per_token if arch.is_moe else arch.ffn
    per_token = arch.vocab * 8 + mlp_width * 8 + arch.hidden * 16
    activation = PREFILL_CHUNK_TOKENS * per_token / tp / GIB
    parts = {"weights": weights, "activation_peak": activation, "runtime": RUNTIME_OVERHEAD_GIB}
    free = usable_gib(gpu, SERVING_MEMORY_UTILISATION) - sum(parts.values())
    return parts, free


def kv_bytes(work: Workload) -> float:
    return WEIGHT_BYTES[
        work.kv_precision or ("fp16" if work.precision == "int4" else _kv_default(work.precision))
    ]


def _kv_default(precision: str) -> str:
    return "fp8" if precision == "fp8" else "bf16"


def kv_tokens(work: Workload, gpu: GpuSpec, tp: int) -> int:
    _, free = serving_memory(work, gpu, tp)
    per_token = work.arch.kv_bytes_per_token_per_gpu(kv_bytes(work), tp)
    return max(0, int(free * GIB / per_token)) if per_token else 0


def tpot_seconds(work: Workload, gpu: GpuSpec, tp: int, batch: int) -> tuple[float, float]:
    """(memory term, compute term) of one decode step for `batch` concurrent requests. Memory:
    weights read (MoE: active experts at batch 1, nearly all by batch 16) + KV read; compute:
    2·N_active per token, prefill included (2·N·(in+out)/out per output token)."""
    arch = work.arch
    byte = WEIGHT_BYTES[work.precision]
    extra_experts = (arch.total_params - arch.active_params) * min(1.0, batch / 16)
    weights = (arch.active_params + extra_experts) * byte / tp
    context = work.input_tokens + work.output_tokens / 2
    kv = batch * context * arch.kv_bytes_per_token_per_gpu(kv_bytes(work), tp)
    memory = (weights + kv) / (bandwidth(gpu) * decode_mbu(tp) * work.scales.tpot)
    per_token = (
        2
        * arch.active_params
        * (work.input_tokens + work.output_tokens)
        / max(1, work.output_tokens)
    )
    compute = (
        per_token
        * batch
        / (tp * peak_flops(gpu, work.precision) * serving_mfu(gpu) * work.scales.throughput)
    )
    return memory, compute


def ttft_seconds(work: Workload, gpu: GpuSpec, tp: int) -> float:
    arch, s = work.arch, work.input_tokens
    flops = 2 * arch.active_params * s + 2 * arch.layers * s * s * arch.hidden
    return flops / (tp * peak_flops(gpu, work.precision) * PREFILL_MFU)


def _serve(work: Workload, gpu: GpuSpec, tp: int) -> Estimate:
    memory, free = serving_memory(work, gpu, tp)
    available = usable_gib(gpu, SERVING_MEMORY_UTILISATION)
    capacity = kv_tokens(work, gpu, tp)
    request_tokens = work.input_tokens + work.output_tokens
    max_concurrency = min(ENGINE_MAX_BATCH, capacity // max(1, request_tokens))
    result = Estimate(
        gpu.id,
        tp,
        free > 0 and max_concurrency >= 1,
        "bandwidth",
        memory | {"kv_cache": max(free, 0.0)},
        available,
        max_concurrency=max_concurrency,
        uncertainty=uncertainty(gpu, work.arch, work.task),
    )
    if tp > 1 and not has_fast_interconnect(gpu):
        result.notes.append("tensor parallel over PCIe: expect lower throughput")
    if not result.fits:
        result.binding = "memory"
        return result
    wanted = work.concurrency if work.task == "serve" else ENGINE_MAX_BATCH
    batch, binding = _choose_batch(work, gpu, tp, min(wanted, max_concurrency))
    limited = batch < min(wanted, max_concurrency) or max_concurrency < wanted
    if limited and binding != "latency target":
        binding = "kv capacity"
    _finish_serving(result, work, gpu, tp, batch, binding)
    return result


def _choose_batch(work: Workload, gpu: GpuSpec, tp: int, batch: int) -> tuple[int, str]:
    """Largest batch ≤ `batch` whose TPOT meets the target (binary search)."""
    if work.tpot_ms_max is None or _tpot_ms(work, gpu, tp, batch) <= work.tpot_ms_max:
        memory, compute = tpot_seconds(work, gpu, tp, max(batch, 1))
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
    return sum(tpot_seconds(work, gpu, tp, batch)) * 1000


def _finish_serving(
    result: Estimate, work: Workload, gpu: GpuSpec, tp: int, batch: int, binding: str
) -> None:
    result.ttft_ms = ttft_seconds(work, gpu, tp) * 1000
    if batch < 1 or (work.ttft_ms_max is not None and result.ttft_ms > work.ttft_ms_max):
        result.fits, result.binding = False, "latency target"
        return
    result.batch, result.binding = batch, binding
    result.tpot_ms = _tpot_ms(work, gpu, tp, batch)
    result.tokens_per_s = batch / (result.tpot_ms / 1000)


def replicas_for(work: Workload, tokens_per_s: float) -> int:
    """Always-on replicas needed for the monthly output volume (at least one)."""
    if not work.monthly_output_tokens or tokens_per_s <= 0:
        return 1
    per_replica = tokens_per_s * 3600 * HOURS_PER_MONTH
    return max(1, math.ceil(work.monthly_output_tokens / per_replica))
