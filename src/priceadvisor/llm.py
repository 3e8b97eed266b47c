"""Model architectures: the bundled catalog (sizing-data/models.toml), explicit numbers, or a
local Hugging Face config.json — and what follows from them (parameters, KV cache per token).

Formulas: N ≈ L·(attention + MLP) + V·d·(1 if tied else 2); KV per token 2·L·n_kv·d_h·bytes
(one latent per layer for MLA).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from priceadvisor.resources import sizing_data_dir

GIB = 1024**3


class ModelError(ValueError):
    """An unknown model name or an architecture that cannot be sized; one line."""


@dataclass(frozen=True, slots=True)
class Architecture:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    head_dim: int = 0  # 0: hidden / heads
    tied: bool = False
    gated: bool = True
    experts: int = 0
    experts_per_token: int = 0
    expert_ffn: int = 0
    params_b: float | None = None  # published totals override the dense formula (MoE)
    active_params_b: float | None = None
    mla_kv_dim: int = 0
    routed_groups: int = 0  # node-limited routing: a token reaches at most this many groups
    dense_layers: int = 0  # MoE: the first layers, whose MLP is dense (no experts, no routing)
    # Whether a published active count includes the input embedding table: gpt-oss's model
    # card counts the unembedding alone (see models.toml), every other published count both.
    active_counts_input_embedding: bool = True
    aliases: tuple[str, ...] = field(default=())
    # Derived once at construction: sizing reads the totals in every formula.
    _total_params: float = field(init=False, repr=False, compare=False)
    _active_params: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        total = self.params_b * 1e9 if self.params_b else self.dense_params()
        object.__setattr__(self, "_total_params", total)
        active = self.active_params_b * 1e9 if self.active_params_b else total
        object.__setattr__(self, "_active_params", active)

    @property
    def dim_head(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP routes tokens to experts: all but the leading dense ones."""
        return max(0, self.layers - self.dense_layers) if self.is_moe else 0

    def dense_params(self) -> float:
        """N ≈ L·(attention + MLP) + V·d·(1 if tied else 2); norms and biases are noise."""
        q_width = self.heads * self.dim_head
        attention = self.hidden * q_width * 2 + 2 * self.hidden * self.kv_heads * self.dim_head
        mlp = (3 if self.gated else 2) * self.hidden * self.ffn
        embeddings = self.vocab * self.hidden * (1 if self.tied else 2)
        return self.layers * (attention + mlp) + embeddings

    @property
    def total_params(self) -> float:
        return self._total_params

    @property
    def active_params(self) -> float:
        return self._active_params

    @property
    def lm_head_params(self) -> float:
        """The output (vocabulary) projection V·d: tied or not, one GEMM per token."""
        return float(self.vocab * self.hidden)

    @property
    def block_params(self) -> float:
        """Active parameters inside the transformer blocks: the active count less the input
        embedding and LM head it includes (one V·d matrix when tied). Norms and biases stay in:
        they are noise. Never below zero for explicit numbers that leave the embeddings out."""
        tables = 1 if self.tied or not self.active_counts_input_embedding else 2
        return max(0.0, self.active_params - tables * self.lm_head_params)

    def kv_bytes_per_token(self, bytes_per_value: float) -> float:
        """2·L·n_kv·d_h·bytes; MLA models cache one latent per layer instead."""
        if self.mla_kv_dim:
            return self.mla_kv_dim * self.layers * bytes_per_value
        return 2 * self.layers * self.kv_heads * self.dim_head * bytes_per_value

    def kv_bytes_per_token_per_gpu(self, bytes_per_value: float, tensor_parallel: int) -> float:
        """Tensor parallelism splits KV heads across GPUs, down to one head per GPU."""
        if self.mla_kv_dim:
            return self.kv_bytes_per_token(bytes_per_value)  # the latent is replicated
        return self.kv_bytes_per_token(bytes_per_value) / min(tensor_parallel, self.kv_heads)


_FIELDS = {name for name, f in Architecture.__dataclass_fields__.items() if f.init} - {"name"}


@cache
def catalog() -> dict[str, Architecture]:
    data = tomllib.loads((sizing_data_dir() / "models.toml").read_text(encoding="utf-8"))
    models = {}
    for model_id, entry in data["models"].items():
        fields = {k: v for k, v in entry.items() if k in _FIELDS}
        fields["aliases"] = tuple(entry.get("aliases", ()))
        models[model_id] = Architecture(name=entry.get("name", model_id), **fields)
    return models


SUFFIXES = ("-instruct", "-chat", "-hf", "-it", "-base")


