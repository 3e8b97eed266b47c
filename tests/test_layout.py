"""The package layout stays as documented: stages import downwards, and no module imports
itself back through others (a cycle makes start-up order fragile and hides the real layering)."""

from __future__ import annotations

import grimp


def _cycle_through(graph: grimp.ImportGraph, start: str) -> list[str] | None:
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        module, path = stack.pop()
        for imported in graph.find_modules_directly_imported_by(module):
            if imported == start:
                return [*path, start]
            if imported not in seen:
                seen.add(imported)
                stack.append((imported, [*path, imported]))
    return None


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("priceadvisor")
    cycles = [c for m in sorted(graph.modules) if (c := _cycle_through(graph, m))]
    assert not cycles, " -> ".join(cycles[0])


def test_only_the_shared_core_sits_at_the_top() -> None:
    graph = grimp.build_graph("priceadvisor")
    top = {m for m in graph.modules if m.count(".") == 1 and not graph.find_children(m)}
    core = {
        "config",
        "config_basics",
        "workload",
        "gpu_specs",
        "manifest",
        # the manifests' ids and kind without pydantic, for the light start of `prices`
        "manifest_files",
        "llm",
        "records",
        # records' clock and pricing kinds, apart so that a reader imports them alone
        "clock",
        "pricing",
        "durations",
        "resources",
    }
    assert top == {f"priceadvisor.{name}" for name in core | {"__main__"}}
