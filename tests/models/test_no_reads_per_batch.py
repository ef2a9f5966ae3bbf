"""The engine reads nothing back from the device per scoring batch: every index it makes from Python values
(rows by image, where scores go, the distinct images of a batch) keeps those values (``connote.models.indices``),
so a backend never calls ``tolist()``/``item()`` on a tensor while scoring; a call reads its scores back once.

On a GPU each such read (and each blocking copy to the device) waits for every queued kernel, so the CPU could not
queue the next batch while the GPU ran this one. Here (no GPU) the reads are counted instead: one per call."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from connote.models import load_model  # noqa: E402
from connote.models.indices import device_index, index_values  # noqa: E402
from tests.support.tiny_models import random_image  # noqa: E402

IMAGES = [random_image(s) for s in range(4)]
CAPTIONS = ["a man begs on the street", "a woman sits on a bench", "a cat", "a dog holds a red cup with a hand"]
PAIRS = [(i, c) for i in range(4) for c in range(4)][:13]


@pytest.mark.parametrize("backend,options", [("hf-blip-itm", ""), ("hf-blip-itm", "attention=eager"),
                                             ("hf-blip2-itm", ""), ("hf-flava-itm", ""), ("hf-clip", "")])
def test_match_probability_reads_back_once_whatever_the_batches(tiny_dirs, monkeypatch, backend, options) -> None:
    matcher = load_model(f"{backend}:{tiny_dirs[backend]}?batch_size=3&image_batch_size=2"
                         + (f"&{options}" if options else ""))
    want = matcher.match_probability(IMAGES, CAPTIONS, PAIRS)
    reads: list[str] = []
    real_tolist, real_item = torch.Tensor.tolist, torch.Tensor.item

    def tolist(self):
        reads.append("tolist")
        return real_tolist(self)

    def item(self):
        reads.append("item")
        return real_item(self)

    monkeypatch.setattr(torch.Tensor, "tolist", tolist)
    monkeypatch.setattr(torch.Tensor, "item", item)
    got = matcher.match_probability(IMAGES, CAPTIONS, PAIRS)
    monkeypatch.undo()
    assert got == want
    assert reads == ["tolist"], reads  # the call's scores, once; 13 pairs in batches of 3


def test_an_index_keeps_its_values_and_a_plain_tensor_is_read() -> None:
    index = device_index(range(3), "cpu")
    assert index.dtype == torch.long and index.tolist() == [0, 1, 2] and index_values(index) == [0, 1, 2]
    assert index_values(torch.tensor([4, 5])) == [4, 5]
    assert index_values(index[1:]) == [1, 2]  # a new tensor (an op's result) has no values kept: read
