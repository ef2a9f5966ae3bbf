"""Write a report's sections in every format: Markdown, LaTeX, CSV, HTML, JSON and the terminal.

Renderers see only :class:`~connote.report.document.Section`, :class:`~connote.report.document.Table` and
:class:`~connote.report.document.Figure`, so a table is built once and looks the same everywhere:

* **Markdown** (GitHub-flavoured): one header row per table, numbers right-aligned, ``| < > * _ \\``
  escaped so no cell turns into markup; figures as ``![title](file.png)`` beside the file.
* **LaTeX**: one ``table`` per table with booktabs rules (``\\toprule``, ``\\midrule``, ``\\bottomrule``) and
  the special characters escaped; figures as ``\\includegraphics``. Needs ``booktabs`` and ``graphicx``.
* **CSV**: one file; each table is a block that starts with a line ``table,<key>,<title>``, then its header
  row and its rows, and ends with an empty line.
* **HTML**: one self-contained page: inline CSS, figures as base64 PNG data URIs, no external request.
* **JSON**: ``{"sections": [Section.to_dict(), ...]}``.
* **Terminal**: rich tables that fit the console; long run names become R1, R2, ..., explained beneath the
  first table that shows them.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from connote.report.document import RUN_ROW, Figure, Section, Table

_NUMERIC = re.compile(r"^[\s+\-−—–0-9.,*%()≤]*$")


def numeric_columns(table: Table) -> list[bool]:
    """Which columns hold numbers only (right-aligned); the first column is always text."""
    flags = []
    for j in range(len(table.header)):
        cells = [row[j] for row in table.rows if j < len(row) and row[j].strip()]
        flags.append(j > 0 and bool(cells) and all(_NUMERIC.match(c) for c in cells))
    return flags


def figure_file(figure: Figure) -> str:
    """The file name a figure is written under (its key, made file-name safe)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", figure.key).strip("._") + ".png"


def _figure_files(sections: Sequence[Section]) -> dict[int, str]:
    """File names for every figure (by ``id``), unique within the report."""
    names: dict[int, str] = {}
    taken: set[str] = set()
    for section in sections:
        for figure in section.figures:
            base = figure_file(figure)[:-4] or "figure"
            name, k = f"{base}.png", 2
            while name.lower() in taken:
                name, k = f"{base}-{k}.png", k + 1
            taken.add(name.lower())
            names[id(figure)] = name
    return names


# ------------------------------------------------------------------------------------------ Markdown

_MD_SPECIAL = re.compile(r"([\\|*_`\[\]])")
#: Inline code in a note or cell: a backtick-quoted span, e.g. `connote vist score RUN`.
_CODE = re.compile(r"`([^`]+)`")


def _spans(text: str) -> list[tuple[bool, str]]:
    """``(is_code, text)`` pieces of ``text``, whitespace folded; code spans without their backticks."""
    text = " ".join(str(text).split())
    out, at = [], 0
    for m in _CODE.finditer(text):
        out += [(False, text[at:m.start()]), (True, m.group(1))]
        at = m.end()
    return [p for p in [*out, (False, text[at:])] if p[1]]


def md_escape(text: str) -> str:
    """Text that Markdown shows as written: markup characters backslash-escaped, ``<``/``>`` as entities;
    backtick-quoted code stays a code span (only ``|`` escaped in it, so a table cell is not split)."""
    return "".join(f"`{t.replace('|', chr(92) + '|')}`" if code else
                   _MD_SPECIAL.sub(r"\\\1", t).replace("<", "&lt;").replace(">", "&gt;") for code, t in _spans(text))


def markdown_table(table: Table) -> list[str]:
    """A GitHub table: one header row, an alignment row, the rows."""
    numeric = numeric_columns(table)
    lines = ["| " + " | ".join(md_escape(h) for h in table.header) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    for row in table.rows:
        cells = [md_escape(c) for c in row] + [""] * (len(table.header) - len(row))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def to_markdown(sections: Sequence[Section], *, title: str = "connote report", with_figures: bool = True) -> str:
    """The report as Markdown; figures are linked by file name (written beside it by :func:`write_report`)."""
    files = _figure_files(sections)
    out = [f"# {md_escape(title)}", ""]
    for section in sections:
        out += [f"## {md_escape(section.title)}", ""]
        for note in section.notes:
            out += [md_escape(note), ""]
        for table in section.tables:
            out += [f"### {md_escape(table.title)}", "", *markdown_table(table), ""]
            for note in table.notes:
                out += [f"*{md_escape(note)}*", ""]
        if with_figures:
            for figure in section.figures:
                out += [f"![{md_escape(figure.title)}]({files[id(figure)]})", ""]
                if figure.caption:
                    out += [f"*{md_escape(figure.caption)}*", ""]
    return "\n".join(out).rstrip() + "\n"


# --------------------------------------------------------------------------------------------- LaTeX

_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "—": "---", "–": "--", "−": "$-$",
        "κ": r"$\kappa$", "φ": r"$\varphi$", "≤": r"$\le$", "<": r"\textless{}", ">": r"\textgreater{}"}
