"""A tiny offline sample for ``connote vmc synth`` (appendix A.5.2) answered through the Batch API files.

Twelve literal captions of the nine packaged sample photos (:mod:`connote.media.sample`; two or one per photo,
as MSCOCO has several per image) in a caption table, and a Batch API *output* file that answers the request
file ``connote vmc synth --write-batch`` writes for them: one line per request, in another order than the
requests (as the Batch API returns them), nine answers in the template (plain, with an ``Output:`` label, in
quotes, with an explanation on a second line), two outside it, and one request that failed (status 500).
The answers were written for connote, not by GPT-3.5; the file has the Batch API's layout (``id``,
``custom_id``, ``response.status_code``, ``response.body.choices[0].message.content``, ``error``) so that
``openai-batch:`` reads it as it reads a downloaded one. Expected on this sample: 12 captions, 9 kept,
2 dropped (not in the template), 1 failed (batch request failed).

It exists to show the workflow end to end offline; it is far too small to say anything about a model.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path
from typing import Any

#: (row id, photo, literal caption, the answer written for it; None: the request failed in the batch)
CAPTIONS: list[tuple[str, str, str, str | None]] = [
    ("s01", "astronaut", "A woman in a spacesuit smiles in front of a flag.",
     "The astronaut is as proud as a flag in the wind."),
    ("s02", "astronaut", "An astronaut poses in an orange suit.", "The astronaut is as bright as a sunrise."),
    ("s03", "grace_hopper", "A woman wears a uniform with a cap.", "Output: The officer is as steady as a lighthouse"),
    ("s04", "camera", "A man stands behind a camera on a tripod.", "The photographer is as patient as a heron."),
    ("s05", "rocket", "A rocket stands on a launch pad.", "The rocket is as restless as a racehorse."),
    ("s06", "rocket", "A white rocket points at the sky.", None),
    ("s07", "chelsea", "A cat lies on the floor and looks to the side.",
     "The cat is as calm as a sleeping lake.\nThe stillness of the cat is compared with a lake."),
    ("s08", "coffee", "A cup of coffee stands on a saucer.", "\"The coffee is as warm as a hug.\""),
    ("s09", "coffee", "Coffee in a white cup next to a spoon.",
     "Sure! Here is a metaphoric caption: the coffee is a warm hug in a cup."),
    ("s10", "motorcycle", "A motorcycle is parked inside a room.",
     "A motorcycle resting indoors like a sleeping horse."),
    ("s11", "china", "A building with a curved roof stands among trees.", "The temple is as old as memory."),
    ("s12", "flower", "A pink flower blooms in the sun.", "The flower is as bright as a smile."),
]
#: What the sample run counts (tests/vmc/test_synth_batch.py and the docs example check them).
EXPECTED = {"captions": 12, "kept": 9, "dropped": 2, "failed": 1}
MODEL = "gpt-3.5-turbo-0125"
#: The order the output file lists the answers in (the Batch API does not keep the request order).
OUTPUT_ORDER = (3, 0, 7, 11, 5, 1, 9, 4, 10, 2, 8, 6)


def _hex(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def output_line(custom_id: str, answer: str | None, created: int) -> dict[str, Any]:
    """One line of a Batch API output file: the answer as a chat completion, or a failed request (500)."""
    if answer is None:
        response = {"status_code": 500, "request_id": _hex("request " + custom_id, 32),
                    "body": {"error": {"message": "The server had an error while processing your request. Sorry "
                                                  "about that!", "type": "server_error", "param": None,
                                       "code": None}}}
    else:
        response = {"status_code": 200, "request_id": _hex("request " + custom_id, 32), "body": {
            "id": "chatcmpl-" + _hex("completion " + custom_id, 29), "object": "chat.completion",
            "created": created, "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer, "refusal": None},
                         "logprobs": None, "finish_reason": "stop"}]}}
    return {"id": "batch_req_" + _hex("batch " + custom_id, 24), "custom_id": custom_id, "response": response,
            "error": None}


def sample_custom_id(row_id: str, caption: str) -> str:
    """The custom_id ``connote vmc synth --write-batch`` gives the sample row's request (default prompt, 64 tokens,
    temperature 0)."""
    from connote.models.openai_batch import batch_custom_id, request_digest
    from connote.vmc.synth import SYNTH_PROMPT, synth_prompt

    return batch_custom_id(row_id, request_digest(synth_prompt(caption, SYNTH_PROMPT), 64, 0.0, None))


def write_sample_synth(folder: str | Path) -> dict[str, Path]:
    """Write ``images/``, ``captions.csv`` (``id, image, caption``) and ``batch-output.jsonl`` into ``folder``;
    returns their paths (``images``, ``captions``, ``batch_output``)."""
    from connote.media.sample import SAMPLE
    from connote.runs.store import write_jsonl

    folder = Path(folder)
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    loaders = {s[0]: s[1] for s in SAMPLE}
    for photo in dict.fromkeys(c[1] for c in CAPTIONS):
        path = images / f"{photo}.jpg"
        if not path.exists():
            loaders[photo]().save(path, quality=92)
    paths = {"images": images, "captions": folder / "captions.csv", "batch_output": folder / "batch-output.jsonl"}
    with paths["captions"].open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "image", "caption"])
        for rid, photo, caption, _ in CAPTIONS:
            writer.writerow([rid, f"{photo}.jpg", caption])
    write_jsonl(paths["batch_output"], (output_line(sample_custom_id(CAPTIONS[k][0], CAPTIONS[k][2]), CAPTIONS[k][3],
                                                    1733097600 + 7 * n) for n, k in enumerate(OUTPUT_ORDER)))
    return paths
