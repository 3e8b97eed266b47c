"""The serving layout search (`fastest_layout`) ranks layouts without building their estimates
and shares its helpers' figures inside a sizing pass; it must choose exactly what sizing every
valid layout in full would choose, with the same figures to the last bit."""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from typing import Any

import pytest

from priceadvisor import llm
from priceadvisor.gpu_specs import GpuSpec, gpu_catalog
from priceadvisor.sizing import estimate as sizing
from priceadvisor.sizing import memo
from priceadvisor.sizing.estimate import Estimate, Scales, Workload
from priceadvisor.sizing.memo import per_pass, sizing_pass

MODELS = ("llama-3.2-1b", "llama-3.1-8b", "gemma-2-27b", "mixtral-8x7b", "llama-3.1-70b")
GPUS = ("L4-24GB", "A100-SXM-40GB", "H100-SXM-80GB", "H100-PCIE-80GB", "MI300X-192GB")
COUNTS = (1, 2, 4, 8, 16)
# Fitted-looking scales (engine and regime factors, ranges) so that the factor paths run too.
SCALES = Scales(
    factors={"decode": 0.9, "serve-throughput": 1.1, "engine-amd": 0.8, "engine:vllm": 1.05},
    uncertainty={"decode": 0.25, "serve-throughput:unknown": 0.4},
)
# (task, precision, changes): targets, engines and batches that bind the choice differently.
VARIANTS: tuple[tuple[str, str, dict[str, object]], ...] = (
    ("serve", "bf16", {}),
    ("serve", "fp8", {"tpot_ms_max": 40.0, "engine": "vllm-v0"}),
    ("serve", "bf16", {"ttft_ms_max": 150.0, "concurrency": 2}),
    ("batch", "fp8", {"concurrency": None, "engine": "vllm"}),
    ("batch", "bf16", {"concurrency": None, "engine": "trt-llm", "scales": SCALES}),
    ("serve", "int4", {"concurrency": 64, "input_tokens": 8000, "pipeline_parallel": 2}),
)


def exhaustive(work: Workload, gpu: GpuSpec, gpus: int) -> Estimate:
    """The search as first written: every valid layout sized in full (each on its own copy of
    the workload, no sizing pass), then the fastest that fits."""
    sized = [
        sizing._serve(dataclasses.replace(work, pipeline_parallel=pp), gpu, gpus, tp)
        for tp, pp in sizing.serving_layouts(work, gpus)
    ]
    fitting = [r for r in sized if r.fits]
    if not fitting:
        return sizing._serve(work, gpu, gpus, sizing.default_tensor_parallel(work, gpu, gpus))
    fitting.sort(key=lambda r: (-r.tokens_per_s, r.tensor_parallel * r.pipeline_parallel))
    best, others = fitting[0], fitting[1:]
    runner = None
    if others:
        name = sizing._layout_name(others[0].tensor_parallel, others[0].pipeline_parallel)
        runner = (name, others[0].tokens_per_s, others[0].tpot_ms or 0.0)
    best.layout_chosen = sizing._layout_reason(best, runner, len(fitting))
    return best


def _grid() -> list[tuple[Workload, GpuSpec, int]]:
    catalog = gpu_catalog().gpus
    cases = []
    for model, (task, precision, changes) in itertools.product(MODELS, VARIANTS):
        work = dataclasses.replace(Workload(task, llm.lookup(model), precision), **changes)
        for gpu_id in GPUS:
            gpu = catalog[gpu_id]
            cases += [(work, gpu, n) for n in COUNTS if n % work.pipeline_parallel == 0]
    return cases


def test_the_search_chooses_what_sizing_every_layout_chooses() -> None:
    cases = _grid()
    expected = [exhaustive(*case) for case in cases]
    alone = [sizing.fastest_layout(*case) for case in cases]  # each call its own pass
    with sizing_pass():  # one pass over the whole grid, as advise shares one per workload
        shared = [sizing.fastest_layout(*case) for case in cases]
    for case, want, got_alone, got_shared in zip(cases, expected, alone, shared, strict=True):
        assert repr(got_alone) == repr(want), case  # every field, floats to the last bit
        assert repr(got_shared) == repr(want), case
    # The grid reaches every way the choice can go, so the comparison above means something.
    kinds = Counter(_kind(found) for found in expected)
    assert {"chosen of several", "chosen alone", "none fits"} == set(kinds), kinds
    reasons = " ".join(r.layout_chosen or "" for r in expected)
    assert "x PP2" in reasons and "TP8" in reasons


