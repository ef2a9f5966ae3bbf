"""Batched generation gives each request what generating it alone gives (greedy), in fewer ``generate`` calls.

The chat VLM (``hf-vlm``) and GIT-LLaVA (``git-llava``) backends batch greedy requests (left padding,
sorted by prompt length, split where ``max_new_tokens`` changes); every output must equal the one the
request gets in a batch of its own, in the request's place.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from PIL import Image  # noqa: E402

from connote.models.protocols import GenerationRequest, greedy_batches  # noqa: E402
from connote.models.registry import load_model  # noqa: E402
from tests.support import tiny_models  # noqa: E402


def photos(n: int, seed: int) -> list[Image.Image]:
    rng = np.random.RandomState(seed)
    return [Image.fromarray((rng.rand(24 + 4 * i, 32, 3) * 255).astype("uint8")) for i in range(n)]


def count_calls(model) -> list[int]:  # noqa: ANN001
    """Wrap ``model.generate`` to record the batch size of each call."""
    calls: list[int] = []
    inner = model.generate

    def generate(*args, **kwargs):  # noqa: ANN002, ANN003
        batch = kwargs.get("input_ids", kwargs.get("inputs_embeds", args[0] if args else None))
        calls.append(int(batch.shape[0]))
        return inner(*args, **kwargs)

    model.generate = generate
    return calls


def test_greedy_batches_sort_split_and_skip_sampled() -> None:
    reqs = [GenerationRequest(images=[], max_new_tokens=n, temperature=t)
            for n, t in [(8, 0), (4, 0), (8, 0), (8, 0.5), (8, 0), (4, 0), (8, 0)]]
    lengths = [5, 9, 1, 0, 3, 2, 7]
    # greedy only (index 3 is sampled), max_new_tokens 4 before 8, shortest prompt first, at most 3 a batch
    assert greedy_batches(reqs, lambda i: lengths[i], 3) == [[5, 1], [2, 4, 0], [6]]
    assert greedy_batches(reqs, lambda i: lengths[i], 1) == [[5], [1], [2], [4], [0], [6]]


@pytest.fixture(scope="module")
def llava(tmp_path_factory) -> Path:
    return tiny_models.tiny_llava(tmp_path_factory.mktemp("llava") / "m")


@pytest.mark.slow
def test_chat_vlm_batches_greedy_requests_with_the_outputs_of_one_at_a_time(llava: Path) -> None:
    prompts = ["a man sits on the bench", "dog", "the woman holds a red cup near the street", "cat",
               "a child prays in the church", "story"]
    reqs = [GenerationRequest(images=photos(1 + i % 3, seed=i), prompt=p, max_new_tokens=6 + 3 * (i % 2))
            for i, p in enumerate(prompts)]
    reqs.append(GenerationRequest(images=photos(2, seed=9), prompt="dog", max_new_tokens=6, temperature=0.7, seed=1))
    alone = load_model(f"hf-vlm:{llava}?batch_size=1")
    expected = [alone.generate([r])[0] for r in reqs]
    assert len(set(expected)) >= 4  # the random model's outputs depend on the images and prompt
    batched = load_model(f"hf-vlm:{llava}?batch_size=8")
    calls = count_calls(batched.model)
    assert batched.generate(reqs) == expected
    # one sampled request alone, then the greedy ones: 3 asking 6 new tokens, 3 asking 9
    assert calls == [1, 3, 3]
    calls.clear()
    small = load_model(f"hf-vlm:{llava}?batch_size=2")
    calls = count_calls(small.model)
    assert small.generate(reqs) == expected and calls == [1, 2, 1, 2, 1]


def test_chat_vlm_static_cache_option(llava: Path) -> None:
    reqs = [GenerationRequest(images=photos(2, seed=i), prompt="a dog", max_new_tokens=5) for i in range(3)]
    dynamic = load_model(f"hf-vlm:{llava}")
    static = load_model(f"hf-vlm:{llava}?cache=static")
    assert static.generate(reqs) == dynamic.generate(reqs)
    assert static.describe()["cache"] == "static" and "cache" not in dynamic.describe()
    # on a CPU, auto is the dynamic cache (CUDA graphs need CUDA) and a static cache is not compiled unless asked
    assert dynamic.decoding.cache == "dynamic" and static.decoding.compiled is False
    with pytest.raises(Exception, match="cache must be one of auto, dynamic, static"):
        load_model(f"hf-vlm:{llava}?cache=paged")


@pytest.mark.slow
def test_chat_vlm_compiled_static_decoding_runs_on_the_cpu_in_bf16(llava: Path) -> None:
    """The compiled path a GPU takes by default (static cache + torch.compile), in inductor's default mode (no
    CUDA graphs here), in bf16 as on a GPU: the same texts as the eager static cache, one compilation reused."""
    reqs = [GenerationRequest(images=photos(2, seed=i), prompt="a dog", max_new_tokens=5) for i in range(4)]
    eager = load_model(f"hf-vlm:{llava}?cache=static&dtype=bf16")
    compiled = load_model(f"hf-vlm:{llava}?cache=static&compile=true&dtype=bf16&batch_size=2")
    assert compiled.decoding.compiled and compiled.describe()["compiled"] is True
    assert compiled.describe()["logits"] == "fp32"  # the LM head in float32 by default in half precision
    assert compiled.generate(reqs) == eager.generate(reqs)
    assert compiled.generate(reqs[:2]) == eager.generate(reqs[:2])  # a second call reuses the compiled step


@pytest.fixture(scope="module")
def git_llava(tmp_path_factory) -> Path:
    from connote.vmc.train.config import ModelConfig
    from connote.vmc.train.git_llava import GitLlava
    from tests.support.tiny_sources import make_tiny_sources

    tmp = tmp_path_factory.mktemp("gl")
    git, llm = make_tiny_sources(tmp / "src", ["red", "blue", "sky", "fire", "sea"])
    torch.manual_seed(0)
    model = GitLlava.build(ModelConfig(captioner=str(git), llm=str(llm)))
    tiny_models.spread(model.projector, std=0.5)
    tiny_models.spread(model.llm, std=0.3, seed=1)
    return model.save(tmp / "model")


@pytest.mark.slow
def test_git_llava_batches_greedy_requests_with_the_outputs_of_one_at_a_time(git_llava: Path) -> None:
    reqs = [GenerationRequest(images=photos(6, seed=i), prompt=p, max_new_tokens=n)
            for i, (p, n) in enumerate([(None, 8), ("describe the video", 8), (None, 5), (None, 8),
                                        ("describe the video", 5)])]
    alone = load_model(f"git-llava:{git_llava}?batch_size=1")
    expected = [alone.generate([r])[0] for r in reqs]
    assert len(set(expected)) >= 3
    batched = load_model(f"git-llava:{git_llava}?batch_size=4")
    calls = count_calls(batched.model.llm)
    assert batched.generate(reqs) == expected
    assert calls == [2, 3]  # the two asking 5 new tokens, then the three asking 8


def test_git_llava_encode_skips_the_lm_head_with_the_same_states(git_llava: Path) -> None:
    from connote.vmc.train.git_llava import GitLlava

    model = GitLlava.from_pretrained(git_llava).eval()
    pv = torch.stack([model.pixel_values([photos(6, seed=s)]) for s in range(2)])
    ids = torch.full((2, 1), int(model.captioner.config.bos_token_id), dtype=torch.long)
    with torch.no_grad():
        full = model.captioner(input_ids=ids, pixel_values=pv[:, 0], output_hidden_states=True)
    assert torch.equal(model.encode(pv), full.hidden_states[model.cfg.layer])


def test_git_llava_pixel_values_of_many_videos_in_one_call_equal_one_call_per_video(git_llava: Path) -> None:
    from connote.vmc.train.git_llava import GitLlava

    model = GitLlava.from_pretrained(git_llava)
    videos = [[photos(6, seed=s)] for s in range(3)]
    together = model.videos_pixel_values(videos)
    assert together.shape == (3, 1, 6, 3, 32, 32)
    assert torch.equal(together, torch.stack([model.pixel_values(v) for v in videos]))
    with pytest.raises(ValueError, match="expected 1 clip"):
        model.videos_pixel_values([[photos(3, seed=0), photos(3, seed=1)]])


def test_git_llava_halves_a_batch_that_runs_out_of_memory_with_the_same_outputs(git_llava: Path, capsys) -> None:
    """A generate call of more rows than the accelerator holds is split in halves (and batch_size lowered for
    the calls after it); the captions are those of one call per request."""
    reqs = [GenerationRequest(images=photos(6, seed=i), max_new_tokens=4) for i in range(5)]
    alone = load_model(f"git-llava:{git_llava}?batch_size=1")
    expected = [alone.generate([r])[0] for r in reqs]
    gen = load_model(f"git-llava:{git_llava}")
    assert gen.batch_size == 16  # the default: every request of the task's default call in one generate
    calls: list[int] = []
    inner = gen.model.generate

    def generate(pv, prompts, **kwargs):  # noqa: ANN001, ANN003
        calls.append(len(prompts))
        if len(prompts) > 2:  # what a GPU with room for two rows' KV cache does
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return inner(pv, prompts, **kwargs)

    gen.model.generate = generate
    assert gen.generate(reqs) == expected
    assert calls == [5, 3, 2, 1, 2] and gen.batch_size == 2
    assert "batch_size is now 3" in capsys.readouterr().err
    calls.clear()
    assert gen.generate(reqs) == expected and calls == [2, 2, 1]  # the lowered size from then on


def test_git_llava_and_the_caption_task_default_to_the_same_batch() -> None:
    import inspect

    from connote.vmc.backend_git_llava import DEFAULT_BATCH
    from connote.vmc.cli import caption_cmd
    from connote.vmc.task import MetaphorCaptionTask, caption_videos

    assert DEFAULT_BATCH == 16
    for fn in (MetaphorCaptionTask.__init__, caption_videos, caption_cmd):
        assert inspect.signature(fn).parameters["batch_size"].default == DEFAULT_BATCH, fn
