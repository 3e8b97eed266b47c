"""Model architectures: the bundled catalog (providers/models.toml), explicit numbers, or a
local Hugging Face config.json — and what follows from them (parameters, KV cache per token).

Formulas: the standard transformer parameter and KV-cache counts (attention, MLP or MoE
experts, embeddings); the estimator and its accuracy are described in docs/accuracy.md.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from priceadvisor.resources import providers_dir

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
    aliases: tuple[str, ...] = field(default=())

    @property
    def dim_head(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    def dense_params(self) -> float:
        """N ≈ L·(attention + MLP) + V·d·(1 if tied else 2); norms and biases are noise."""
        q_width = self.heads * self.dim_head
        attention = self.hidden * q_width * 2 + 2 * self.hidden * self.kv_heads * self.dim_head
        mlp = (3 if self.gated else 2) * self.hidden * self.ffn
        embeddings = self.vocab * self.hidden * (1 if self.tied else 2)
        return self.layers * (attention + mlp) + embeddings

    @property
    def total_params(self) -> float:
        return self.params_b * 1e9 if self.params_b else self.dense_params()

    @property
    def active_params(self) -> float:
        return self.active_params_b * 1e9 if self.active_params_b else self.total_params

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


_FIELDS = {f for f in Architecture.__dataclass_fields__ if f != "name"}


@cache
def catalog() -> dict[str, Architecture]:
    data = tomllib.loads((providers_dir() / "models.toml").read_text(encoding="utf-8"))
    models = {}
    for model_id, entry in data["models"].items():
        fields = {k: v for k, v in entry.items() if k in _FIELDS}
        fields["aliases"] = tuple(entry.get("aliases", ()))
        models[model_id] = Architecture(name=entry.get("name", model_id), **fields)
    return models


def lookup(name: str) -> Architecture:
    key = name.strip().lower()
    models = catalog()
    if key in models:
        return models[key]
    for model in models.values():
        if key in model.aliases:
            return model
    known = ", ".join(sorted(models))
    raise ModelError(f"unknown model {name!r} (bundled: {known}; or give explicit params)")


def from_numbers(name: str, **numbers: Any) -> Architecture:
    """Explicit architecture; `params_b` alone is enough for training estimates."""
    defaults = {"layers": 0, "hidden": 0, "heads": 1, "kv_heads": 1, "ffn": 0, "vocab": 0}
    values = defaults | {k: v for k, v in numbers.items() if v is not None}
    unknown = set(values) - _FIELDS
    if unknown:
        raise ModelError(f"unknown architecture field {sorted(unknown)[0]!r}")
    arch = Architecture(name=name, **values)
    if not arch.params_b and not (arch.layers and arch.hidden and arch.ffn and arch.vocab):
        raise ModelError(f"{name}: give params_b or layers, hidden, heads, ffn and vocab")
    return arch


def from_hf_config(path: Path) -> Architecture:
    """A local Hugging Face config.json (Llama/Mistral/Qwen/Mixtral/Gemma naming)."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read {path}: {exc}") from None
    try:
        arch = Architecture(
            name=str(config.get("_name_or_path") or path.parent.name),
            layers=int(config["num_hidden_layers"]),
            hidden=int(config["hidden_size"]),
            heads=int(config["num_attention_heads"]),
            kv_heads=int(config.get("num_key_value_heads", config["num_attention_heads"])),
            ffn=int(config["intermediate_size"]),
            vocab=int(config["vocab_size"]),
            head_dim=int(config.get("head_dim") or 0),
            tied=bool(config.get("tie_word_embeddings", False)),
            experts=int(config.get("num_local_experts") or config.get("num_experts") or 0),
            experts_per_token=int(config.get("num_experts_per_tok") or 0),
            expert_ffn=int(config.get("moe_intermediate_size") or 0),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"{path}: missing or bad field {exc}") from None
    return _moe_counts(arch) if arch.is_moe else arch


def _moe_counts(arch: Architecture) -> Architecture:
    """Total and active parameters of a MoE from its config (experts replace the dense MLP)."""
    expert_ffn = arch.expert_ffn or arch.ffn
    per_expert = 3 * arch.hidden * expert_ffn
    dense = arch.dense_params() - arch.layers * 3 * arch.hidden * arch.ffn
    total = dense + arch.layers * arch.experts * per_expert
    active = dense + arch.layers * arch.experts_per_token * per_expert
    return replace(arch, params_b=total / 1e9, active_params_b=active / 1e9)