def test_the_bounded_search_chooses_what_sizing_every_layout_chooses() -> None:
    """Advice's search (`fastest_fitting`) sizes only the layouts whose bound on tokens/s can
    still beat the fastest found; it must choose the exhaustive reference's layout with the
    same batch and tokens/s, alone or in a pass, and skip some layouts on this grid."""
    cases = _grid()
    expected = [exhaustive(*case) for case in cases]
    alone = [sizing.fastest_fitting(*case) for case in cases]
    with sizing_pass():
        shared = [sizing.fastest_fitting(*case) for case in cases]
    for case, want, got_alone, got_shared in zip(cases, expected, alone, shared, strict=True):
        for got in (got_alone, got_shared):
            if not want.fits:
                assert got is None, case
                continue
            assert got is not None, case
            layout = (got.tp, got.work.pipeline_parallel, got.batch, repr(got.tokens_per_s))
            wanted = (want.tensor_parallel, want.pipeline_parallel, want.batch)
            assert layout == (*wanted, repr(want.tokens_per_s)), case
    sized = Counter[str]()
    with sizing_pass():
        for work, gpu, gpus in cases:
            sized["fitting"] += len(sizing.fitting_layouts(work, gpu, gpus))
    sized_by_bound = _layouts_sized_by(sizing.fastest_fitting, cases)
    assert 0 < sized_by_bound < sized["fitting"]  # the bound skipped layouts here


def _layouts_sized_by(search: object, cases: list[tuple[Workload, GpuSpec, int]]) -> int:
    """Layouts the search sized in full (`layout_figures` computed), each case in its pass."""
    count = 0
    real = sizing.layout_figures.__wrapped__  # type: ignore[attr-defined]

    def counted(*args: object) -> object:
        nonlocal count
        count += 1
        return real(*args)

    patched = per_pass(objects=2)(counted)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sizing, "layout_figures", patched)
        for case in cases:
            with sizing_pass():
                search(*case)  # type: ignore[operator]
    return count


def test_the_speed_bound_is_above_every_fitting_layouts_speed() -> None:
    """`replica_speed_bound` x replicas is an upper bound on every fitting layout's tokens/s
    (what lets the search skip a layout), and None exactly where a replica holds no request."""
    checked = 0
    for work, gpu, gpus in _grid():
        for tp, pp in sizing.serving_layouts(work, gpus):
            staged = dataclasses.replace(work, pipeline_parallel=pp)
            bound = sizing.replica_speed_bound(staged, gpu, tp, pp)
            assert (bound is None) == (not sizing.holds_a_request(staged, gpu, tp))
            figures = sizing.layout_figures(staged, gpu, tp, pp)
            if figures is None or bound is None:
                continue
            replicas = sizing.replicas_of(gpus, tp, pp)
            speed = sizing.serving_tokens_per_s(figures.work, gpu, tp, figures.batch, replicas)
            assert speed <= bound * replicas, (work, gpu.id, gpus, tp, pp)
            checked += 1
    assert checked > 100


def _kind(found: Estimate) -> str:
    if not found.fits:
        return "none fits"
    return "chosen alone" if "fastest of 1 " in (found.layout_chosen or "") else "chosen of several"


def test_a_layout_excluded_by_a_latency_target_is_not_counted() -> None:
    work = Workload("serve", llm.lookup("llama-3.1-70b"), "fp8", tpot_ms_max=40.0)
    gpu = gpu_catalog().gpus["H100-SXM-80GB"]
    chosen, want = sizing.fastest_layout(work, gpu, 8), exhaustive(work, gpu, 8)
    assert repr(chosen) == repr(want)
    fitting = len(sizing.fitting_layouts(work, gpu, 8))
    assert 1 < fitting < len(sizing.serving_layouts(work, 8))
    assert f"the fastest of {fitting} layouts that fit" in (chosen.layout_chosen or "")


