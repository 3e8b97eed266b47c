"""The workload, declared once: what a `[[workloads]]` entry of the config and the options of
`priceadvisor estimate` describe, with every check that needs no GPU.

`WorkloadSpec` is the model and its sizing inputs; the config's `WorkloadProfile` adds a name
and the offers it may run on, the CLI builds a dict from its options and validates it here, and
`priceadvisor.sizing.workloads.to_workload` turns either into what the sizing core sizes. A new
knob is one field here (with its CLI option, which tests/sizing/test_workload_schema.py demands)
and one in `sizing.estimate.Workload`.

Errors that concern one field raise `WorkloadError` naming it, so the config reports
`workloads.0.micro_batches: …` and the CLI `--micro-batches: …` with the same message
(`describe`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    model_validator,
)
from pydantic.fields import FieldInfo

from priceadvisor import llm
from priceadvisor.records import TRAINING_TASKS, Precision, Task

# The software that runs the work carries its own efficiency (sizing fits one factor per known
# engine/stack, docs/accuracy.md); "unknown" sizes with the pooled factors and the wider range.
# "vllm" is vLLM's V1 engine (the default from 0.8, 2025), "vllm-v0" its V0 engine; their
# kernel paths differ. "megatron-2021" is also a layout: A100 TP+PP with full recomputation.
UNKNOWN = "unknown"
Engine = Literal["unknown", "trt-llm", "vllm", "vllm-v0", "sglang", "lmdeploy", "fastertransformer"]
Stack = Literal[
    "unknown",
    "megatron-core",
    "nemo-automodel",
    "torchtitan",
    "torchtune",
    "llm-foundry",
    "megatron-2021",
    "hf-trainer",
]
# Activation recomputation of training, and how MoE training hides its expert all-to-all
# (sizing.estimate explains what each costs).
Recompute = Literal["none", "selective", "full"]
MoeOverlap = Literal["none", "partial", "full"]
TASKS: tuple[str, ...] = get_args(Task)
PRECISIONS: tuple[str, ...] = get_args(Precision)
ENGINES: tuple[str, ...] = get_args(Engine)
STACKS: tuple[str, ...] = get_args(Stack)
RECOMPUTE: tuple[str, ...] = get_args(Recompute)
MOE_OVERLAP: tuple[str, ...] = get_args(MoeOverlap)
# Stacks that run the model's PyTorch code eagerly, each elementwise op its own kernel
# (sizing.estimate.eager_elementwise_seconds): "hf-trainer" is the Hugging Face Trainer (PEFT
# for LoRA) on the model's modeling code, without torch.compile or fused-kernel patches.
EAGER_STACKS: tuple[str, ...] = ("hf-trainer",)
# Earlier name of the unknown training stack, still accepted.
STACK_ALIASES = {"modern": UNKNOWN}
# Largest tensor-parallel group engines run in practice: one NVL72 rack.
MAX_TENSOR_PARALLEL = 72
# Requests in flight per replica when none is given: 16 serving; a batch job left unset runs
# what the engine would (sizing: as many sequences as the KV cache admits, up to the engine's
# cap), so it has no default here.
DEFAULT_CONCURRENCY = {"serve": 16}
# Tokens per optimizer step of training when none is given: Llama 3 405B's 16M (Llama 3
# paper, Dubey et al. 2024, Table 4: 16M tokens per batch on 8,192 and 16,384 H100s; shown
# again in P. Balaji, "Herding Llamas", SC'24). The step decides how much compute each GPU has
# to hide the data-parallel weight traffic behind (sizing.estimate.data_parallel_seconds).
DEFAULT_GLOBAL_BATCH_TOKENS = 16 * 2**20
TRAINING_ONLY = (
    "recompute",
    "moe_overlap",
    "expert_parallel",
    "goodput",
    "packed_document_tokens",
)
SERVING_ONLY: tuple[str, ...] = ()


class WorkloadError(ValueError):
    """A workload that cannot be what it says, one line; `key` names the field at fault
    ("" when no one field is)."""

    def __init__(self, message: str, key: str = "") -> None:
        super().__init__(message)
        self.key = key


def _choice(name: str, choices: tuple[str, ...], aliases: Mapping[str, str] | None = None) -> Any:
    """A validator naming the field and its choices when a value is not one of them."""

    def check(value: Any) -> Any:
        value = (aliases or {}).get(value, value) if isinstance(value, str) else value
        if value is not None and value not in choices:
            raise WorkloadError(f"unknown {name} {value!r} (use {', '.join(choices)})", name)
        return value

    return BeforeValidator(check)


PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class ArchitectureNumbers(BaseModel):
    """Explicit model numbers, for a model the bundled catalog does not have."""

    model_config = ConfigDict(extra="forbid")

    params_b: PositiveFloat | None = Field(None, description="total parameters, billions")
    active_params_b: PositiveFloat | None = Field(
        None, description="MoE: parameters active per token, billions"
    )
    layers: int | None = Field(None, gt=0, description="transformer layers")
    hidden: int | None = Field(None, gt=0, description="hidden size d_model")
    heads: int | None = Field(None, gt=0, description="attention (query) heads")
    kv_heads: int | None = Field(None, gt=0, description="key/value heads (GQA); default heads")
    head_dim: int | None = Field(None, gt=0, description="head dimension; default hidden/heads")
    ffn: int | None = Field(None, gt=0, description="MLP intermediate size (per expert if MoE)")
    vocab: int | None = Field(None, gt=0, description="vocabulary size")
    tied: bool | None = Field(
        None, description="input and output embeddings shared (default: not shared)"
    )
    gated: bool | None = Field(
        None, description="gated MLP (SwiGLU, 3 matrices; the default) or not (GELU, 2)"
    )
    experts: int | None = Field(None, ge=0, description="MoE: experts per layer")
    experts_per_token: int | None = Field(None, ge=0, description="MoE: experts routed per token")
    dense_layers: int | None = Field(
        None,
        ge=0,
        description="MoE: leading layers whose MLP is dense (no experts, no all-to-all; "
        "DeepSeek-V3: 3)",
    )


class WorkloadSpec(BaseModel):
    """A workload's model and sizing inputs (docs/configuration.md describes every field)."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    task: Annotated[Task, _choice("task", TASKS)] = Field(
        description="what runs: training (pretrain, finetune, lora, qlora) or serving"
    )
    model: str | None = Field(None, description="bundled model id or alias, e.g. llama-3.1-70b")
    model_config_json: Path | None = Field(None, description="a local Hugging Face config.json")
    architecture: ArchitectureNumbers | None = Field(None, description="explicit model numbers")
    precision: Annotated[Precision, _choice("precision", PRECISIONS)] = Field(
        "bf16",
        description="number format: fp8/fp4 store and compute at that format (fp4 = NVFP4/MXFP4 "
        "on B200/B300/GB200/GB300/MI355X); int8/int4 are weight-only (AWQ/GPTQ: compute and KV "
        "stay 16-bit)",
    )
    kv_precision: Annotated[Precision | None, _choice("kv_precision", PRECISIONS)] = Field(
        None, description="KV-cache format (default fp8 with fp8/fp4, else 16-bit)"
    )
    input_tokens: int = Field(1000, gt=0, description="prompt tokens per request")
    output_tokens: int = Field(250, gt=0, description="output tokens per request")
    concurrency: int | None = Field(
        None,
        gt=0,
        description="requests in flight per replica (serve, default 16) or the batch of a "
        "batch job (default: what the engine runs — as many sequences as the KV cache admits, "
        "up to the engine's cap, e.g. vLLM's max_num_seqs; the estimate states it); a given "
        "value is never capped silently",
    )
    ttft_ms_max: PositiveFloat | None = Field(None, description="serving: TTFT target, ms")
    tpot_ms_max: PositiveFloat | None = Field(None, description="serving: TPOT target, ms")
    train_tokens: PositiveFloat | None = Field(None, description="training: tokens to train on")
    seq_len: int = Field(4096, gt=0, description="training sequence length")
    stack: Annotated[Stack, _choice("stack", STACKS, STACK_ALIASES)] = Field(
        "unknown",
        description="training software (megatron-core covers NeMo/Megatron-Bridge; "
        "megatron-2021 is also the A100 TP+PP layout with full recomputation; hf-trainer: the "
        "Hugging Face Trainer/PEFT on eager PyTorch, which also pays its unfused elementwise "
        "ops at memory bandwidth); unknown: pooled "
        "efficiency, wider range. A stack gets its own fitted factor only where two or more "
        "publications measure it",
    )
    engine: Annotated[Engine, _choice("engine", ENGINES)] = Field(
        "unknown",
        description="serving engine (vllm: its V1 engine, 0.8 and later; vllm-v0: its V0 "
        "engine); unknown: pooled efficiency, wider range. An engine gets its own fitted factor "
        "only where two or more publications measure it (docs/accuracy.md); kernel paths follow "
        "the engine: vllm/sglang quantise FP8/INT8/FP4 activations in a kernel of their own, "
        "vllm-v0 reads an 8-bit KV cache once per query head on NVIDIA parts",
    )
    expert_parallel: int | None = Field(
        None, gt=0, description="MoE training: expert-parallel degree"
    )
    recompute: Annotated[Recompute | None, _choice("recompute", RECOMPUTE)] = Field(
        None,
        description="training: activation recomputation — none keeps 34·s·h bytes of "
        "activations per layer (FlashAttention), selective the same, full 2·s·h at one more "
        "forward pass of the transformer layers (6 → 8 FLOPs per block parameter; the LM head "
        "runs once); default full for megatron-2021, else the least that fits "
        "(none, selective, full), stated in the estimate",
    )
    moe_overlap: Annotated[MoeOverlap | None, _choice("moe_overlap", MOE_OVERLAP)] = Field(
        None,
        description="MoE training: how the schedule hides the expert all-to-all — none (on the "
        "critical path), partial (35 % exposed; default), full (DualPipe-style)",
    )
    tensor_parallel: int | None = Field(
        None,
        gt=0,
        description="GPUs one layer is split over. Serving: GPUs per pipeline stage of a replica "
        "(default: with the pipeline stages, the valid layout predicted fastest among those "
        "that fit, stated in the estimate). Training: the tensor-parallel degree the run uses "
        "(TP x PP must divide the GPUs; data parallelism takes the rest): its all-reduces of "
        "activations cross NVLink inside a node, the network beyond; default 1 (8 for "
        "megatron-2021)",
    )
    pipeline_parallel: int = Field(
        1,
        ge=1,
        description="pipeline stages. Training: must divide the GPUs, needs micro_batches; the "
        "step pays the pipeline bubble, (PP-1)/(VP·micro-batches) of its work. Serving: replicas "
        "of TP x PP GPUs (must divide the GPUs), the batch in PP micro-batches in flight; no "
        "TTFT speed-up",
    )
    virtual_stages: int = Field(
        1, ge=1, description="training: model chunks per GPU (interleaved 1F1B)"
    )
    micro_batches: int | None = Field(
        None,
        ge=1,
        description="training with a pipeline: micro-batches per pipeline per optimizer step "
        "(global batch ÷ data-parallel degree ÷ micro-batch size)",
    )

    global_batch_tokens: PositiveFloat = Field(
        DEFAULT_GLOBAL_BATCH_TOKENS,
        description="training: tokens per optimizer step over all GPUs (default 16M, Llama 3 "
        "405B's batch: Llama 3 paper, Dubey et al. 2024, Table 4); each GPU hides the sharded "
        "data-parallel weight traffic behind its share of it, so a small batch on many GPUs is "
        "slower",
    )
    goodput: float | None = Field(
        None,
        gt=0,
        le=1,
        description="training: share of a whole run's wall time spent training (restarts, "
        "failures, evaluation, checkpointing, data stalls excluded); default: interruptions "
        "as Llama 3 reports them (466 in 54 days on 16,384 GPUs, ~0.3 h lost each: 0.90 at 16k "
        "GPUs, 0.99 at 2k) x the calibrated whole-run factor",
    )

    packed_document_tokens: int | None = Field(
        None,
        gt=0,
        description="training on packed samples: their mean length in tokens. Packing "
        "concatenates short fine-tuning samples into one seq_len sequence, but each sample "
        "attends only to itself (NeMo's sequence packing), so the attention FLOPs follow the "
        "samples, not the pack; default: one sample per sequence",
    )

    one_wave: bool = Field(
        False,
        description="batch: every request starts at once with the same input and output "
        "length (a synthetic throughput benchmark, all prompts within the engine's cap), so "
        "they grow in lockstep; past the KV cache vLLM preempts and recomputes, which the "
        "throughput pays",
    )

    _arch: llm.Architecture | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _consistent(self) -> WorkloadSpec:
        arch = self.arch()  # an unknown model or a bad config.json: an error now
        self._check_task_options()
        check_tensor_parallel_limit(self.tensor_parallel, arch.heads)
        check_pipeline_layout(
            self.task, self.pipeline_parallel, self.virtual_stages, self.micro_batches, arch.layers
        )
        return self

    def _check_task_options(self) -> None:
        training = self.task in TRAINING_TASKS
        for key in TRAINING_ONLY if not training else SERVING_ONLY:
            if getattr(self, key) is not None:
                kind = "training" if not training else "serve and batch"
                raise WorkloadError(f"{key} applies to {kind} tasks, not {self.task!r}", key)
        if self.one_wave and self.task != "batch":
            raise WorkloadError(f"one_wave applies to batch tasks, not {self.task!r}", "one_wave")

    def arch(self) -> llm.Architecture:
        """The model's architecture, from exactly one of its three sources."""
        if self._arch is None:
            self._arch = self._resolve_arch()
        return self._arch

    def _resolve_arch(self) -> llm.Architecture:
        given = [k for k in ("model", "model_config_json", "architecture") if getattr(self, k)]
        if len(given) != 1:
            raise WorkloadError(
                "give exactly one of model, model_config_json or architecture numbers "
                "(params_b, or layers, hidden, heads, ffn and vocab)"
            )
        try:
            return self._read_arch()
        except llm.ModelError as exc:
            raise WorkloadError(str(exc), given[0]) from None

    def _read_arch(self) -> llm.Architecture:
        if self.model:
            return llm.lookup(self.model)
        if self.model_config_json:
            return llm.from_hf_config(self.model_config_json)
        assert self.architecture is not None
        return llm.from_numbers(self.label(), **self.architecture.model_dump(exclude_none=True))

    def label(self) -> str:
        """The name explicit architecture numbers go by."""
        return "custom"

    def resolved_concurrency(self) -> int | None:
        """The concurrency sized: as given, else the task's default; None for a batch job
        left unset (the engine decides)."""
        if self.concurrency or self.task == "batch":
            return self.concurrency
        return DEFAULT_CONCURRENCY["serve"]


