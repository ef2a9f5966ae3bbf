"""``--config FILE.yaml`` for every run command: option values from a file, the command line on top.

One mechanism for all commands: :func:`config_option` makes an eager ``--config`` option whose callback
reads the YAML mapping and installs it as click's ``default_map`` of the command, so that every value
given on the command line wins over the file and the file wins over the built-in defaults.

Keys are the names shown by ``--help``: an option's long name without the leading dashes (``batch-size``,
``out``, ``json``; for an on/off pair the positive name, ``progress``), or an argument's name as shown
in the usage line (``sequences``); dashes and underscores are interchangeable (``batch_size``). A ``null``
value means "the built-in default". An option that takes a comma-separated list on the command line and that the
command's ``--config`` names in ``lists`` (``connote score --metrics bleu,cider``) takes a YAML list too
(``metrics: [bleu, cider]``): each entry must be one name (of those :class:`CommaList` knows), else the command
stops with exit status 2 naming the file, the key and the entry. An unknown key stops the command with exit
status 2, naming the file, the key and the valid keys; so does YAML that does not parse (with its line) or that is
not a mapping.

Commands with a run folder (``run_folder="out"``) write the **resolved config** into it as
``config.yaml`` when the command ends without an error: every value the command ran with, after the
file and the command line, in the same key spelling, so ``--config RUN/config.yaml`` runs it again with
the same settings (and so the same run fingerprint).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import typer

from connote.core.errors import InputError

RESOLVED_CONFIG = "config.yaml"
_HELP = ("YAML file of option values (keys: this help's option names without '--', argument names); the "
         "command line overrides it.")
#: Added to the help of a command with a run folder (only there is a config.yaml written).
_HELP_RUN_FOLDER = " The run folder gets the resolved config.yaml."


class CommaList:
    """What a config file may give for an option that takes a comma-separated list of ``what`` (names from
    ``names``, when given): the command line's text, or a YAML list whose entries :meth:`joined` checks."""

    def __init__(self, what: str, names: Callable[[], Iterable[str]] | None = None) -> None:
        self.what, self.names = what, names

    def joined(self, entries: list[Any] | tuple[Any, ...], *, key: str, path: Path) -> str:
        """The entries of a config file's list as the command line's text (``a,b``)."""
        valid = None if self.names is None else list(self.names())
        for k, entry in enumerate(entries, start=1):
            where = f"key {key!r}, entry {k} ({entry!r})"
            if not isinstance(entry, str) or not entry.strip() or "," in entry:
                raise InputError(f"{where}: expected one {self.what} name", path=path)
            if valid is not None and entry.strip() not in valid:
                raise InputError(f"{where}: not a {self.what}; valid {self.what}s: {', '.join(valid)}", path=path)
        if not entries:
            raise InputError(f"key {key!r}: an empty list names no {self.what}", path=path)
        return ",".join(e.strip() for e in entries)


def config_option(run_folder: str | None = None, lists: dict[str, CommaList] | None = None) -> Any:
    """The ``--config`` option of a run command: ``config: Annotated[Path | None, config_option()] = None``.

    ``run_folder``: the parameter holding the command's run folder, where ``config.yaml`` (the resolved
    config) is written after a successful run; ``None`` for commands without a run folder. ``lists``: parameter
    name -> :class:`CommaList`, the comma-separated options a file may give as a YAML list.
    """
    def callback(ctx: Any, param: Any, value: Path | None) -> Path | None:
        keys = _keys(ctx.command)
        if value is not None:
            values = read_config(Path(value), keys, lists)
            ctx.default_map = {**(ctx.default_map or {}), **values}
        if run_folder is not None:
            ctx.with_resource(_ResolvedConfigWriter(ctx, run_folder, param.name or "config"))
        return value

    return typer.Option("--config", help=_HELP + (_HELP_RUN_FOLDER if run_folder else ""), is_eager=True,
                        callback=callback, metavar="FILE.yaml", show_default=False)


def _key_names(param: Any) -> list[str]:
    """The names a config file may use for ``param``, the first one canonical."""
    if param.param_type_name == "option":
        longs = [o[2:] for o in param.opts if o.startswith("--")]
        names = longs or [param.name or ""]
    else:
        names = [param.name or ""]  # an argument: its name in the usage line, lower case
    if param.name and param.name not in names:
        names.append(param.name)  # the Python parameter name is accepted too
    return names


