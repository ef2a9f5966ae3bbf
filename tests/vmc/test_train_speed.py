"""A faster GIT-LLaVA training step trains the same model: packed batches and compiled layers give the loss and
gradients of the padded eager step (fp32 on the CPU, up to summation order), and a run with them matches one
without."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")

from connote.core.errors import InputError  # noqa: E402
from connote.vmc.train.config import config_from_dict  # noqa: E402
from connote.vmc.train.git_llava import GitLlava  # noqa: E402
from connote.vmc.train.loop import train  # noqa: E402
from connote.vmc.train.speed import compile_layers, configure, decoder_layers, resolve_pack  # noqa: E402
from tests.support import tiny_models  # noqa: E402

#: captions and instructions of different lengths, so that the padded batch pads and the packed one does not
CAPTIONS = ["the apple is as red as fire", "the sea", "the leaf is as green as grass and the sun"]
PROMPTS = ["What caption can best describe the metaphor in the video?", "Describe it.", "What is it like?"]


@pytest.fixture(scope="module")
def model(colour_set) -> GitLlava:  # noqa: ANN001
    from connote.vmc.train.config import ModelConfig

    torch.manual_seed(0)
    m = GitLlava.build(ModelConfig(captioner=str(colour_set.git), llm=str(colour_set.llm)))
    tiny_models.spread(m.projector, std=0.5)
    tiny_models.spread(m.llm, std=0.3, seed=1)
    m.set_trainable(llm=True)
    return m


def loss_and_grads(m: GitLlava, pv, **kwargs) -> tuple[float, int, list]:  # noqa: ANN001
    m.zero_grad(set_to_none=True)
    loss, n = m(pv, PROMPTS, CAPTIONS, **kwargs)
    loss.backward()
    return float(loss.detach()), int(n), [p.grad.clone() for p in m.parameters() if p.requires_grad]


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_packed_step_has_the_loss_and_gradients_of_the_padded_step(model: GitLlava, attention: str) -> None:
    model.llm.config._attn_implementation = attention
    pv = torch.randn(3, 1, 6, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    padded, n, grads = loss_and_grads(model, pv)
    packed, n_packed, grads_packed = loss_and_grads(model, pv, pack=True)
    embeds, mask, _, _ = model._sequences(model.encode(pv), PROMPTS, CAPTIONS)
    assert (mask == 0).any()  # the padded batch did pad
    assert n == n_packed == sum(len(model.caption_ids(c)) for c in CAPTIONS)
    assert packed == pytest.approx(padded, rel=1e-6)
    for a, b in zip(grads, grads_packed):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    model.llm.config._attn_implementation = "sdpa"


def test_packed_rows_restart_positions_per_example(model: GitLlava) -> None:
    pv = torch.randn(3, 1, 6, 3, 32, 32)
    embeds, position_ids, positions, targets = model._packed(model.encode(pv), PROMPTS, CAPTIONS)
    lengths = [seq.shape[0] for seq, _ in model._rows(model.encode(pv), PROMPTS, CAPTIONS)]
    assert embeds.shape[:2] == (1, sum(lengths))
    starts = (position_ids[0] == 0).nonzero().flatten().tolist()
    assert starts == [0, lengths[0], lengths[0] + lengths[1]]
    assert targets.tolist()[-1] == model.tokenizer.eos_token_id and positions.tolist()[-1] == sum(lengths) - 2


def test_pack_auto_only_with_attention_that_reads_boundaries(model: GitLlava) -> None:
    assert resolve_pack("auto", model.llm) is False  # SDPA would attend over the whole packed row
    model.llm.config._attn_implementation = "flex_attention"
    try:
        assert resolve_pack("auto", model.llm) is True
    finally:
        model.llm.config._attn_implementation = "sdpa"
    assert resolve_pack("yes", model.llm) is True and resolve_pack("no", model.llm) is False


@pytest.mark.slow
def test_compiled_layers_give_the_eager_loss_and_gradients(colour_set) -> None:  # noqa: ANN001
    """``train.compile``: torch.compile on each decoder layer (inductor on the CPU here, CUDA on a GPU)."""
    from connote.vmc.train.config import ModelConfig

    def build() -> GitLlava:
        torch.manual_seed(0)
        m = GitLlava.build(ModelConfig(captioner=str(colour_set.git), llm=str(colour_set.llm)))
        tiny_models.spread(m.llm, std=0.3, seed=1)
        m.set_trainable(llm=True)
        return m

    pv = torch.randn(3, 1, 6, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    eager, _, grads = loss_and_grads(build(), pv)
    fast = build()
    assert compile_layers(fast.llm) == len(decoder_layers(fast.llm)) == fast.llm.config.num_hidden_layers
    compiled, _, grads_compiled = loss_and_grads(fast, pv, pack=True)
    assert compiled == pytest.approx(eager, rel=1e-5)
    for a, b in zip(grads, grads_compiled):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4)


def test_configure_on_the_cpu_keeps_eager_unpacked_and_refuses_liger_without_it(model: GitLlava) -> None:
    assert configure(model, "auto", "auto", "auto", "cpu") == {"pack": False, "compiled_layers": 0, "kernels": "none"}
    from connote.vmc.train.speed import liger_available

    if not liger_available():
        with pytest.raises(Exception, match="liger"):
            configure(model, "no", "no", "liger", "cpu")


def test_config_names_a_bad_speed_setting() -> None:
    with pytest.raises(InputError, match="train.pack must be auto, yes or no, not 'maybe'"):
        config_from_dict({"train": {"pack": "maybe"}})
    with pytest.raises(InputError, match="train.kernels must be auto, liger or none"):
        config_from_dict({"train": {"kernels": "triton"}})


@pytest.mark.slow
def test_a_packed_run_matches_a_padded_run(stage2_config, tmp_path: Path) -> None:  # noqa: ANN001
    padded = train(config_from_dict(stage2_config(tmp_path / "a", max_steps=2, pack="no")))
    packed = train(config_from_dict(stage2_config(tmp_path / "b", max_steps=2, pack="yes")))
    assert packed.losses == pytest.approx(padded.losses, rel=1e-5)