def lookup(name: str) -> Architecture:
    """A bundled model by id or alias; a Hugging Face repo id (org/name) and the common
    -instruct/-chat/-hf/-it suffixes resolve to the same architecture."""
    models = catalog()
    for key in _candidates(name):
        if key in models:
            return models[key]
        for model in models.values():
            if key in model.aliases:
                return model
    known = ", ".join(sorted(models))
    raise ModelError(f"unknown model {name!r} (bundled: {known}; or give explicit params)")


def _candidates(name: str) -> list[str]:
    key = name.strip().lower()
    bare = key.rsplit("/", 1)[-1]
    stripped = bare
    for suffix in SUFFIXES:
        stripped = stripped.removesuffix(suffix)
    return list(dict.fromkeys((key, bare, stripped)))


def _check_dense_layers(arch: Architecture) -> None:
    """Leading dense layers: a MoE's, fewer than its layers, and with the published totals
    (the dense layers' MLP width is not among the explicit numbers, so the count cannot be
    derived)."""
    if not arch.dense_layers:
        return
    if not arch.is_moe or arch.dense_layers >= arch.layers:
        raise ModelError(f"{arch.name}: dense_layers applies to a MoE with more layers than that")
    if not (arch.params_b and arch.active_params_b):
        raise ModelError(f"{arch.name}: with dense_layers, give params_b and active_params_b")


def from_numbers(name: str, **numbers: Any) -> Architecture:
    """Explicit architecture: `params_b` alone (a Llama-like layout is assumed for the KV cache),
    or the layer numbers; a MoE adds experts and experts_per_token, with active_params_b when
    the totals are given."""
    defaults = {"layers": 0, "hidden": 0, "heads": 1, "kv_heads": 1, "ffn": 0, "vocab": 0}
    values = defaults | {k: v for k, v in numbers.items() if v is not None}
    unknown = set(values) - _FIELDS
    if unknown:
        raise ModelError(f"unknown architecture field {sorted(unknown)[0]!r}")
    arch = Architecture(name=name, **values)
    if not arch.params_b and not (arch.layers and arch.hidden and arch.ffn and arch.vocab):
        raise ModelError(f"{name}: give params_b or layers, hidden, heads, ffn and vocab")
    if arch.is_moe and not 0 < arch.experts_per_token <= arch.experts:
        raise ModelError(f"{name}: a MoE needs experts_per_token between 1 and experts")
    _check_dense_layers(arch)
    if arch.is_moe and not arch.params_b:
        return _moe_counts(arch, {})
    if arch.is_moe and not arch.active_params_b:
        raise ModelError(f"{name}: with params_b, a MoE needs active_params_b")
    return arch


# Hugging Face `model_type`s whose config.json keys are read, and whether their MLP is gated
# (SwiGLU/GeGLU: three matrices) or a plain GELU MLP (two).
GATED_TYPES = {
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "phi3",
    "deepseek_v2",
    "deepseek_v3",
    "gpt_oss",
}
GELU_TYPES = {"mpt", "bloom", "falcon", "gpt_neox", "phi"}
# Keys per meaning across those families (GPT-2-style n_*, MPT d_model, Falcon n_head_kv…).
KEYS = {
    "layers": ("num_hidden_layers", "n_layer", "n_layers", "num_layers"),
    "hidden": ("hidden_size", "d_model", "n_embd"),
    "heads": ("num_attention_heads", "n_head", "n_heads"),
    "kv_heads": ("num_key_value_heads", "num_kv_heads", "n_head_kv"),
    "ffn": ("intermediate_size", "ffn_hidden_size", "n_inner"),
    "experts": ("num_local_experts", "num_experts", "n_routed_experts"),
    "experts_per_token": ("num_experts_per_tok", "experts_per_token", "moe_top_k"),
}
TIED_BY_DEFAULT = {"mpt", "bloom", "falcon", "gemma", "gemma2", "gemma3", "gemma3_text"}


