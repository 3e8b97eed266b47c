"""Markup variants of a recorded page, made in the tests: what the next version of a pricing
page is likely to change (column order, an extra wrapper, renamed classes)."""

from __future__ import annotations

from bs4 import BeautifulSoup, Tag


def reorder_columns(html: str, table: str, order: list[int]) -> str:
    """Every row of the tables matched by the CSS selector `table` with its cells in `order`
    (old indexes in their new places); cells past the listed ones keep their place after them."""
    soup = BeautifulSoup(html, "html.parser")
    for element in soup.select(table):
        for row in element.find_all("tr"):
            cells = row.find_all(["th", "td"], recursive=False)
            moved = [cells[i] for i in order if i < len(cells)]
            rest = [c for i, c in enumerate(cells) if i not in order]
            for cell in cells:
                cell.extract()
            for cell in moved + rest:
                row.append(cell)
    return str(soup)


def wrap(html: str, selector: str, tag: str = "div") -> str:
    """The first element matched by `selector` wrapped in one more element."""
    soup = BeautifulSoup(html, "html.parser")
    element = soup.select_one(selector)
    assert isinstance(element, Tag), selector
    element.wrap(soup.new_tag(tag, attrs={"class": "wrapper-added-by-test"}))
    return str(soup)


def rename_classes(html: str, old: str, new: str) -> str:
    """Every class attribute with `old` replaced by `new` (a redesign's renamed utility)."""
    soup = BeautifulSoup(html, "html.parser")
    for element in soup.find_all(class_=True):
        element["class"] = [new if c == old else c for c in element["class"]]
    return str(soup)