class _Thing:
    """An unhashable stand-in for a workload: equal things are still different objects."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Thing) and other.value == self.value


def test_the_memo_lives_for_one_pass_and_keys_objects_by_identity() -> None:
    calls: list[tuple[int, int]] = []

    @per_pass(objects=1)
    def doubled(thing: _Thing, n: int) -> int:
        calls.append((thing.value, n))
        return thing.value * 2 + n

    first, twin = _Thing(3), _Thing(3)
    assert doubled(first, 1) == doubled(first, 1) == 7 and len(calls) == 2  # no pass: as is
    with sizing_pass():
        assert doubled(first, 1) == doubled(first, 1) == 7
        assert doubled(twin, 1) == 7 and doubled(first, 2) == 8
        with sizing_pass():  # joins the open pass
            assert doubled(first, 1) == 7
    assert len(calls) == 5  # first/1, twin/1, first/2 once each in the pass
    doubled(first, 1)
    assert len(calls) == 6  # the pass's memo went with it


def test_every_wrapper_memoises_by_identity_and_value_for_one_pass() -> None:
    """The wrappers named by arity (`memo._FIXED`, positional-only helpers) and the general
    ones (named parameters, a default, more arguments) answer alike: once per distinct call in
    a pass, as is outside one; a call by keyword is not memoised (and a positional-only helper
    refuses it, as Python does)."""
    calls: list[tuple[Any, ...]] = []

    def record(*args: Any) -> int:
        calls.append(args)
        return sum(a.value if isinstance(a, _Thing) else a for a in args)

    @per_pass(objects=2)
    def four(a: _Thing, b: _Thing, c: int, d: int, /) -> int:
        return record(a, b, c, d)

    @per_pass(objects=2)
    def named(a: _Thing, b: _Thing, c: int, d: int) -> int:
        return record(a, b, c, d)

    @per_pass(objects=2)
    def five(a: _Thing, b: _Thing, c: int, d: int, e: int, /) -> int:
        return record(a, b, c, d, e)

    @per_pass(objects=2)
    def defaulted(a: _Thing, b: _Thing, c: int = 1) -> int:
        return record(a, b, c)

    first, second, twin = _Thing(1), _Thing(2), _Thing(2)
    with sizing_pass():
        assert four(first, second, 3, 4) == four(first, second, 3, 4) == 10
        assert four(first, twin, 3, 4) == 10 and four(first, second, 4, 3) == 10
        assert five(first, second, 1, 1, 1) == five(first, second, 1, 1, 1) == 6
        assert defaulted(first, second) == defaulted(first, second) == 4
        assert defaulted(first, second, c=2) == 5  # by keyword: as is
        assert named(first, second, 3, 4) == named(first, second, 3, 4) == 10
        assert named(first, second, 3, d=4) == 10  # by keyword: as is
        with pytest.raises(TypeError):
            four(first, second, 3, d=4)  # type: ignore[call-arg]
    assert len(calls) == 8
    assert four(first, second, 3, 4) == 10 and len(calls) == 9  # outside a pass: as is
    assert memo._plain_arity(four.__wrapped__) == 4  # type: ignore[attr-defined]
    assert memo._plain_arity(named.__wrapped__) is None  # type: ignore[attr-defined]


def test_an_unhashable_plain_argument_is_refused_inside_a_pass() -> None:
    @per_pass(objects=1)
    def size(thing: _Thing, other: _Thing) -> int:
        return thing.value + other.value

    assert size(_Thing(1), _Thing(2)) == 3
    with sizing_pass(), pytest.raises(TypeError):
        size(_Thing(1), _Thing(2))


def test_decode_rates_belong_to_one_workload_and_die_with_the_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpu = gpu_catalog().gpus["H100-SXM-80GB"]
    plain = Workload("serve", llm.lookup("llama-3.1-8b"), "bf16")
    scaled = dataclasses.replace(plain, scales=SCALES, engine="vllm")
    eight_bit = dataclasses.replace(plain, kv_precision="fp8")
    alone = [sizing.decode_seconds(work, gpu, 2, 16) for work in (plain, scaled)]
    kv_alone = [sizing.kv_per_token(work, tp) for work in (plain, eight_bit) for tp in (1, 4)]
    with sizing_pass():
        shared = [sizing.decode_seconds(work, gpu, 2, 16) for work in (plain, scaled)]
        kv = [sizing.kv_per_token(work, tp) for work in (plain, eight_bit) for tp in (1, 4)]
        assert kv == kv_alone and len(set(kv)) == 4
        assert sizing.decode_rates(plain, gpu) is sizing.decode_rates(plain, gpu)
        assert sizing.decode_rates(scaled, gpu) != sizing.decode_rates(plain, gpu)
    assert shared == alone and alone[0] != alone[1]
    monkeypatch.setattr(sizing, "LAYER_OVERHEAD_S", sizing.LAYER_OVERHEAD_S * 2)
    with sizing_pass():  # a new pass computes the rates afresh
        assert sizing.decode_seconds(plain, gpu, 2, 16)[0] > alone[0][0]


def test_training_in_one_pass_sizes_as_each_estimate_alone() -> None:
    """Training shares one copy of the workload per tensor-parallel degree and recompute policy
    in a pass; every estimate is the same as sized alone, whatever the GPU, count and degree."""
    works = [
        Workload("finetune", llm.lookup("llama-3.1-8b"), "bf16", train_tokens=1e9),
        Workload("lora", llm.lookup("mixtral-8x7b"), "fp8", train_tokens=1e9, scales=SCALES),
        Workload("finetune", llm.lookup("gemma-2-27b"), "bf16", tensor_parallel=2),
    ]
    cases = [(w, g, n, tp) for w in works for g in GPUS for n in (1, 2, 8) for tp in (None, 2)]
    cases = [(w, g, n, tp) for w, g, n, tp in cases if n % (tp or w.tensor_parallel or 1) == 0]
    alone = [repr(sizing.estimate(w, g, n, tp)) for w, g, n, tp in cases]
    with sizing_pass():
        shared = [repr(sizing.estimate(w, g, n, tp)) for w, g, n, tp in cases]
        work = works[0]
        assert sizing.with_training_tensor_parallel(work, None) is work
        assert sizing.with_training_tensor_parallel(work, 2) is (
            sizing.with_training_tensor_parallel(work, 2)
        )
    assert shared == alone
    assert sizing.with_training_tensor_parallel(works[0], 2).tensor_parallel == 2


def test_a_gpus_links_are_its_own_in_a_pass() -> None:
    """The per-pass link figures are keyed by the GPU object: two parts keep their own."""
    catalog = gpu_catalog().gpus
    gpus = [catalog[g] for g in ("H100-SXM-80GB", "H100-PCIE-80GB", "MI300X-192GB")]

    def links() -> list[object]:
        return [link(g) for g in gpus]

    def link(gpu: GpuSpec) -> tuple[bool, float, float]:
        fast = sizing.has_fast_interconnect(gpu)
        return fast, sizing.allreduce_bandwidth(gpu, 4), sizing.point_to_point_bandwidth(gpu, 4)

    alone = links()
    with sizing_pass():
        assert links() == links() == alone
    assert len(set(alone)) == 3


def test_a_layouts_memory_parts_are_shared_by_the_gpus_of_a_pass_and_never_changed() -> None:
    catalog = gpu_catalog().gpus
    small, large = catalog["L4-24GB"], catalog["H100-SXM-80GB"]
    work = Workload("serve", llm.lookup("llama-3.1-8b"), "fp8")
    alone = [sizing.serving_memory(work, gpu, 1) for gpu in (small, large)]
    with sizing_pass():
        shared = [sizing.serving_memory(work, gpu, 1) for gpu in (small, large)]
        assert shared[0][0] is shared[1][0] and shared[0][1] < shared[1][1]
        built = sizing._serve(work, large, 1, 1)
        built.memory_gib["weights"] = -1.0  # an estimate's memory is its own copy
        assert sizing.serving_memory(work, large, 1) == alone[1]
    assert shared == alone


def test_training_memory_is_shared_by_the_gpus_of_a_pass_and_never_changed() -> None:
    """`training_memory` and `prior_compute_seconds` are memoised in a pass (the first is the
    same on every GPU model, the second at every count); an estimate's memory is its own."""
    catalog = gpu_catalog().gpus
    small, large = catalog["A100-SXM-40GB"], catalog["H100-SXM-80GB"]
    work = Workload("finetune", llm.lookup("llama-3.1-8b"), "bf16", train_tokens=1e9)
    alone = [repr(sizing.estimate(work, gpu.id, n)) for gpu in (small, large) for n in (1, 8)]
    with sizing_pass():
        shared = [repr(sizing.estimate(work, gpu.id, n)) for gpu in (small, large) for n in (1, 8)]
        settled = sizing.with_recompute(work, "none")
        assert sizing.training_memory(settled, 8) is sizing.training_memory(settled, 8)
        built = sizing.estimate(work, large.id, 8)
        built.memory_gib["model_state"] = -1.0  # an estimate's memory is its own copy
        assert sizing.training_memory(settled, 8)["model_state"] > 0
        assert repr(sizing.estimate(work, large.id, 8)) == alone[3]
    assert shared == alone