_TEX_SPECIAL = re.compile("|".join(re.escape(k) for k in _TEX))


def tex_escape(text: str) -> str:
    """Text safe in LaTeX's text mode; backtick-quoted code in ``\\texttt``."""
    return "".join(rf"\texttt{{{_tex(t)}}}" if code else _tex(t) for code, t in _spans(text))


def _tex(text: str) -> str:
    return _TEX_SPECIAL.sub(lambda m: _TEX[m.group(0)], text)


def latex_table(table: Table) -> list[str]:
    """A ``table`` float with a booktabs ``tabular`` (``\\midrule`` after each of ``rules_after``)."""
    numeric = numeric_columns(table)
    spec = "".join("r" if n else "l" for n in numeric)
    lines = [r"\begin{table}[ht]", r"\centering", rf"\caption{{{tex_escape(table.title)}}}",
             rf"\label{{tab:{table.key}}}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
             " & ".join(tex_escape(h) for h in table.header) + r" \\", r"\midrule"]
    for i, row in enumerate(table.rows):
        cells = [tex_escape(c) for c in row] + [""] * (len(table.header) - len(row))
        lines.append(" & ".join(cells) + r" \\")
        if i in table.rules_after and i < len(table.rows) - 1:
            lines.append(r"\midrule")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if table.notes:
        lines.append(r"\par\smallskip\footnotesize " + " ".join(tex_escape(n) for n in table.notes))
    lines.append(r"\end{table}")
    return lines


def to_latex(sections: Sequence[Section], *, with_figures: bool = True) -> str:
    """The report as a LaTeX fragment (``\\input`` it; needs ``\\usepackage{booktabs,graphicx}``)."""
    files = _figure_files(sections)
    out = ["% connote report; needs \\usepackage{booktabs} and \\usepackage{graphicx}", ""]
    for section in sections:
        out += [rf"\section*{{{tex_escape(section.title)}}}", ""]
        for note in section.notes:
            out += [tex_escape(note), ""]
        for table in section.tables:
            out += [*latex_table(table), ""]
        if with_figures:
            for figure in section.figures:
                out += [r"\begin{figure}[ht]", r"\centering",
                        rf"\includegraphics[width=\linewidth]{{{files[id(figure)]}}}",
                        rf"\caption{{{tex_escape(figure.caption or figure.title)}}}",
                        rf"\label{{fig:{figure.key}}}", r"\end{figure}", ""]
    return "\n".join(out).rstrip() + "\n"


# ----------------------------------------------------------------------------------------------- CSV


def to_csv(sections: Sequence[Section]) -> str:
    """Every table in one CSV: a ``table,<key>,<title>`` line, the header row, the rows, an empty line."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for section in sections:
        for table in section.tables:
            writer.writerow(["table", table.key, table.title])
            writer.writerow(table.header)
            writer.writerows(table.rows)
            writer.writerow([])
    return buf.getvalue()


def read_csv_tables(text: str) -> dict[str, tuple[list[str], list[list[str]]]]:
    """The tables of :func:`to_csv`'s output by key: ``(header, rows)``."""
    tables: dict[str, tuple[list[str], list[list[str]]]] = {}
    current: tuple[list[str], list[list[str]]] | None = None
    expect_header = False
    for row in csv.reader(io.StringIO(text)):
        if not row:
            current = None
        elif current is None and row[0] == "table" and len(row) >= 2:
            current = ([], [])
            tables[row[1]] = current
            expect_header = True
        elif current is not None and expect_header:
            current[0].extend(row)
            expect_header = False
        elif current is not None:
            current[1].append(row)
    return tables


# ---------------------------------------------------------------------------------------------- JSON


def to_json(sections: Sequence[Section]) -> str:
    """``{"sections": [...]}`` with every table's cells and machine-readable values."""
    return json.dumps({"sections": [s.to_dict() for s in sections]}, indent=2, default=str) + "\n"


# ---------------------------------------------------------------------------------------------- HTML

