"""Workload profiles in the config (`[[workloads]]`), validated with clear errors (DESIGN §5)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from priceadvisor import llm
from priceadvisor.sizing import Precision, Task, Workload

CONTINENTS = ("AF", "AS", "EU", "NA", "OC", "SA")


class ArchitectureNumbers(BaseModel):
    """Explicit model numbers, for a model the bundled catalog does not have."""

    model_config = ConfigDict(extra="forbid")

    params_b: float | None = Field(None, gt=0)
    active_params_b: float | None = Field(None, gt=0)
    layers: int | None = Field(None, gt=0)
    hidden: int | None = Field(None, gt=0)
    heads: int | None = Field(None, gt=0)
    kv_heads: int | None = Field(None, gt=0)
    head_dim: int | None = Field(None, gt=0)
    ffn: int | None = Field(None, gt=0)
    vocab: int | None = Field(None, gt=0)
    tied: bool | None = None
    experts: int | None = Field(None, ge=0)
    experts_per_token: int | None = Field(None, ge=0)


class WorkloadProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    task: Task
    model: str | None = Field(None, description="bundled catalog id")
    model_config_json: Path | None = Field(None, description="a local HF config.json")
    architecture: ArchitectureNumbers | None = None
    precision: Precision = "bf16"
    input_tokens: int = Field(1000, gt=0)
    output_tokens: int = Field(250, gt=0)
    concurrency: int = Field(16, gt=0)
    ttft_ms_max: float | None = Field(None, gt=0)
    tpot_ms_max: float | None = Field(None, gt=0)
    monthly_output_tokens: float | None = Field(None, gt=0)
    train_tokens: float | None = Field(None, gt=0)
    seq_len: int = Field(4096, gt=0)
    spot_ok: bool = False
    providers: list[str] = Field(default_factory=list)
    countries: list[str] = Field(default_factory=list)
    continents: list[Literal["AF", "AS", "EU", "NA", "OC", "SA"]] = Field(default_factory=list)
    eu_only: bool = False
    max_gpus: int | None = Field(None, gt=0)
    pricing: list[Literal["on_demand", "spot"]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_model(self) -> WorkloadProfile:
        given = [x for x in (self.model, self.model_config_json, self.architecture) if x]
        if len(given) != 1:
            raise ValueError("give exactly one of model, model_config_json or architecture")
        if self.task in ("pretrain", "finetune", "lora", "qlora") and not self.train_tokens:
            raise ValueError(f"a {self.task} workload needs train_tokens")
        self.arch()  # unknown model, unreadable config.json: an error now, not at advise time
        return self

    def arch(self) -> llm.Architecture:
        if self.model:
            return llm.lookup(self.model)
        if self.model_config_json:
            return llm.from_hf_config(self.model_config_json)
        assert self.architecture is not None
        numbers = self.architecture.model_dump(exclude_none=True)
        return llm.from_numbers(self.name, **numbers)

    def sizing(self) -> Workload:
        return Workload(
            task=self.task,
            arch=self.arch(),
            precision=self.precision,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            concurrency=self.concurrency,
            ttft_ms_max=self.ttft_ms_max,
            tpot_ms_max=self.tpot_ms_max,
            monthly_output_tokens=self.monthly_output_tokens,
            train_tokens=self.train_tokens,
            seq_len=self.seq_len,
        )
