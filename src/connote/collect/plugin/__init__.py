"""connote's Potato plugin ``connote-collect``: the VIST storyboard that Potato's schemes cannot express.

Registered through the ``potato.plugins`` entry point (``connote-collect = connote.collect.plugin:register``)
and turned on by a study's ``plugins: [connote-collect]``. It adds one annotation type:

``connote_story`` (options ``mode``: ``choose`` | ``fixed``, ``photos``, ``min_words``, ``allow_skip``)
    *choose* (storytelling, paper Figure 3): the album is shown in time order; clicking a photo puts a
    story card on the storyboard, cards can be moved left/right or removed, and each card takes one
    sentence. *fixed* (re-telling): the storyboard is already chosen and ordered; one sentence per card.
    The page refuses to go on until exactly ``photos`` cards each have a sentence and the story has at
    least ``min_words`` words, unless the worker marks the album as not storyable (``allow_skip``).

The answers are ordinary Potato text answers of the scheme: ``order`` (photo ids joined by commas, or
``skip``) and ``sentence_1`` .. ``sentence_N`` (the sentence on card k, in story order). The photos come
from the item's ``photos`` field (``[{"id", "url"}]``), read by the page script from
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
    mode = "fixed" if scheme.get("mode") == "fixed" else "choose"
    photos = int(scheme.get("photos", 5))
    min_words = int(scheme.get("min_words", 15))
    allow_skip = bool(scheme.get("allow_skip", mode == "choose"))
    inputs = [f'<input type="text" class="{name} annotation-input connote-story-order" id="{name}_order_text" '
              f'name="{name}:::order" schema="{name}" label_name="order" validation="required" '
              f'aria-hidden="true" tabindex="-1" style="display:none">']
    for k in range(1, photos + 1):
        inputs.append(f'<textarea class="{name} annotation-input connote-story-sentence" rows="3" '
                      f'id="{name}_sentence_{k}_text" name="{name}:::sentence_{k}" schema="{name}" '
                      f'label_name="sentence_{k}" data-card="{k}" placeholder="One sentence for this photo" '
                      f'aria-label="Sentence for card {k}"></textarea>')
    skip = ('<label class="connote-story-skip"><input type="checkbox" class="connote-story-skip-box"> '
            'This album is not storyable (for example, a collection of coins): skip it</label>') if allow_skip else ""
    body = f"""
<form id="{name}" class="annotation-form connote-story" action="javascript:void(0)" data-annotation-type="text"
      data-schema-name="{name}" data-mode="{mode}" data-photos="{photos}" data-min-words="{min_words}">
  <fieldset schema_name="{name}">
    <legend class="connote-story-title">{html.escape(str(scheme.get("description", "")))}</legend>
    <div class="connote-story-help"></div>
    <div class="connote-story-album" aria-label="Album photos"></div>
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
    api.add_schema(SCHEMA_TYPE, generate_story_layout, optional_fields=["mode", "photos", "min_words", "allow_skip",
                                                                       "label_requirement"],
                   description="Choose and order an album's photos and write one sentence per photo (VIST)")
    api.add_assets("static", scripts=["connote-story.js", "connote-checks.js"], styles=["connote-story.css"])
