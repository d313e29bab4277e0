"""Read the widgets' HTML tables back with the standard library's parser (tests only).

:func:`read_tables` returns each ``<table>`` of a page as its classes and rows of
:class:`Cell`; a cell keeps its tag, attributes, visible text (SVG text left out), and the
bars of an SVG inside it (each ``<rect>``'s attributes and tooltip). :func:`legend_lines`
returns the lines of the legends under the tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Cell:
    tag: str
    attrs: dict[str, str]
    text: str = ""
    bars: list[dict[str, str]] = field(default_factory=list)
    svg_label: str | None = None

    @property
    def style(self) -> str:
        return self.attrs.get("style", "").replace(" ", "")


@dataclass
class Table:
    classes: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    head_rows: int = 0

    @property
    def head(self) -> list[list[Cell]]:
        return self.rows[: self.head_rows]

    @property
    def body(self) -> list[list[Cell]]:
        return self.rows[self.head_rows :]

    def column(self, label: str) -> int:
        """Index of the column whose first header row reads ``label``."""
        return [c.text for c in self.rows[0]].index(label)


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[Table] = []
        self.legend: list[str] = []
        self.tags: list[str] = []  # every start tag seen (to find injected elements)
        self._cell: Cell | None = None
        self._in_head = self._in_svg = self._in_li = False
        self._title_of: dict[str, str] | None = None
        self._svg_title = False
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append(tag)
        if tag == "table":
            self.tables.append(Table(a.get("class", "").split()))
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr" and self.tables:
            self.tables[-1].rows.append([])
            if self._in_head:
                self.tables[-1].head_rows += 1
        elif tag in ("td", "th") and self.tables:
            self._cell = Cell(tag, a)
            self.tables[-1].rows[-1].append(self._cell)
        elif tag == "svg":
            self._in_svg = True
            if self._cell is not None:
                self._cell.svg_label = a.get("aria-label")
        elif tag == "rect" and self._cell is not None:
            self._title_of = dict(a)
            self._cell.bars.append(self._title_of)
        elif tag == "title" and self._in_svg:
            self._svg_title = True
        elif tag == "li":
            self._in_li, self._text = True, []

    def handle_endtag(self, tag: str) -> None:
        if tag == "thead":
            self._in_head = False
        elif tag in ("td", "th"):
            if self._cell is not None:
                self._cell.text = self._cell.text.strip()
            self._cell = None
        elif tag == "svg":
            self._in_svg = False
        elif tag == "rect":
            self._title_of = None
        elif tag == "title":
            self._svg_title = False
        elif tag == "li" and self._in_li:
            self.legend.append("".join(self._text).strip())
            self._in_li = False

    def handle_data(self, data: str) -> None:
        if self._svg_title and self._title_of is not None:
            self._title_of["title"] = self._title_of.get("title", "") + data
        elif self._cell is not None and not self._in_svg:
            self._cell.text += data
        if self._in_li:
            self._text.append(data)


def read(page: str) -> _Reader:
    reader = _Reader()
    reader.feed(page)
    reader.close()
    return reader


def read_tables(page: str) -> list[Table]:
    return read(page).tables


def legend_lines(page: str) -> list[str]:
    return read(page).legend