_CSS = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --head: #f6f8fa; --accent: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 -apple-system, "Segoe UI", "Helvetica Neue", Arial, sans-serif; color: var(--fg); }
header.top { position: sticky; top: 0; z-index: 10; background: #fff; border-bottom: 1px solid var(--line);
  padding: .6rem 1.5rem; }
header.top h1 { margin: 0; font-size: 1.25rem; }
main { max-width: 1100px; margin: 0 auto; padding: 1rem 1.5rem 3rem; }
nav.toc { background: var(--head); border: 1px solid var(--line); border-radius: 6px; padding: .5rem 1rem;
  margin: 1rem 0; }
nav.toc ol { margin: .3rem 0; padding-left: 1.3rem; }
a { color: var(--accent); text-decoration: none; }
section { margin-top: 2rem; scroll-margin-top: 3.5rem; }
h2 { border-bottom: 1px solid var(--line); padding-bottom: .3rem; font-size: 1.3rem; }
h3 { font-size: 1.05rem; margin: 1.5rem 0 .5rem; }
p.note, figcaption, .table-notes { color: var(--muted); font-size: .9rem; }
/* no overflow container around tables: it would become the sticky header's scroll box */
table { border-collapse: collapse; font-size: .9rem; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--line); padding: .3rem .6rem; white-space: nowrap; text-align: left; }
thead th { position: sticky; top: 2.9rem; background: var(--head); z-index: 1; }
td.num, th.num { text-align: right; }
/* a text cell (a run named by its model path) wraps where the table would run past the page, numbers never */
td:not(.num) { white-space: normal; overflow-wrap: anywhere; }
tr.rule td { border-bottom: 2px solid var(--fg); }
tbody tr:nth-child(even) td { background: #fbfcfd; }
figure { margin: 1.2rem 0; }
code { font: .85em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--head);
  border: 1px solid var(--line); border-radius: 4px; padding: 0 .25em; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
"""


def _slug(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    slug, k = base, 2
    while slug in taken:
        slug, k = f"{base}-{k}", k + 1
    taken.add(slug)
    return slug


def html_text(text: str) -> str:
    """Text escaped for HTML, backtick-quoted code as ``<code>``."""
    return "".join(f"<code>{html.escape(t)}</code>" if code else html.escape(t) for code, t in _spans(text))


def _html_cell(text: str) -> str:
    """A cell's text, escaped; an interval (``value [low, high]``) goes under its value, so a table of
    several metrics with intervals fits the page instead of running past it."""
    return html_text(text).replace(" [", "<br>[")


def html_table(table: Table) -> str:
    """A table with a sticky header row and right-aligned number columns."""
    numeric = numeric_columns(table)
    esc, cell = html.escape, _html_cell
    head = "".join(f'<th{" class=num" if n else ""} scope="col">{cell(h)}</th>' for h, n in zip(table.header, numeric))
    body = []
    for i, row in enumerate(table.rows):
        cells = list(row) + [""] * (len(table.header) - len(row))
        tds = "".join(f'<td{" class=num" if n else ""}>{cell(c)}</td>' for c, n in zip(cells, numeric))
        body.append(f'<tr{" class=rule" if i in table.rules_after else ""}>{tds}</tr>')
    notes = "".join(f'<p class="table-notes">{html_text(n)}</p>' for n in table.notes)
    return (f'<h3 id="{esc(table.key)}">{esc(table.title)}</h3>\n<table>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{notes}")


def to_html(sections: Sequence[Section], *, title: str = "connote report") -> str:
    """One self-contained page: inline CSS, figures as PNG data URIs, a table of contents for several sections."""
    esc = html.escape
    taken: set[str] = set()
    slugs = [_slug(s.title, taken) for s in sections]
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
             f'<header class="top"><h1>{esc(title)}</h1></header><main>']
    if len(sections) > 1:
        items = "".join(f'<li><a href="#{slug}">{esc(s.title)}</a></li>' for s, slug in zip(sections, slugs))
        parts.append(f'<nav class="toc"><strong>Contents</strong><ol>{items}</ol></nav>')
    for section, slug in zip(sections, slugs):
        parts.append(f'<section id="{slug}"><h2>{esc(section.title)}</h2>')
        parts += [f'<p class="note">{html_text(n)}</p>' for n in section.notes]
        parts += [html_table(t) for t in section.tables]
        for figure in section.figures:
            data = base64.b64encode(figure.png).decode("ascii")
            caption = f"<figcaption>{html_text(figure.caption or figure.title)}</figcaption>"
            parts.append(f'<figure id="{esc(figure.key)}"><img alt="{esc(figure.title)}" '
                         f'src="data:image/png;base64,{data}">{caption}</figure>')
        parts.append("</section>")
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


# ------------------------------------------------------------------------------------------ terminal


def _abbreviations(sections: Sequence[Section]) -> dict[str, str]:
    """Run name -> R1, R2, ... in order of appearance over the whole report."""
    names: dict[str, str] = {}
    for section in sections:
        for run in section.runs:
            names.setdefault(run.name, f"R{len(names) + 1}")
    return names


def _natural_width(header: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """Characters a table needs unwrapped (cells, one space of padding each side, a separator between)."""
    widths = [max([len(h), *(len(r[j]) for r in rows if j < len(r))]) for j, h in enumerate(header)]
    return sum(widths) + 3 * len(widths)


def print_terminal(sections: Sequence[Section], console: Any = None) -> None:
    """Rich tables that fit the console: run names in the first column become R1, R2, ... when a table would not
    fit, each explained beneath the first table of its section that uses it (``R1 = NAME (folder)``); columns
    then fold rather than cut, so no cell ends in an ellipsis."""
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    console = console or Console()
    abbreviations = _abbreviations(sections)
    for section in sections:
        console.print(section.title, style="bold", markup=False)
        for note in section.notes:
            console.print(note, style="dim", markup=False)
        # one decision per section, so a run has the same short name in every table of it
        shorten = any(_natural_width(t.header, t.rows) > console.width for t in section.tables)
        explained: set[str] = set()
        for table in section.tables:
            rows = table.rows
            used: dict[str, str] = {}
            if shorten:
                rows = _abbreviate_rows(rows, abbreviations, used)
            numeric = numeric_columns(table)
            # Text objects, not strings: a cell such as "name [copy]" must not be read as console markup
            rich = RichTable(title=Text(table.title), box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False,
                             collapse_padding=True)
            for h, n in zip(table.header, numeric):
                rich.add_column(Text(h), justify="right" if n else "left", overflow="fold")
            for i, row in enumerate(rows):
                rich.add_row(*[Text(str(c)) for c in row], end_section=i in table.rules_after)
            console.print(rich)
            # the short names right under the table that first shows them (a legend at the section's end came
            # some 80 lines after the table of a long report)
            _print_legend(console, section, {n: a for n, a in used.items() if n not in explained})
            explained.update(used)
            for note in table.notes:
                console.print(note, style="dim", markup=False)
            console.print()
        if section.figures:
            console.print(f"{len(section.figures)} figure(s): written with --out (report.html embeds them)",
                          style="dim", markup=False)
        console.print()


def _abbreviate_rows(rows: Sequence[Sequence[str]], abbreviations: dict[str, str],
                     used: dict[str, str]) -> list[list[str]]:
    """``rows`` with each run name in the first column replaced by its short name (recorded in ``used``)."""
    abbreviated = []
    for row in rows:
        row = list(row)
        # a run's own row, or its row in a published table ("run: NAME", report.published)
        name = row[0][len(RUN_ROW):] if row and row[0].startswith(RUN_ROW) else (row[0] if row else "")
        if name in abbreviations:
            used[name] = abbreviations[name]
            row = [row[0][: len(row[0]) - len(name)] + abbreviations[name], *row[1:]]
        abbreviated.append(row)
    return abbreviated


def _print_legend(console: Any, section: Section, used: dict[str, str]) -> None:
    for name, short_name in used.items():
        run = next((r for r in section.runs if r.name == name), None)
        # a long name (a model path) continues on the label's line and folds at the console's width, rather
        # than leaving "R1 =" alone on its line
        legend = f"  {short_name} = {name}" + (f"  ({run.folder})" if run else "")
        width = max(20, console.width)
        lines = [legend[:width]] + ["    " + legend[i:i + width - 4] for i in range(width, len(legend), width - 4)]
        for line in lines:
            console.print(line, markup=False, soft_wrap=True)


# --------------------------------------------------------------------------------------------- files


def write_report(sections: Sequence[Section], out: str | Path, *, title: str = "connote report") -> list[Path]:
    """Write report.md, report.tex, report.csv, report.html, report.json and the figures' PNGs into ``out``."""
    from connote.runs.store import write_bytes, write_text

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("report.md", to_markdown(sections, title=title)), ("report.tex", to_latex(sections)),
                       ("report.csv", to_csv(sections)), ("report.html", to_html(sections, title=title)),
                       ("report.json", to_json(sections))):
        write_text(out / name, text)
        written.append(out / name)
    files = _figure_files(sections)
    for section in sections:
        for figure in section.figures:
            path = out / files[id(figure)]
            write_bytes(path, figure.png)
            written.append(path)
    return written
