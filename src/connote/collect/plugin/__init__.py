"""connote's Potato plugin ``connote-collect``: the VIST storyboard that Potato's schemes cannot express.

Registered through the ``potato.plugins`` entry point (``connote-collect = connote.collect.plugin:register``)
and turned on by a study's ``plugins: [connote-collect]``. It adds one annotation type:

``connote_story`` (options ``mode``: ``choose`` | ``pick`` | ``fixed``, ``photos``, ``max_photos``,
``min_words``, ``min_words_each``, ``min_distinct``, ``allow_skip``, ``skip_label``, ``help``, ``done``)
    *choose* (storytelling, paper Figure 3): the album is shown in time order; clicking a photo puts a
    story card on the storyboard, cards can be moved left/right or removed, and each card takes one
    sentence; at least ``photos`` cards (the paper's "at least five"), at most ``max_photos``.
    *pick* (re-telling): the album is shown, and under it the photo sequences the first stage made from
    it (the item's ``sequences``); the worker chooses one, which becomes the storyboard. *fixed* (DIS):
    the storyboard is given (the item's ``photos``); one sentence per card.
    The page refuses to go on until the story is complete and varied: a sentence on every card (each of
    at least ``min_words_each`` words), at least ``min_words`` words in all, no two sentences the same
    and at least ``min_distinct`` different words, unless the worker ticks the skip box (``allow_skip``).

The answers are ordinary Potato text answers of the scheme: ``order`` (photo ids joined by commas, or
``skip``), ``choice`` (*pick*: which of the item's sequences, 1-based) and ``sentence_1`` ..
``sentence_N`` (the sentence on card k, in story order). The photos come from the item's ``photos``
field (``[{"id", "url"}]``) and ``sequences`` (``[[photo id, ...], ...]``), read by the page script from
``/api/current_instance``, so no server code is added: the scheme's HTML holds the inputs Potato saves
and the script (``static/connote-story.js``) drives them.

Every page of a study that lists the plugin also gets ``static/connote-checks.js``: Potato's text scheme
shows a counter for ``min_chars`` but lets Next through, so the script holds the page until each visible
text box of such a scheme has at least that many characters (empty and too-short answers are refused).
"""

from __future__ import annotations

import html
from typing import Any

SCHEMA_TYPE = "connote_story"


def generate_story_layout(scheme: dict[str, Any]) -> tuple[str, list]:
    """The scheme's HTML: an empty album and storyboard the script fills, and the inputs Potato saves."""
    name = html.escape(str(scheme["name"]))
    mode = scheme.get("mode") if scheme.get("mode") in ("fixed", "pick") else "choose"
    photos = int(scheme.get("photos", 5))
    max_photos = max(photos, int(scheme.get("max_photos", photos)))
    allow_skip = bool(scheme.get("allow_skip", mode == "choose"))
    numbers = {"photos": photos, "max-photos": max_photos, "min-words": int(scheme.get("min_words", 15)),
               "min-words-each": int(scheme.get("min_words_each", 1)),
               "min-distinct": int(scheme.get("min_distinct", 0))}
    data = " ".join(f'data-{key}="{value}"' for key, value in numbers.items())
    hidden = [("order", "validation=\"required\" ")] + ([("choice", "")] if mode == "pick" else [])
    inputs = [f'<input type="text" class="{name} annotation-input connote-story-{label}" id="{name}_{label}_text" '
              f'name="{name}:::{label}" schema="{name}" label_name="{label}" {extra}'
              f'aria-hidden="true" tabindex="-1" style="display:none">' for label, extra in hidden]
    for k in range(1, max_photos + 1):
        inputs.append(f'<textarea class="{name} annotation-input connote-story-sentence" rows="3" '
                      f'id="{name}_sentence_{k}_text" name="{name}:::sentence_{k}" schema="{name}" '
                      f'label_name="sentence_{k}" data-card="{k}" placeholder="One sentence for this photo" '
                      f'aria-label="Sentence for card {k}"></textarea>')
    skip_label = html.escape(str(scheme.get("skip_label") or "This album is not storyable (for example, a "
                                                                "collection of coins): skip it"))
    skip = (f'<label class="connote-story-skip"><input type="checkbox" class="connote-story-skip-box"> '
            f'{skip_label}</label>') if allow_skip else ""
    body = f"""
<form id="{name}" class="annotation-form connote-story" action="javascript:void(0)" data-annotation-type="text"
      data-schema-name="{name}" data-mode="{mode}" {data} data-help="{html.escape(str(scheme.get("help", "")))}"
      data-done="{html.escape(str(scheme.get("done", "Story complete")))}">
  <fieldset schema_name="{name}">
    <legend class="connote-story-title">{html.escape(str(scheme.get("description", "")))}</legend>
    <div class="connote-story-help"></div>
    <div class="connote-story-album" aria-label="Album photos"></div>
    <div class="connote-story-choices" aria-label="Photo sequences to choose from"></div>
    <h4 class="connote-story-board-title">Storyboard</h4>
    <div class="connote-story-board" aria-label="Storyboard"></div>
    <div class="connote-story-text" aria-live="polite"></div>
    <div class="connote-story-status" aria-live="polite"></div>
    {skip}
    <div class="connote-story-inputs">{''.join(inputs)}</div>
  </fieldset>
</form>"""
    return body, []


def register(api: Any) -> None:
    """Potato's plugin hook: the ``connote_story`` type and its script and style."""
    options = ["mode", "photos", "max_photos", "min_words", "min_words_each", "min_distinct", "allow_skip",
               "skip_label", "help", "done", "label_requirement"]
    api.add_schema(SCHEMA_TYPE, generate_story_layout, optional_fields=options,
                   description="Choose and order an album's photos and write one sentence per photo (VIST)")
    api.add_assets("static", scripts=["connote-story.js", "connote-checks.js"], styles=["connote-story.css"])
