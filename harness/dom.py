"""Reading a DOM that Chromium dumped: the elements, the visible text, definition lists and tables.

The tests' own reading of a page (the standard library's HTML parser), independent of the code
that wrote it. Chromium serializes the DOM it built, so every non-void element is closed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}  # fmt: skip
_INVISIBLE = {"head", "style", "script", "title", "template"}


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@dataclass
class RenderedPage:
    elements: Counter[str] = field(default_factory=Counter)
    handlers: list[str] = field(default_factory=list)  # `on...` attributes anywhere
    text: str = ""  # the visible text, whitespace squeezed
    title: str = ""
    figures: dict[str, str] = field(default_factory=dict)  # <dt> text: <dd> text
    tables: dict[str, list[list[str]]] = field(default_factory=dict)  # section id: body rows
    headers: dict[str, list[str]] = field(default_factory=dict)  # section id: <th> texts
    sections: dict[str, str] = field(default_factory=dict)  # section id: its visible text


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = RenderedPage()
        self._open: list[str] = []
        self._section: str | None = None
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._term = ""
        self._text: list[str] = []
        self._section_text: list[str] = []
        self._title: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.page.elements[tag] += 1
        self.page.handlers += [name for name, _ in attrs if name.startswith("on")]
        if tag in _VOID:
            return
        self._open.append(tag)
        if tag == "section":
            self._section = dict(attrs).get("id") or ""
            self._section_text = []
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th", "dt", "dd"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or tag not in self._open:
            return
        while self._open.pop() != tag:
            pass
        cell = _squeeze("".join(self._cell)) if self._cell is not None else ""
        section = self._section or ""
        if tag in ("td", "th") and self._row is not None:
            self._row.append(cell)
            if tag == "th":
                self.page.headers.setdefault(section, []).append(cell)
        elif tag == "dt":
            self._term = cell
        elif tag == "dd":
            self.page.figures[self._term] = cell
        elif tag == "tr" and self._row is not None:
            if "thead" not in self._open:
                self.page.tables.setdefault(section, []).append(self._row)
            self._row = None
        elif tag == "section":
            self.page.sections[section] = _squeeze("".join(self._section_text))
            self._section = None
        if tag in ("td", "th", "dt", "dd"):
            self._cell = None

    def handle_data(self, data: str) -> None:
        if "title" in self._open:
            self._title.append(data)
        if any(tag in _INVISIBLE for tag in self._open):
            return
        self._text.append(data)
        if self._section is not None:
            self._section_text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def close(self) -> None:
        super().close()
        self.page.text = _squeeze("".join(self._text))
        self.page.title = _squeeze("".join(self._title))


def read_dom(html: str) -> RenderedPage:
    reader = _Reader()
    reader.feed(html)
    reader.close()
    return reader.page
