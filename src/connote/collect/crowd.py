"""Potato's settings for a crowd platform: who the participant is, how they finish, and that they take it once.

``collect make --platform prolific|mturk`` writes, through Potato's own crowdsourcing providers
(``crowdsourcing.provider``, Potato 2.12):

* **identity from the study link**: ``login.type: url_direct`` with the platform's id parameter
  (``PROLIFIC_PID``; MTurk's ``workerId``); the provider also keeps Prolific's ``STUDY_ID``/``SESSION_ID`` and
  MTurk's ``assignmentId``/``hitId``/``turkSubmitTo``. No login form, no password.
* **completion**: the study's completion code. Prolific: the done page shows it with a *Return to Prolific*
  button to ``https://app.prolific.com/submissions/complete?cc=<code>`` and sends the participant there after
  5 s (``auto_redirect_on_completion``). MTurk: the done page submits the assignment (``assignmentId`` and
  ``completionCode``) to the ``turkSubmitTo`` the HIT gave; a preview (``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE``)
  shows Potato's accept-the-HIT page.
* **no retakes**: the platform id is the annotator, so a participant who comes back (a reload, a second
  click on the link, another HIT of the same study) continues their own state and, once finished, gets the
  done page and the same code again, never a second batch; ``--per-participant N`` caps the batch
  (``max_annotations_per_user``). The navigation bar and jumping to an item are off.
"""

from __future__ import annotations

from typing import Any

from connote.core.errors import InputError

#: platform -> (Potato provider, the id parameter of the study link)
PLATFORMS = {"prolific": ("prolific", "PROLIFIC_PID"), "mturk": ("mturk", "workerId")}
PROLIFIC_COMPLETION_URL = "https://app.prolific.com/submissions/complete?cc={code}"


def study_link(platform: str, base: str = "https://YOUR-SERVER") -> str:
    """The study URL to give the platform, with its placeholders (what a participant's browser then opens)."""
    if platform == "prolific":
        names = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
        return f"{base}/?" + "&".join(f"{n}={{{{%{n}%}}}}" for n in names)
    return f"{base}/?" + "&".join(f"{n}=${{{n}}}" for n in ("workerId", "assignmentId", "hitId", "turkSubmitTo"))


def platform_config(platform: str, code: str, per_participant: int | None = None) -> dict[str, Any]:
    """The Potato config keys that run a study on ``platform`` with completion code ``code``."""
    if platform not in PLATFORMS:
        raise InputError(f"--platform must be one of {', '.join(PLATFORMS)}, got {platform!r}")
    if per_participant is not None and per_participant < 1:
        raise InputError(f"--per-participant must be at least 1, got {per_participant}")
    provider, id_param = PLATFORMS[platform]
    config: dict[str, Any] = {
        "login": {"type": "url_direct", "url_argument": id_param},
        "require_password": False,
        "crowdsourcing": {"provider": provider, provider: {"id_param": id_param, "completion": {"code": code}}},
        "hide_navbar": True,
        "jumping_to_id_disabled": True,
    }
    if platform == "prolific":
        config.update({"auto_redirect_on_completion": True, "auto_redirect_delay": 5000})
    if per_participant:
        config["max_annotations_per_user"] = per_participant
    return config
