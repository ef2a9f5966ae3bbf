"""The one progress display (issue 40): in a log (stderr not a terminal) plain lines with done/total, rate,
elapsed and time left, every CONNOTE_PROGRESS_INTERVAL seconds (also during one long step) and per stored chunk;
nothing from a rank other than 0; a redrawn bar only on a terminal."""

from __future__ import annotations

import io
import re
import time

import pytest

from connote.core.progress import INTERVAL_ENV, clock, log_interval, progress_bar, progress_line

LINE = re.compile(r"^pairs: (\d+)/(\d+) \((\d+)%\), .*elapsed \d+:\d\d, (about \d+:\d\d left|time left not known yet)")


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln]


def test_a_line_gives_done_total_rate_elapsed_and_time_left() -> None:
    assert progress_line("pairs", 3, 8, 6.0) == "pairs: 3/8 (38%), 2 s each, elapsed 0:06, about 0:10 left"
    assert progress_line("pairs", 30, 40, 10.0) == "pairs: 30/40 (75%), 3/s, elapsed 0:10, about 0:03 left"
    assert progress_line("pairs", 0, 8, 12.0) == "pairs: 0/8 (0%), elapsed 0:12, time left not known yet"
    assert clock(3725) == "1:02:05" and clock(59.6) == "1:00"


def test_a_log_shows_timed_lines_while_one_long_step_runs(monkeypatch, capsys) -> None:
    monkeypatch.setenv(INTERVAL_ENV, "0.05")
    with progress_bar(2, "pairs") as bar:
        time.sleep(0.6)  # one long step (an explain pair takes minutes): the log must not stay silent
        bar.advance(1)
        time.sleep(0.3)
        bar.advance(1)
    lines = _lines(capsys.readouterr().err)
    waiting = [ln for ln in lines if ln.startswith("pairs: 0/2 (0%)")]
    assert waiting and all(LINE.match(ln) for ln in waiting), lines
    assert lines.index(waiting[0]) < next(i for i, ln in enumerate(lines) if ln.startswith("pairs: 1/2"))
    assert any(LINE.match(ln) and "about" in ln for ln in lines if ln.startswith("pairs: 1/2")), lines
    assert lines[-1].startswith("pairs: done 2/2 in 0:0")


def test_each_stored_chunk_gets_its_line(monkeypatch, capsys) -> None:
    monkeypatch.setenv(INTERVAL_ENV, "0")  # 0: every step; the default's floor is one stored line a second
    with progress_bar(6, "pairs") as bar:
        for _ in range(3):
            time.sleep(0.01)
            bar.advance(2, stored=True)
    lines = _lines(capsys.readouterr().err)
    assert [ln.split(" (")[0] for ln in lines[:3]] == ["pairs: 2/6", "pairs: 4/6", "pairs: 6/6"]
    assert all(LINE.match(ln) and ln.endswith("chunk stored") for ln in lines[:3]), lines
    assert len(lines) == 4 and lines[3].startswith("pairs: done 6/6")


def test_the_default_interval_keeps_a_fast_loop_to_its_closing_line(monkeypatch, capsys) -> None:
    monkeypatch.delenv(INTERVAL_ENV, raising=False)
    assert log_interval() == 10.0
    with progress_bar(100, "texts") as bar:
        for _ in range(100):
            bar.advance(1)
    lines = _lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith("texts: done 100/100 in 0:00"), lines


@pytest.mark.parametrize("raw", ["soon", "-1", "nan"])
def test_a_bad_interval_is_named_once_and_the_default_used(raw, monkeypatch, capsys) -> None:
    monkeypatch.setenv(INTERVAL_ENV, raw)
    assert log_interval() == 10.0
    assert capsys.readouterr().err == (f"warning: {INTERVAL_ENV}={raw!r} is not a number of seconds >= 0; "
                                       "using 10\n")


def test_a_loop_that_raises_says_where_it_stopped(monkeypatch, capsys) -> None:
    monkeypatch.setenv(INTERVAL_ENV, "10")
    with pytest.raises(KeyboardInterrupt), progress_bar(5, "pairs") as bar:
        bar.advance(2)
        raise KeyboardInterrupt
    assert _lines(capsys.readouterr().err)[-1].startswith("pairs: stopped at 2/5 in ")


@pytest.mark.parametrize("case", ["rank 1", "nothing to do", "disabled"])
def test_nothing_shows_off_rank_0_for_nothing_or_when_disabled(case, monkeypatch, capsys) -> None:
    monkeypatch.setenv(INTERVAL_ENV, "0")
    monkeypatch.setenv("RANK", "1" if case == "rank 1" else "0")
    total = 0 if case == "nothing to do" else 3  # no 0/0 bar (vist correlate showed one)
    with progress_bar(total, "pairs", enabled=case != "disabled") as bar:
        bar.advance(3, stored=True)
    assert capsys.readouterr().err == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_the_redrawn_bar_not_log_lines(monkeypatch) -> None:
    monkeypatch.setenv(INTERVAL_ENV, "0")
    for name in ("TERM", "NO_COLOR", "TTY_COMPATIBLE", "FORCE_TERMINAL"):
        monkeypatch.delenv(name, raising=False)
    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    with progress_bar(4, "pairs") as bar:
        bar.advance(4, stored=True)
    shown = term.getvalue()
    assert "4/4" in shown and "\x1b[" in shown  # rich's bar, drawn with terminal control codes
    assert "chunk stored" not in shown and "done 4/4" not in shown
