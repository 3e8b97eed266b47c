"""The Jinja environment for everything rendered from `templates/` (shipped as package data).

HTML templates autoescape (provider strings are untrusted input); undefined names are errors,
so a template that drifts from its data fails loudly instead of rendering blanks.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

from priceadvisor.resources import templates_dir

if TYPE_CHECKING:
    import jinja2


def usd(value: float | None, digits: int = 2) -> str:
    """$1,234.56 style; em dash for unknown."""
    return "—" if value is None else f"${value:,.{digits}f}"


def money(value: float | None) -> str:
    """A price as a person reads it: cents, or a tenth of a cent under $1; em dash unknown."""
    if value is None:
        return "—"
    return f"${value:,.3f}" if abs(value) < 1 else f"${value:,.2f}"


def figure(value: float | None) -> str:
    """A count or measure without noise: 8, 0.17, 1,234.5."""
    if value is None:
        return "—"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"


def counted(value: int, noun: str) -> str:
    """`1 provider`, `35 providers`, `1,157 offers`: a count with its noun, singular for one."""
    return f"{value:,} {noun}{'' if value == 1 else 's'}"


def when(value: object) -> str:
    """Timestamps to the minute (UTC, as stored), never with microseconds."""
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return "—" if value is None else str(value)


def with_page(query: str, page: int) -> str:
    """The same query string with another page number."""
    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=False) if k != "page"]
    return urlencode([*pairs, ("page", str(page))])


@cache
def environment() -> jinja2.Environment:
    # Jinja loads with the first render, not with this module: the daemon imports the
    # formatters above (the dashboard's labels) and renders only when a page or message is made.
    import jinja2  # noqa: PLC0415

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()),
        # ".html.j2" too: select_autoescape matches name endings; ".j2" alone is not HTML.
        autoescape=jinja2.select_autoescape(["html", "htm", "xml", "html.j2", "htm.j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        usd=usd, money=money, figure=figure, when=when, with_page=with_page, counted=counted
    )
    return env


def render(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)