# Run-cost inputs of advice's effective cost (docs/configuration.md, "Effective cost"): the
# checkpoint and restart times default to what a data-parallel job saving a sharded checkpoint
# to local NVMe and re-loading it typically takes; state your own where you know them.
DEFAULT_CHECKPOINT_MINUTES = 5.0
DEFAULT_RESTART_MINUTES = 10.0
SlaException = Literal["spot", "marketplace"]


class RunCosts(BaseModel):
    """What a run costs beyond its GPU hours, and where it may run (config only: sizing never
    reads these, so they are not `estimate` options)."""

    model_config = ConfigDict(extra="forbid")

    storage_gb: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="disk the run keeps, GB (priced per GB-month)"
    )
    egress_gb_per_month: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="internet egress, GB per month"
    )
    checkpoint_minutes: float = Field(
        DEFAULT_CHECKPOINT_MINUTES,
        gt=0,
        allow_inf_nan=False,
        description="training on spot: minutes one checkpoint takes to write (Young/Daly's δ)",
    )
    restart_minutes: float = Field(
        DEFAULT_RESTART_MINUTES,
        ge=0,
        allow_inf_nan=False,
        description="training on spot: minutes from an interruption to training again",
    )
    sla: bool = Field(
        False, description="keep spot and marketplace/community hosts (no SLA) out of advice"
    )
    sla_allow: list[SlaException] = Field(
        default_factory=list, description="with sla: kinds of offer let back in"
    )


