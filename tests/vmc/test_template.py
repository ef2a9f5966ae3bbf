"""Hand-written cases for the VMC caption template parser."""

from __future__ import annotations

import pytest

from connote.vmc.template import Parsed, follows_template, parse_metaphor

CASES = [
    ("the burger is as comforting as a relationship",
     ("the burger", "comforting", "a relationship", False, "is")),
    ("The shoes are as light as feathers.", ("The shoes", "light", "feathers", False, "are")),
    ("The car was as fast as a cheetah!", ("The car", "fast", "a cheetah", False, "was")),
    ("The kids were as happy as clams", ("The kids", "happy", "clams", False, "were")),
    ("The drink is as charged up as a battery", ("The drink", "charged up", "a battery", False, "is")),
    ("The cereal is as power - packed as a superhero .",
     ("The cereal", "power - packed", "a superhero", False, "is")),
    ("The snack is as power-packed as a rocket", ("The snack", "power-packed", "a rocket", False, "is")),
    ("The pizza is as tasty and fun as a carnival ride.",
     ("The pizza", "tasty and fun", "a carnival ride", False, "is")),
    ("The phone is not as heavy as a brick", ("The phone", "heavy", "a brick", True, "is")),
    ("The laptop isn't as slow as a snail", ("The laptop", "slow", "a snail", True, "is")),
    ("The shoes weren't as stiff as boards", ("The shoes", "stiff", "boards", True, "were")),
    ("The car's as fast as lightning", ("The car", "fast", "lightning", False, "'s")),
    ("  \"The  coffee IS As  strong as an ox\"  ", ("The coffee", "strong", "an ox", False, "is")),
    ("The cat's toy is as soft as cotton", ("The cat's toy", "soft", "cotton", False, "is")),
    ("Love is as sweet as honey as it lasts.", ("Love", "sweet", "honey as it lasts", False, "is")),
    ("The bank loan is as easy as a walk in the park...",
     ("The bank loan", "easy", "a walk in the park", False, "is")),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_parses(text: str, expected: tuple) -> None:
    got = parse_metaphor(text)
    assert got == Parsed(*expected)
    assert follows_template(text)


@pytest.mark.parametrize("text", [
    "", None, "a dog running in a park", "The burger is comforting", "is as fast as a cheetah",
    "The car is as fast as", "The car is as as a cheetah", "The car is fast as a cheetah",
    "as fast as a cheetah", "The car goes as fast as a cheetah",
])
def test_rejects(text: str | None) -> None:
    assert parse_metaphor(text) is None
    assert not follows_template(text)


def test_to_dict_is_json_ready() -> None:
    d = parse_metaphor("The tea is as calming as rain.").to_dict()
    assert d == {"primary": "The tea", "property": "calming", "secondary": "rain",
                 "negated": False, "copula": "is"}


def test_cli_parse_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from connote.cli import main

    assert main(["metaphor", "parse", "the burger is as comforting as a relationship",
                 "a dog in a park", "The tea is not as hot as lava.", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0] == {"primary": "the burger", "property": "comforting", "secondary": "a relationship",
                        "negated": False, "copula": "is"}
    assert lines[1] is None
    assert lines[2]["negated"] is True and lines[2]["secondary"] == "lava"


def test_cli_parse_reads_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from connote.cli import main

    monkeypatch.setattr("sys.stdin", io.StringIO("The car is as fast as a cheetah\nnot a metaphor\n"))
    assert main(["metaphor", "parse"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["The car\tfast\ta cheetah", "(not in the template)\tnot a metaphor"]
