"""`estimate` from Python: the workload's fields checked by WorkloadSpec (the one schema the
config and the CLI share), sized by the sizing core, with what would fit when it does not."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from priceadvisor.api.errors import PriceDataError
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.sizing.alternatives import what_fits
from priceadvisor.sizing.estimate import SizingError, software_key
from priceadvisor.sizing.estimate import estimate as size
from priceadvisor.sizing.workloads import to_workload
from priceadvisor.workload import ArchitectureNumbers, WorkloadSpec, describe

# Serving GPUs up to the largest training clusters, as `estimate --gpus` takes them.
MAX_GPUS = 131072


def estimate(gpu: str, gpus: int, fields: dict[str, Any]) -> dict[str, Any]:
    """The record `estimate --format json` prints, but `likely` (the CLI's wording of the
    ranges: `uncertainty` is the calibrated relative range)."""
    if not (isinstance(gpus, int) and 1 <= gpus <= MAX_GPUS):
        raise PriceDataError(f"gpus {gpus!r} is not in the range 1 to {MAX_GPUS}")
    spec = workload_spec(fields)
    work = to_workload(spec)
    model = _gpu(gpu)
    try:
        sized = size(work, model, gpus, spec.tensor_parallel)
    except SizingError as exc:
        raise PriceDataError(str(exc)) from None
    record = {
        "model": work.arch.name,
        "task": spec.task,
        "precision": spec.precision,
        "software": software_key(work) or "unknown",
        "params_b": round(work.arch.total_params / 1e9, 2),
        "active_params_b": round(work.arch.active_params / 1e9, 2),
    } | sized.as_dict()
    fits = [] if record["fits"] else what_fits(work, model, gpus, spec.tensor_parallel)
    return record | {"would_fit": [a.as_dict() for a in fits]}


def workload_spec(fields: dict[str, Any]) -> WorkloadSpec:
    """The fields as a workload of the config: the architecture numbers nested as the config
    nests them; an error is the config's one-line message, after the field at fault."""
    given = {"task": "serve"} | {k: v for k, v in fields.items() if v is not None}  # as the CLI
    numbers = {k: given.pop(k) for k in list(given) if k in ArchitectureNumbers.model_fields}
    if numbers:
        given["architecture"] = numbers
    try:
        return WorkloadSpec.model_validate(given)
    except ValidationError as exc:
        where, message = describe(exc)
        raise PriceDataError(f"{where[-1]}: {message}" if where else message) from None


def _gpu(gpu: str) -> str:
    catalog = gpu_catalog()
    resolved = gpu if gpu in catalog else catalog.resolve(gpu)
    if resolved is None:
        raise PriceDataError(
            f'unknown GPU {gpu!r} (canonical ids: `priceadvisor sql "select gpu_model from gpus"`)'
        )
    return resolved
