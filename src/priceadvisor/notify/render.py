"""The Jinja environment for everything rendered from `templates/` (shipped as package data).

HTML templates autoescape (provider strings are untrusted input); undefined names are errors,
so a template that drifts from its data fails loudly instead of rendering blanks.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2

from priceadvisor.resources import templates_dir


def usd(value: float | None, digits: int = 2) -> str:
    """$1,234.56 style; em dash for unknown."""
    return "—" if value is None else f"${value:,.{digits}f}"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()),
        # ".html.j2" too: select_autoescape matches name endings; ".j2" alone is not HTML.
        autoescape=jinja2.select_autoescape(["html", "htm", "xml", "html.j2", "htm.j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["usd"] = usd
    return env


def render(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)