def check_tensor_parallel_limit(tp: int | None, heads: int) -> None:
    """Tensor parallelism splits attention heads: at most one head per GPU, within one NVL72
    rack (the largest group engines run)."""
    if tp is None or tp < 1:
        return
    if heads > 1 and tp > heads:
        raise WorkloadError(
            f"tensor parallel {tp} exceeds the model's {heads} attention heads: "
            "use more replicas instead",
            "tensor_parallel",
        )
    if tp > MAX_TENSOR_PARALLEL:
        raise WorkloadError(
            f"tensor parallel {tp} exceeds {MAX_TENSOR_PARALLEL} (one NVL72 rack): "
            "use more replicas instead",
            "tensor_parallel",
        )


def check_pipeline_layout(
    task: str, stages: int, virtual_stages: int, micro_batches: int | None, layers: int
) -> None:
    """The pipeline checks that need no GPU: at least one layer per (virtual) stage; training
    needs its micro-batches (the bubble depends on them) and takes virtual stages and
    micro-batches only with a pipeline; serving takes neither (it splits the batch itself)."""
    training = task in TRAINING_TASKS
    extra = "virtual_stages" if virtual_stages != 1 else "micro_batches"
    if not training and (virtual_stages != 1 or micro_batches is not None):
        raise WorkloadError(
            "virtual stages and micro-batches apply to training tasks, not serving "
            "(its layouts are GPUs, tensor parallel and pipeline stages)",
            extra,
        )
    if stages < 1 or virtual_stages < 1 or (micro_batches is not None and micro_batches < 1):
        raise WorkloadError("pipeline stages, virtual stages and micro-batches must be ≥ 1")
    if layers and stages * virtual_stages > layers:
        raise WorkloadError(
            f"{stages}×{virtual_stages} pipeline stages exceed the model's {layers} layers",
            "pipeline_parallel",
        )
    if training and stages == 1 and (virtual_stages > 1 or micro_batches is not None):
        raise WorkloadError(
            "virtual stages and micro-batches describe a pipeline: give more than one "
            "pipeline stage",
            extra,
        )
    if training and stages > 1 and micro_batches is None:
        raise WorkloadError(
            f"{stages} pipeline stages need the micro-batches per step: "
            "the bubble is (PP-1)/(VP·micro-batches) of the step",
            "micro_batches",
        )


def describe(exc: ValidationError) -> tuple[tuple[str | int, ...], str]:
    """The first error of a validation as (where, one-line message): where is the field's
    location, with the field a `WorkloadError` names; the message without pydantic's prefix."""
    first = exc.errors()[0]
    where = tuple(first["loc"])
    error = (first.get("ctx") or {}).get("error")
    if isinstance(error, WorkloadError):
        if error.key and (not where or where[-1] != error.key):
            where = (*where, error.key)
        return where, str(error)
    if first["type"] == "extra_forbidden":
        return where, "unknown key"
    return where, str(first["msg"])


def field_choices(field: FieldInfo) -> tuple[str, ...]:
    """The values a choice field takes (its Literal's), empty for any other field."""
    kinds = [field.annotation]
    while kinds:
        kind = kinds.pop()
        if get_origin(kind) is Literal:
            return tuple(str(value) for value in get_args(kind))
        kinds += [k for k in get_args(kind) if k is not type(None)]
    return ()
