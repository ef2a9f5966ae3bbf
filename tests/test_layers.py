"""The package's layers: no module imports a module above its layer, and no import cycles.

Every ``import``/``from ... import`` in ``src/connote`` is read with ``ast`` — top-level and inside
functions alike (a lazy import is still a dependency) — so this test fails on a new upward import or
cycle before anyone has to notice it by hand. ``docs/architecture.md`` draws the same layers.
"""

from __future__ import annotations

import ast
from functools import cache, lru_cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "connote"

#: The paper packages (and the field's probe suites): one layer, and none may import another.
PAPERS = ("cv_probes", "vist", "vmc", "suites")

#: Lowest first. A module may import its own layer's packages and any layer below.
LAYERS: list[set[str]] = [
    {"core", "__init__"},
    {"runs"},
    {"media", "metrics"},
    {"models"},
    {"explain"},
    {"tasks"},
    {"report", "collect", "datasets"},
    {"commands"},
    set(PAPERS),
    {"cli", "__main__"},
]


def _layer(top: str) -> int:
    for i, layer in enumerate(LAYERS):
        if top in layer:
            return i
    raise AssertionError(f"connote.{top} is in no layer: add it to LAYERS here and to docs/architecture.md")


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for all the tests of this file (the tests only read it)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path) -> set[str]:
    tree = _tree(path)
    mod = _module_name(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("connote"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.startswith("connote"):
                subs = {f"{name}.{a.name}" for a in node.names}
                # "from connote.metrics import _arrays" depends on the submodule, not on the package's names
                found.update(subs if all(_exists(sub) for sub in subs) else {name})
    return found


def _exists(module: str) -> bool:
    rel = Path(*module.split(".")[1:])
    return (SRC / rel).with_suffix(".py").is_file() or (SRC / rel / "__init__.py").is_file()


@lru_cache(maxsize=1)
def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps = set()
        for imp in _imports(path):
            # resolve "connote.x.y" (or "connote.x.name" for a name imported from a module) to a module
            parts = imp.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            if parts and ".".join(parts) != name:
                deps.add(".".join(parts))
        graph[name] = deps
    return graph


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``module -> dependency`` for every import above the module's layer; entry points (``__main__``) included."""
    return sorted(f"{mod} -> {dep}" for mod, deps in graph.items() for dep in deps
                  if _layer(_top(dep)) > _layer(_top(mod)))


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = upward_imports(_graph())
    assert not upward, "imports above their layer:\n" + "\n".join(upward)


def test_an_entry_point_is_not_exempt() -> None:
    """``python -m connote.vmc.train`` is VMC's module: it may not call ``connote.cli`` (the layer above)."""
    planted = {"connote.vmc.train.__main__": {"connote.cli", "connote.commands.entry"}}
    assert upward_imports(planted) == ["connote.vmc.train.__main__ -> connote.cli"]


def test_no_paper_package_imports_another() -> None:
    """Each paper is one package: what two papers share lives in a generic layer below them."""
    crossing = sorted(f"{mod} -> {dep}" for mod, deps in _graph().items() for dep in deps
                      if _top(mod) in PAPERS and _top(dep) in PAPERS and _top(dep) != _top(mod))
    assert not crossing, "paper packages importing each other:\n" + "\n".join(crossing)


def _packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The package graph: ``connote.a.b -> connote.c.d`` is the edge ``a -> c`` (a package's own edges dropped)."""
    edges: dict[str, set[str]] = {}
    for mod, deps in graph.items():
        edges.setdefault(_top(mod), set()).update(_top(d) for d in deps if _top(d) != _top(mod))
    return edges


def test_no_package_cycles() -> None:
    """Packages, not only modules, form no cycle (``metrics -> data -> vist -> metrics`` was one)."""
    edges = _packages(_graph())
    cycles = sorted({" -> ".join(c) for c in _cycles(edges)})
    assert not cycles, "package cycles:\n" + "\n".join(cycles)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == 1:
                found.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    graph = _graph()
    # packages import their own modules from __init__; a cycle through a package's __init__ is not one
    edges = {m: {d for d in deps if not (d == m.rsplit(".", 1)[0] and graph.get(d, set()) >= {m})}
             for m, deps in graph.items()}
    cycles = [" -> ".join(c) for c in _cycles(edges)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_layer_test_sees_lazy_imports(tmp_path: Path) -> None:
    """The reader must catch an import inside a function, the usual way a cycle sneaks in."""
    f = SRC / "media" / "photos.py"
    assert "connote.media.images" in _imports(f)


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """Every string literal and imported module name of a module, docstrings left out (comments are not in the ast)."""
    tree = _tree(path)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            docstrings.add(id(node.value))  # an attribute's docstring (a bare string after an assignment)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
    return found


def test_generic_layers_name_no_paper() -> None:
    """Below the papers nothing names one, not even as a lazy ``"module:attr"`` string: each paper declares its
    pieces in its plugin module (``connote/<paper>/plugin.py``), which the generic registries discover."""
    papers = tuple(f"connote.{p}" for p in PAPERS)
    below = {top for layer in LAYERS[:LAYERS.index(set(PAPERS))] for top in layer}
    naming = []
    for path in sorted(SRC.rglob("*.py")):
        if _top(_module_name(path)) not in below:
            continue
        for line, text in _code_strings(path):
            hit = next((p for p in papers if p in text), None)
            if hit:
                naming.append(f"{path.relative_to(SRC.parent)}:{line}: {hit} in {text[:60]!r}")
    assert not naming, "generic modules naming a paper:\n" + "\n".join(naming)


def test_every_paper_package_has_a_light_plugin_module() -> None:
    """Each paper's plugin is found by the built-in scan and imports nothing (declarations only)."""
    from connote.core.plugins import builtin_modules

    assert builtin_modules() == [f"connote.{p}.plugin" for p in sorted(PAPERS)]
    for paper in PAPERS:
        tree = ast.parse((SRC / paper / "plugin.py").read_text(encoding="utf-8"))
        imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not imports, f"connote/{paper}/plugin.py imports {ast.dump(imports[0])}"


#: The plugin tables whose names are a paper's own: its tasks, report run kinds and judge rubrics.
NAMED = ("TASKS", "RUN_KINDS", "RUBRICS")
#: Literals below the papers that equal a paper's name as an ordinary word, each with what it is.
ORDINARY_WORDS = {
    ("explain/mmshap.py", "share"): "the header of Table 6's column of the verb's share",
    ("metrics/wordnet.py", "share"): "the folder <prefix>/share/nltk_data where nltk's data is installed",
}


def paper_names() -> dict[str, str]:
    """Every task, run kind and rubric name the built-in papers register -> the plugin table declaring it (read
    from the plugin modules, which import nothing)."""
    import importlib

    names = {}
    for paper in PAPERS:
        mod = importlib.import_module(f"connote.{paper}.plugin")
        for attr in NAMED:
            names.update({name: f"connote.{paper}.plugin {attr}" for name in getattr(mod, attr, None) or {}})
    return names


def paper_literals(path: Path, names: dict[str, str], shown: str) -> list[str]:
    """``FILE:LINE: 'name' (declared by)`` for every string literal of ``path`` that is one of ``names``
    (docstrings and comments aside; an ordinary word of :data:`ORDINARY_WORDS` allowed)."""
    return [f"{shown}:{line}: {text!r} ({names[text]})" for line, text in _code_strings(path)
            if text in names and (shown, text) not in ORDINARY_WORDS]


def test_below_the_papers_no_literal_is_a_papers_task_run_kind_or_rubric_name() -> None:
    """What a paper registers is the paper's: below the paper layer no module branches on a task's, run kind's or
    rubric's name (``if table.kind == "vist-storytelling"``); it asks the registered object instead."""
    names = paper_names()
    assert {"cv-probes", "vist-storytelling", "vmc-captioning", "share", "vmc-a7"} <= set(names)
    below = {top for layer in LAYERS[:LAYERS.index(set(PAPERS))] for top in layer}
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if _top(_module_name(path)) in below:
            found += paper_literals(path, names, path.relative_to(SRC).as_posix())
    assert not found, "paper names below the papers:\n" + "\n".join(found)
    for (shown, word), why in ORDINARY_WORDS.items():  # an allowance whose literal is gone goes too
        assert word in {text for _, text in _code_strings(SRC / shown)}, f"{shown}: no {word!r} ({why}) any more"


@pytest.mark.parametrize("code,found", [
    ('def measured(table):\n    if table.kind == "vist-storytelling":\n        return 1\n', [2]),
    ('RUBRICS = {"vmc-a7": None}\n', [1]),
    ('def f():\n    """Reads vist-storytelling runs."""\n    return "vist-storytelling runs"\n', []),
    ('"""vist-storytelling"""\nx = 1\n', []),
    ('x = "share"\n', [1]),
])
def test_the_paper_name_scanner_finds_a_planted_literal(tmp_path: Path, code: str, found: list[int]) -> None:
    path = tmp_path / "planted.py"
    path.write_text(code, encoding="utf-8")
    _tree.cache_clear()
    hits = paper_literals(path, paper_names(), "report/planted.py")
    assert [int(h.split(":")[1]) for h in hits] == found, hits
