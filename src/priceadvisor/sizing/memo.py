"""A memo of sizing's pure helpers that lives for one sizing pass (`sizing_pass`).

Serving with no layout given sizes every valid TP x PP layout of a replica, and the advisor
sizes the same workload on 1, 2, 4 and 8 GPUs of a model: the same decode steps, memory
splits and latencies come up again and again (a replica of TP2 x PP2 is the same on 4 GPUs
as on 8). Inside a pass, a helper marked `per_pass` computes each distinct call once.

The key is the identity of the workload and GPU objects (neither is hashable: a GPU's specs
and the fitted scales are dicts) and the value of the plain arguments. The memo keeps every
object it keyed by identity alive, so no other object can take its id while the pass lasts;
the objects are frozen, so the same object always gives the same result. Nothing outlives
the pass: a memo across passes would keep answers computed under other module tables (tests
patch them) or other scales, and a process never pays for memory it no longer needs.
Callers must not mutate a memoised result (the helpers return floats, tuples and dicts that
`_serve` and `_train` copy into their estimates).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_MISSING = object()


class _Pass:
    __slots__ = ("alive", "found")

    def __init__(self) -> None:
        self.found: dict[tuple[Any, ...], Any] = {}
        self.alive: list[tuple[Any, ...]] = []

    def keep(self, key: tuple[Any, ...], result: Any, objects: tuple[Any, ...]) -> Any:
        """Remember a result, and keep the objects its key names by identity alive."""
        self.found[key] = result
        self.alive.append(objects)
        return result


_current: ContextVar[_Pass | None] = ContextVar("priceadvisor_sizing_pass", default=None)


class sizing_pass:  # lower case: read as a function, `with sizing_pass():`
    """Memoise `per_pass` helpers until the block ends; inside an open pass, join it. A class
    rather than a generator: every serving estimate opens one (joined inside the advisor's),
    and joining must cost next to nothing."""

    __slots__ = ("_token",)

    def __init__(self) -> None:
        self._token: Token[_Pass | None] | None = None

    def __enter__(self) -> None:
        if _current.get() is None:
            self._token = _current.set(_Pass())

    def __exit__(self, *_: object) -> None:
        if self._token is not None:
            _current.reset(self._token)


def per_pass(objects: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Compute the decorated function once per distinct call inside a sizing pass (outside one:
    as is), its first `objects` arguments keyed by identity, the others by value (they must be
    hashable). Positional calls only are memoised. A function of one to four positional-only
    parameters (`/`, no defaults) gets a wrapper that names them (`_FIXED`), which costs a
    quarter less per call than packing them."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        fixed = _FIXED.get((objects, _plain_arity(function)))
        if fixed is not None:
            return functools.wraps(function)(fixed(function))
        if objects == 1:  # (workload or GPU, ...): keyed without a loop
            return functools.wraps(function)(_keyed_by_one(function))
        if objects == 2:  # (workload, GPU, ...): the common case, keyed without a loop
            return functools.wraps(function)(_keyed_by_two(function))

        @functools.wraps(function)
        def memoised(*args: P.args, **kwargs: P.kwargs) -> R:
            current = _current.get()
            if current is None or kwargs:
                return function(*args, **kwargs)
            key = (function, *map(id, args[:objects]), *args[objects:])
            found = current.found.get(key, _MISSING)
            if found is _MISSING:
                found = current.found[key] = function(*args, **kwargs)
                current.alive.append(args)
            return found  # type: ignore[no-any-return]

        return memoised

    return decorate


def _keyed_by_one(function: Callable[..., R]) -> Callable[..., R]:
    """`per_pass(objects=1)`'s wrapper with its object named (as `_keyed_by_two`)."""

    def memoised(first: object, *rest: Any, **kwargs: Any) -> R:
        current = _current.get()
        if current is None or kwargs:
            return function(first, *rest, **kwargs)
        key = (function, id(first), *rest)
        found = current.found.get(key, _MISSING)
        if found is _MISSING:
            found = current.found[key] = function(first, *rest)
            current.alive.append((first,))
        return found  # type: ignore[no-any-return]

    return memoised


def _keyed_by_two(function: Callable[..., R]) -> Callable[..., R]:
    """`per_pass(objects=2)`'s wrapper with its two objects named: the hot path of a sizing
    pass (hundreds of thousands of hits), so the hit is a key, a lookup and a return."""

    def memoised(first: object, second: object, *rest: Any, **kwargs: Any) -> R:
        current = _current.get()
        if current is None or kwargs:
            return function(first, second, *rest, **kwargs)
        key = (function, id(first), id(second), *rest)
        found = current.found.get(key, _MISSING)
        if found is _MISSING:
            found = current.found[key] = function(first, second, *rest)
            current.alive.append((first, second))
        return found  # type: ignore[no-any-return]

    return memoised


def _plain_arity(function: Callable[..., Any]) -> int | None:
    """How many parameters the function takes when all are positional-only without a default
    (so that no call can name them); else None."""
    code = getattr(function, "__code__", None)
    packed = 0x04 | 0x08  # CO_VARARGS, CO_VARKEYWORDS
    if code is None or code.co_flags & packed or code.co_kwonlyargcount:
        return None
    if getattr(function, "__defaults__", None) or code.co_posonlyargcount != code.co_argcount:
        return None
    return int(code.co_argcount)


# The wrappers of the hot helpers of a sizing pass (hundreds of thousands of calls in a first
# ranking), by (objects keyed by identity, parameters): each names its arguments, so that a hit
# is a key, a lookup and a return.


def _one_of_one(function: Callable[..., R]) -> Callable[..., R]:
    def memoised(first: object) -> R:
        current = _current.get()
        if current is None:
            return function(first)
        key = (function, id(first))
        found = current.found.get(key, _MISSING)
        if found is _MISSING:
            found = current.keep(key, function(first), (first,))
        return found  # type: ignore[no-any-return]

    return memoised


def _one_of_two(function: Callable[..., R]) -> Callable[..., R]:
    def memoised(first: object, second: Any) -> R:
        current = _current.get()
        if current is None:
            return function(first, second)
        key = (function, id(first), second)
        found = current.found.get(key, _MISSING)
        if found is _MISSING:
            found = current.keep(key, function(first, second), (first,))
        return found  # type: ignore[no-any-return]

    return memoised


def _two_of_two(function: Callable[..., R]) -> Callable[..., R]:
    def memoised(first: object, second: object) -> R:
        current = _current.get()
        if current is None:
            return function(first, second)
        key = (function, id(first), id(second))
        found = current.found.get(key, _MISSING)
        if found is _MISSING:
            found = current.keep(key, function(first, second), (first, second))
        return found  # type: ignore[no-any-return]

    return memoised


def _two_of_three(function: Callable[..., R]) -> Callable[..., R]:
    def memoised(first: object, second: object, third: Any) -> R:
        current = _current.get()
        if current is None:
            return function(first, second, third)
        key = (function, id(first), id(second), third)
        found = current.found.get(key, _MISSING)
        if found is _MISSING:
            found = current.keep(key, function(first, second, third), (first, second))
        return found  # type: ignore[no-any-return]

    return memoised


def _two_of_four(function: Callable[..., R]) -> Callable[..., R]:
    def memoised(first: object, second: object, third: Any, fourth: Any) -> R:
        current = _current.get()
        if current is None:
            return function(first, second, third, fourth)
        key = (function, id(first), id(second), third, fourth)
        found = current.found.get(key, _MISSING)
        if found is _MISSING:
            result = function(first, second, third, fourth)
            found = current.keep(key, result, (first, second))
        return found  # type: ignore[no-any-return]

    return memoised


_FIXED: dict[tuple[int, int | None], Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    (1, 1): _one_of_one,
    (1, 2): _one_of_two,
    (2, 2): _two_of_two,
    (2, 3): _two_of_three,
    (2, 4): _two_of_four,
}