def _normalise(key: str) -> str:
    return key.strip().lstrip("-").replace("_", "-").lower()


def _keys(command: Any) -> dict[str, Any]:
    """Normalised key -> parameter, for every parameter of ``command`` except ``--config``."""
    keys: dict[str, Any] = {}
    for param in command.params:
        if param.name == "config":
            continue
        for name in _key_names(param):
            keys.setdefault(_normalise(name), param)
    return keys


def read_config(path: Path, keys: dict[str, Any], lists: dict[str, CommaList] | None = None) -> dict[str, Any]:
    """Read ``path`` (a YAML mapping) into ``{parameter name: value}``; bad files and keys raise InputError.
    ``lists``: the comma-separated options (by parameter name) whose value may be a YAML list."""
    from connote.core.jsonio import read_yaml

    data, _ = read_yaml(path, what="config file")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(f"expected a mapping of option names to values, got a {type(data).__name__}", path=path)
    valid = sorted({_key_names(p)[0] for p in keys.values()})
    values: dict[str, Any] = {}
    for key, value in data.items():
        param = keys.get(_normalise(str(key)))
        if param is None:
            from connote.commands.vocabulary import config_alias

            old = config_alias(_normalise(str(key)), keys, value)  # a key in an old spelling (--quiet)
            if old is not None:
                param, value = old
        if param is None:
            raise InputError(f"unknown key {key!r}; valid keys: {', '.join(valid)}", path=path)
        if value is None:  # null: the built-in default
            continue
        if isinstance(value, dict):
            raise InputError(f"key {key!r}: expected a value or a list, got a mapping", path=path)
        if getattr(param, "multiple", False) or param.nargs != 1:
            value = list(value) if isinstance(value, (list, tuple)) else [value]
        elif param.name in (lists or {}) and isinstance(value, (list, tuple)):
            value = (lists or {})[param.name].joined(value, key=str(key), path=path)
        elif isinstance(value, (list, tuple)):  # the file's error, not a usage error of a command line
            raise InputError(f"key {key!r}: expected one value, got a list of {len(value)}", path=path)
        values[param.name or str(key)] = value
    return values


def _plain(value: Any) -> Any:
    """A YAML-safe copy of an option value (paths as strings, enums by value)."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def resolved_config(ctx: Any, skip: str = "config") -> dict[str, Any]:
    """Every parameter value ``ctx``'s command ran with, keyed by its canonical config key."""
    out: dict[str, Any] = {}
    for param in ctx.command.params:
        if param.name in (skip, "help") or param.name not in ctx.params:
            continue
        out[_key_names(param)[0]] = _plain(ctx.params[param.name])
    return out


class _ResolvedConfigWriter:
    """Context resource: when the command ends without an error, write ``config.yaml`` into its run folder."""

    def __init__(self, ctx: Any, run_folder: str, skip: str) -> None:
        self.ctx, self.run_folder, self.skip = ctx, run_folder, skip

    def __enter__(self) -> _ResolvedConfigWriter:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        # typer.Exit / click's Exit with status 0 or 1 ends a run that did its work (1: some items failed)
        if exc is not None and not (type(exc).__name__ == "Exit" and getattr(exc, "exit_code", None) in (0, 1)):
            return  # bad input or a crash: the folder keeps the config of its last run
        folder = self.ctx.params.get(self.run_folder)
        if folder is None or not Path(folder).is_dir():
            return
        write_resolved_config(Path(folder), resolved_config(self.ctx, self.skip))


def write_resolved_config(folder: Path, values: dict[str, Any]) -> Path:
    """Write ``values`` as ``folder/config.yaml`` (atomically); returns the path."""
    import yaml

    from connote.runs.store import write_text

    path = folder / RESOLVED_CONFIG
    header = ("# The options this run used (connote's resolved config); rerun with\n"
              f"#   --config {path}\n")
    write_text(path, header + yaml.safe_dump(values, sort_keys=False, allow_unicode=True))
    return path
