"""Every backend option is discoverable (issue 40, item 3): ``connote models NAME`` and docs/models.md list the
options the spec checker accepts, each with a type, a default and one line of help; the page is regenerated
from the registrations and a stale page fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.cli import main
from connote.core.errors import InputError
from connote.models import docs
from connote.models.options import backend_options
from connote.models.registry import MODELS, check_spec

ROOT = Path(__file__).resolve().parents[2]


def test_docs_models_page_is_what_the_registrations_give() -> None:
    assert docs.main([str(ROOT / "docs" / "models.md"), "--check"]) == 0, \
        "docs/models.md is stale: python -m connote.models.docs"


def test_the_check_fails_on_a_stale_page(tmp_path: Path) -> None:
    page = tmp_path / "models.md"
    page.write_text(docs.render().replace("| `memory_budget` |", "| `memory_limit` |", 1), encoding="utf-8")
    assert docs.main([str(page), "--check"]) == 1
    assert docs.main([str(page)]) == 0 and docs.main([str(page), "--check"]) == 0


@pytest.mark.parametrize("name", MODELS.names())
def test_every_option_has_a_type_default_and_help_and_is_what_the_checker_takes(name: str) -> None:
    backend, options, open_kw = backend_options(name)
    assert all(o.help and o.type and o.default for o in options), [o for o in options if not o.help]
    if open_kw:
        return  # further options go to an encoder the checker does not see
    with pytest.raises(InputError) as err:
        check_spec(f"{name}?bogus_option=1")
    valid = str(err.value).split("valid options: ")[1]
    assert sorted(valid.split(", ")) == sorted(o.name for o in options)


def test_models_name_lists_all_of_hf_blip_itm_options(capsys) -> None:
    assert main(["models", "hf-blip-itm"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines()[4:]}
    for option in ("memory_budget", "image_batch_size", "batch_size", "preprocess_workers", "cache_cross_attention",
                   "attention", "revision", "max_length", "device", "dtype"):
        assert option in rows, (option, out)
    assert "integer or auto" in rows["image_batch_size"] and "auto" in rows["memory_budget"]
    assert main(["models", "hf-video-chat", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    frames_as = next(o for o in shown["options"] if o["name"] == "frames_as")
    assert frames_as["default"] == "video"  # the alias's own default


def test_an_unknown_backend_is_one_line_with_close_matches(capsys) -> None:
    assert main(["models", "hf-blip-itmm"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "hf-blip-itm" in err and "did you mean" in err
    assert main(["models", "convert", "--help"]) == 0  # a subcommand is still a subcommand
