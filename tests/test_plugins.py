"""Plugin discovery (``connote.core.plugins``): entry points first, the built-in scan as fallback, errors named."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from connote.core import plugins
from connote.core.errors import InputError


def _install(root: Path, dist: str, module: str, body: str) -> None:
    """A distribution on sys.path whose entry point names ``module`` (what ``pip install`` leaves behind)."""
    (root / f"{module}.py").write_text(body, encoding="utf-8")
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[connote.plugins]\n{dist} = {module}\n")


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.reset()
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("demo_plugin")]:
        del sys.modules[name]
    monkeypatch.undo()
    plugins.reset()


def test_built_ins_first_then_entry_points(site) -> None:
    _install(site, "demo-plugin", "demo_plugin_a", 'STUDIES = {"demo-study": "demo_plugin_a"}\n')
    names = plugins.plugin_modules()
    assert names[:4] == ["connote.cv_probes.plugin", "connote.suites.plugin", "connote.vist.plugin",
                         "connote.vmc.plugin"]
    assert names[4:] == ["demo_plugin_a"]
    from connote.collect import STUDIES

    assert list(STUDIES)[-1] == "demo-study" and STUDIES["probes-votes"] == "connote.cv_probes.studies.votes"


def test_two_plugins_declaring_one_name_is_an_error_naming_both(site) -> None:
    _install(site, "demo-plugin", "demo_plugin_b", 'TASKS = {"cv-probes": ("demo_plugin_b:Task", "mine")}\n'
                                                   'RUN_KINDS = {"vmc-captioning": "demo_plugin_b:KIND"}\n')
    from connote.report.document import RUN_KINDS

    with pytest.raises(plugins.PluginError, match="run kind 'vmc-captioning' is declared by both "
                                                  "connote.vmc.plugin and demo_plugin_b"):
        list(RUN_KINDS)
    from connote.tasks import TASKS

    with pytest.raises(plugins.PluginError, match="connote plugin demo_plugin_b: task 'cv-probes' is already "
                                                  "registered"):
        TASKS.names()


def test_a_plugin_that_cannot_be_imported_is_named(site, capsys) -> None:
    _install(site, "demo-plugin", "demo_plugin_c", "import no_such_module_anywhere\n")
    from connote.cli import main
    from connote.models.registry import MODELS

    with pytest.raises(plugins.PluginError, match="connote plugin demo_plugin_c cannot be imported"):
        MODELS.names()
    assert main(["models"]) == 2  # on the command line: one line, exit 2, no traceback
    assert "connote plugin demo_plugin_c cannot be imported: No module named 'no_such_module_anywhere'" \
        in capsys.readouterr().err


def test_a_model_plugin_with_an_unknown_capability_is_named(site) -> None:
    _install(site, "demo-plugin", "demo_plugin_d",
             'MODELS = {"demo-model": {"target": "demo_plugin_d:X", "capabilities": ["fly"]}}\n')
    from connote.models.registry import MODELS

    with pytest.raises(plugins.PluginError, match=r"demo_plugin_d: model 'demo-model': unknown capabilities \['fly'\]"):
        MODELS.names()
    assert not issubclass(plugins.PluginError, InputError) and plugins.PluginError.exit_code == 2


CLI_MODULE = '''
import typer


def hello(name: str = typer.Option("world", "--name")) -> None:
    """Greet from a plugin."""
    print(f"hello, {name}")


def register(app):
    group = typer.Typer(help="A plugin's own group.", no_args_is_help=True)
    group.command("greet")(hello)
    app.add_typer(group, name="demo-hello")
'''


def test_a_plugin_adds_a_command_group(site, capsys) -> None:
    """``COMMANDS`` in a plugin module (an installed dist-info's entry point) adds a group to ``connote``: listed by
    ``connote --help`` from the table, its module built only when the group is used."""
    from connote.cli import main

    (site / "demo_plugin_cli.py").write_text(CLI_MODULE, encoding="utf-8")
    _install(site, "demo-plugin", "demo_plugin_cmd",
             'COMMANDS = {"demo-hello": ("demo_plugin_cli", "A plugin\'s own group.")}\n')
    assert main(["--help"]) == 0
    assert "demo-hello" in capsys.readouterr().out and "demo_plugin_cli" not in sys.modules
    assert main(["demo-hello", "greet", "--name", "connote"]) == 0
    assert capsys.readouterr().out == "hello, connote\n"


def test_a_plugin_command_cannot_take_a_connote_name(site, capsys) -> None:
    from connote.cli import main

    _install(site, "demo-plugin", "demo_plugin_clash", 'COMMANDS = {"run": ("demo_plugin_clash", "Mine.")}\n')
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err
    assert "demo_plugin_clash: command 'run' is already a connote command" in err


def test_a_plugin_adds_a_judge_rubric_beside_the_papers(site) -> None:
    """Rubrics are the papers' (VIST's and VMC's plugin modules) and any plugin's: the judge names none itself."""
    _install(site, "demo-plugin", "demo_plugin_r",
             "from connote.tasks.judge import Rubric, parse_rating\n"
             "RUBRICS = {'demo-fun': ('demo_plugin_r:FUN', 'Is the story fun? (1-3)')}\n"
             "FUN = Rubric('demo-fun', 1, 'story', 'Story: {text}\\nFun, 1-3?', "
             "lambda a: {'fun': float(parse_rating(a, 1, 3))})\n")
    from connote.tasks.judge import RUBRICS, rubrics_from

    assert RUBRICS.names() == ["demo-fun", "pairwise", "share", "vmc-a7"]
    assert [r.name for r in rubrics_from("share,demo-fun", ("story",))] == ["share", "demo-fun"]
    assert rubrics_from("demo-fun", ("story",))[0].parse("2") == {"fun": 2.0}
    with pytest.raises(InputError, match="unknown rubric vmc-a7; valid here: demo-fun, share"):
        rubrics_from("vmc-a7", ("story",))


def test_a_plugin_adds_a_kind_of_human_judgements_and_the_catch_all_stays_last(site) -> None:
    """``ratings_kind`` asks the papers' formats (VIST's preferences and ratings, VMC's labels), then any plugin's;
    the plain CSV of ratings, a catch-all, is tried last whoever declares it first."""
    _install(site, "demo-plugin", "demo_plugin_h",
             "from connote.metrics.correlation import RatingsFormat\n"
             "RATINGS = {'demo-votes': 'demo_plugin_h:VOTES'}\n"
             "VOTES = RatingsFormat('a CSV of item, vote', lambda path, header: 'vote' in (header or ()))\n")
    from connote.metrics.correlation import RATINGS, ratings_kind

    assert list(RATINGS) == ["pairwise", "vist", "vmc-labels", "demo-votes"]
    (site / "votes.csv").write_text("item,vote\ns1,1\n")
    (site / "ratings.csv").write_text("story_id,rating,rater\ns1,4,w1\n")
    (site / "prefs.csv").write_text("story_a,story_b,preferred\ns1,s2,a\n")
    (site / "empty").mkdir()
    assert [ratings_kind(site / f) for f in ("votes.csv", "ratings.csv", "prefs.csv")] == \
        ["demo-votes", "vist", "pairwise"]
    with pytest.raises(InputError, match=r"a folder of human judgements that no format recognises; expected one of: "
                                         r"pairwise \(.*\); vist \(.*\); vmc-labels \(labels.csv of the VMC"):
        ratings_kind(site / "empty")


def test_a_plugin_adds_a_metric_listed_without_importing_it_and_offered_by_connote_score(site, capsys) -> None:
    """The papers' metrics (VMC's ACS/ACD) and any plugin's come from ``METRICS`` tables: listed without importing
    their modules, computed by ``compute_scores`` and offered by ``connote score`` with their option flags."""
    import json

    (site / "demo_plugin_m_metric.py").write_text(
        "from dataclasses import dataclass\n"
        "from connote.metrics.options import opt\n"
        "from connote.metrics.registry import MetricOutput\n\n"
        "@dataclass(frozen=True)\nclass LenOptions:\n    len_scale: float = opt(1.0, 'a factor', ge=0)\n\n"
        "def compute(inp, options):\n"
        "    per = {i: {'LEN': options.len_scale * len(h.split())} for i, h in zip(inp.ids, inp.hyps)}\n"
        "    return MetricOutput({'LEN': sum(v['LEN'] for v in per.values()) / len(per)}, per, 'len', [])\n")
    _install(site, "demo-plugin", "demo_plugin_m",
             "METRICS = {'demo_len': {'compute': 'demo_plugin_m_metric:compute',\n"
             "                        'options': 'demo_plugin_m_metric:LenOptions', 'help': 'Words per text.'}}\n"
             "SCORE_NAMES = {'LEN': {'display': 'Length', 'metric': 'demo_len', 'scale': 'words'}}\n")
    from connote.metrics import compute_scores
    from connote.metrics.registry import METRICS, display_name, display_names

    assert {"acs_acd", "demo_len"} <= set(METRICS.names()) and METRICS.describe("demo_len") == "Words per text."
    assert "demo_plugin_m_metric" not in sys.modules  # listed, not imported
    assert display_name("len") == "Length" and display_names(["demo_len", "acs_acd"]) == ("ACS", "ACD", "Length")
    out = compute_scores({"1": "a b c"}, {"1": ["a b"]}, ["demo_len"], len_scale=2)
    assert out.scores == {"LEN": 6.0}
    hyp, ref = site / "h.json", site / "r.json"
    hyp.write_text(json.dumps({"1": "a b c"})), ref.write_text(json.dumps({"1": ["a b"]}))
    from connote.cli import main

    assert main(["score", "--metrics", "demo_len", "--len-scale", "3", "--hyp", str(hyp), "--ref", str(ref),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scores"]["LEN"] == 9.0
