"""Count the long pieces of connote's source (issue #37 item 4): command functions over 60 lines and modules
over 600 lines, read with ``ast`` (no import, so it runs without connote's dependencies).

    python benchmarks/code_counts.py [--src src/connote] [--function-lines 60] [--module-lines 600] [--json]

A *command module* is one of the command layer: ``cli/``, ``commands/``, a paper's ``cli/`` package, its
``cli.py`` or a ``cli_*.py``. Every function in it counts, nested ones and methods too (a command's body defined
inside ``register(app)`` is a function of its own). A function's length runs from its ``def`` line to its last
line (decorators left out); a module's is its number of lines. The modules the issue exempts (the METEOR port,
the Shapley estimators) are listed apart, not counted. Prints one line per finding and the totals; exits 0.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "connote"

#: Modules that may be longer (issue #37: "no module over 600 lines outside metrics/meteor/ and explain/shapley.py").
EXEMPT = ("metrics/meteor/", "explain/shapley.py")


def is_command_module(rel: Path) -> bool:
    """Whether ``rel`` (relative to the package root) is a module of the command layer."""
    parts = rel.parts
    return (parts[0] in ("cli", "commands") or "cli" in parts[:-1] or rel.stem == "cli"
            or rel.stem.startswith("cli_"))


def _functions(node: ast.AST, prefix: str = ""):
    """``(qualified name, line, length)`` of every function under ``node``, nested ones and methods included."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + child.name
            yield name, child.lineno, child.end_lineno - child.lineno + 1
            yield from _functions(child, name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, prefix + child.name + ".")
        else:
            yield from _functions(child, prefix)


def counts(src: Path = SRC, function_lines: int = 60, module_lines: int = 600) -> dict:
    """The long command functions, the long modules and the exempt long modules under ``src``."""
    functions, modules, exempt = [], [], []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > module_lines:
            (exempt if rel.as_posix().startswith(EXEMPT) else modules).append({"module": rel.as_posix(),
                                                                                 "lines": lines})
        if is_command_module(rel):
            for name, line, length in _functions(ast.parse(text, filename=str(path))):
                if length > function_lines:
                    functions.append({"function": f"{rel.as_posix()}:{line} {name}", "lines": length})
    return {"command_functions": functions, "modules": modules, "exempt_modules": exempt,
            "limits": {"function_lines": function_lines, "module_lines": module_lines}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=SRC, help="the package folder (default: this checkout's)")
    parser.add_argument("--function-lines", type=int, default=60)
    parser.add_argument("--module-lines", type=int, default=600)
    parser.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    args = parser.parse_args(argv)
    found = counts(args.src, args.function_lines, args.module_lines)
    if args.json:
        print(json.dumps(found, indent=1))
        return 0
    print(f"command functions over {args.function_lines} lines: {len(found['command_functions'])}")
    for f in found["command_functions"]:
        print(f"  {f['lines']:4d}  {f['function']}")
    print(f"modules over {args.module_lines} lines (outside {', '.join(EXEMPT)}): {len(found['modules'])}")
    for m in found["modules"]:
        print(f"  {m['lines']:4d}  {m['module']}")
    print(f"exempt modules over {args.module_lines} lines: {len(found['exempt_modules'])}")
    for m in found["exempt_modules"]:
        print(f"  {m['lines']:4d}  {m['module']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