def from_hf_config(path: Path) -> Architecture:
    """A local Hugging Face config.json of a supported family (GATED_TYPES, GELU_TYPES):
    dense, MoE (shared experts, leading dense layers) and MLA (DeepSeek-V2/V3). Anything else
    is refused rather than guessed."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read {path}: {exc}") from None
    if not isinstance(config, dict):
        raise ModelError(f"{path}: not a config.json object")
    config = config.get("text_config") or config  # multimodal wrappers (Gemma 3)
    kind = str(config.get("model_type") or "")
    if kind not in GATED_TYPES | GELU_TYPES:
        supported = ", ".join(sorted(GATED_TYPES | GELU_TYPES))
        raise ModelError(
            f"{path}: model_type {kind or '(none)'!r} is not read (supported: {supported})"
        )
    try:
        arch = _hf_architecture(config, kind, str(config.get("_name_or_path") or path.parent.name))
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise ModelError(f"{path}: missing or bad field {exc}") from None
    if kind.startswith("deepseek"):
        return _deepseek_counts(arch, config)
    return _moe_counts(arch, config) if arch.is_moe else arch


def _first(config: dict[str, Any], meaning: str, default: Any = None) -> Any:
    for key in KEYS[meaning]:
        if config.get(key) is not None:
            return config[key]
    if default is None:
        raise KeyError(KEYS[meaning][0])
    return default


def _hf_architecture(config: dict[str, Any], kind: str, name: str) -> Architecture:
    hidden = int(_first(config, "hidden"))
    heads = int(_first(config, "heads"))
    return Architecture(
        name=name,
        layers=int(_first(config, "layers")),
        hidden=hidden,
        heads=heads,
        kv_heads=_kv_heads(config, kind, heads),
        ffn=_ffn(config, kind, hidden),
        vocab=int(config["vocab_size"]),
        head_dim=int(config.get("head_dim") or 0),
        tied=bool(config.get("tie_word_embeddings", kind in TIED_BY_DEFAULT)),
        gated=kind in GATED_TYPES,
        experts=int(_first(config, "experts", 0)),
        experts_per_token=int(_first(config, "experts_per_token", 0)),
        expert_ffn=int(config.get("moe_intermediate_size") or 0),
        routed_groups=int(config.get("topk_group") or 0),
        dense_layers=int(config.get("first_k_dense_replace") or 0),
        mla_kv_dim=int(config.get("kv_lora_rank") or 0) + int(config.get("qk_rope_head_dim") or 0)
        if config.get("kv_lora_rank")
        else 0,
    )


def _kv_heads(config: dict[str, Any], kind: str, heads: int) -> int:
    attn = config.get("attn_config") or {}
    if kind == "mpt" and attn.get("kv_n_heads"):
        return int(attn["kv_n_heads"])
    if kind == "falcon" and not config.get("new_decoder_architecture"):
        return 1 if config.get("multi_query", True) else heads
    return int(_first(config, "kv_heads", heads))


def _ffn(config: dict[str, Any], kind: str, hidden: int) -> int:
    if kind == "mpt":
        return int(config.get("expansion_ratio", 4) * hidden)
    return int(_first(config, "ffn", 4 * hidden))  # BLOOM/Falcon/GPT-2 style: 4·d


def _moe_counts(arch: Architecture, config: dict[str, Any]) -> Architecture:
    """Total and active parameters of a MoE from its config: routed experts replace the dense
    MLP, plus any shared expert (Qwen2-MoE)."""
    expert_ffn = arch.expert_ffn or arch.ffn
    per_expert = 3 * arch.hidden * expert_ffn
    shared = 3 * arch.hidden * int(config.get("shared_expert_intermediate_size") or 0)
    dense = arch.dense_params() - arch.layers * 3 * arch.hidden * arch.ffn + arch.layers * shared
    total = dense + arch.layers * arch.experts * per_expert
    active = dense + arch.layers * arch.experts_per_token * per_expert
    return replace(arch, params_b=total / 1e9, active_params_b=active / 1e9, expert_ffn=expert_ffn)


def _deepseek_counts(arch: Architecture, config: dict[str, Any]) -> Architecture:
    """DeepSeek-V2/V3: MLA attention (low-rank query and KV projections), the first
    `first_k_dense_replace` layers dense, the rest routed + shared experts."""
    d, n = arch.hidden, arch.heads
    nope, rope = int(config["qk_nope_head_dim"]), int(config["qk_rope_head_dim"])
    v_dim, kv_rank = int(config["v_head_dim"]), int(config["kv_lora_rank"])
    q_rank = int(config.get("q_lora_rank") or 0)
    query = d * q_rank + q_rank * n * (nope + rope) if q_rank else d * n * (nope + rope)
    attention = query + d * (kv_rank + rope) + kv_rank * n * (nope + v_dim) + n * v_dim * d
    dense_layers = int(config.get("first_k_dense_replace") or 0)
    moe_layers = arch.layers - dense_layers
    per_expert = 3 * d * arch.expert_ffn
    shared = int(config.get("n_shared_experts") or 0) * per_expert
    base = arch.layers * attention + dense_layers * 3 * d * arch.ffn
    base += moe_layers * shared + arch.vocab * d * (1 if arch.tied else 2)
    total = base + moe_layers * arch.experts * per_expert
    active = base + moe_layers * arch.experts_per_token * per_expert
    return replace(arch, params_b=total / 1e9, active_params_b=active / 1e9)


def catalog_id(name: str) -> str | None:
    """The bundled catalog id `name` is (by id or alias, after the same org/suffix rules as
    `lookup`), or None: never a nearest match."""
    models = catalog()
    for key in _candidates(name):
        if key in models:
            return key
        for model_id, model in models.items():
            if key in model.aliases:
                return model_id
    return None
