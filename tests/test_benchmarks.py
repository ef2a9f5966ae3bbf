"""The GPU benchmark (``benchmarks/gpu.sh``) on this CPU: its plan, its refusals and, with ``--smoke``, every
section's code run end to end with tiny models, so the script has run before a GPU is lent to measure with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.support import benchmark_scripts

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
ENV = {**os.environ, "PYTHON": sys.executable}  # gpu.sh runs this interpreter, not the first python on PATH


def _gpu_figures():
    return benchmark_scripts.load("gpu_figures")


@pytest.mark.slow
def test_gpu_benchmark_dry_run_builds_real_size_configs_without_memory(tmp_path, capsys):
    gpu = _gpu_figures()
    assert gpu.main(["--dry-run", "--only", "probe", "--models", "clip-l", "--out", str(tmp_path / "figs")]) == 0
    plan = json.loads(capsys.readouterr().out)
    clip = plan["probe"]["clip-l"]
    # openai/clip-vit-large-patch14 has 427,616,513 parameters with its 49,408-token vocabulary;
    # the benchmark's offline tokenizer has 98 tokens, so 49,310 rows of 768 fewer
    assert clip["params"] == 427_616_513 - (49_408 - 98) * 768
    assert clip["backend"] == "hf-clip" and clip["pairs"] == 2048 and clip["naive_pairs"] == 128
    assert plan["device"] == "cuda" and plan["dtype"] == "bf16" and plan["smoke"] is False
    assert not (tmp_path / "figs").exists()  # a dry run writes nothing


def test_gpu_benchmark_explains_and_trains_at_real_size_on_the_gpu(tmp_path, capsys):
    gpu = _gpu_figures()
    assert gpu.main(["--dry-run", "--only", "explain", "train", "--out", str(tmp_path)]) == 0
    plan = json.loads(capsys.readouterr().out)
    explain = plan["explain"]["command"]
    assert explain[explain.index("--size") + 1] == "base" and explain[explain.index("--device") + 1] == "cuda"
    assert explain[explain.index("--dtype") + 1] == "fp32,bf16"
    train = plan["train"]["command"]
    assert train[train.index("--size") + 1] == "real" and train[train.index("--device") + 1] == "cuda"
    assert plan["train"]["llm_params"] > 1_000_000_000  # a TinyLlama-1.1B-shaped LLM


def test_gpu_benchmark_generates_at_real_size_with_and_without_a_static_cache(tmp_path, capsys):
    gpu = _gpu_figures()
    assert gpu.main(["--dry-run", "--only", "generate", "--out", str(tmp_path)]) == 0
    runs = json.loads(capsys.readouterr().out)["generate"]["commands"]
    (cmd,) = runs.values()  # one script run: the loop, then connote with the dynamic and the static cache
    assert cmd[cmd.index("--size") + 1] == "real" and cmd[cmd.index("--device") + 1] == "cuda"
    assert cmd[cmd.index("--dtype") + 1] == "bf16" and cmd[cmd.index("--items") + 1] == "16"
    generation = benchmark_scripts.load("generation")
    args = generation.parse_args(cmd[2:])
    assert args.configs == ["dynamic", "static"] and generation.CONFIGS["static"]["cache"] == "static"
    # the section's budget on a GPU: the loop on 2 stories, 64 new tokens, 4 stories also at batch 1
    assert (args.naive_items, generation.tokens_for("vlm", args), args.invariance_items) == (2, 64, 4)


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA path")
def test_gpu_benchmark_fails_fast_without_cuda(tmp_path):
    proc = subprocess.run(["bash", str(BENCH / "gpu.sh"), "--out", str(tmp_path / "figs")], capture_output=True,
                          text=True, timeout=300, env=ENV)
    assert proc.returncode == 2
    assert "needs a CUDA GPU" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "figs").exists()


def test_gpu_peak_is_looked_up_by_the_longest_part_of_the_device_name():
    """torch.cuda.get_device_name() as NVIDIA's cards give it: a PCIe or NVL H100 is not taken for an SXM one, and
    a GPU the table lacks gets no peak (MFU left out, the run goes on), not an error."""
    peak = _gpu_figures().peak_bf16_tflops
    assert peak("NVIDIA H100 80GB HBM3") == 989.0 and peak("NVIDIA H200") == 989.0
    assert peak("NVIDIA H100 PCIe") == 756.0 and peak("NVIDIA H100 NVL") == 835.0
    assert peak("NVIDIA L40S") == 362.0 and peak("NVIDIA L40") == 181.0 and peak("NVIDIA L4") == 121.0
    assert peak("NVIDIA A100-SXM4-80GB") == 312.0 and peak("Tesla T4") is None and peak("") is None


def test_gpu_benchmark_rejects_bad_arguments(capsys):
    gpu = _gpu_figures()
    with pytest.raises(SystemExit) as exc:
        gpu.parse_args(["--images", "0"])
    assert exc.value.code == 2 and "--images must be >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        gpu.parse_args(["--only", "gpu-burn"])


def test_gpu_benchmark_keeps_to_its_budget(tmp_path):
    """A section starts only with time left in ``--budget``; what was skipped is said, and the run exits 0."""
    out = tmp_path / "figs"
    proc = subprocess.run(["bash", str(BENCH / "gpu.sh"), "--smoke", "--only", "explain", "train", "--budget", "5",
                           "--out", str(out)], capture_output=True, text=True, timeout=300, env=ENV)
    assert proc.returncode == 0, proc.stderr[-2000:]
    figures = json.loads((out / "figures.json").read_text())
    assert figures["skipped"] == ["explain", "train"] and "train" not in figures
    assert "Skipped (the run's budget was spent): explain, train" in (out / "figures.md").read_text()
    gpu = _gpu_figures()
    args = gpu.parse_args([])  # on a GPU: the sections' own limits fit the whole run's 420 s
    assert args.budget == 420 and args.explain_timeout + args.train_timeout + args.generate_timeout < args.budget


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_gpu_benchmark_smoke_runs_every_section_on_the_cpu(tmp_path, dtype):
    """``gpu.sh --smoke``: the GPU run's code with tiny models, in fp32 and in the GPU run's bf16; both sides of
    each figure agree."""
    pytest.importorskip("shap")
    out = tmp_path / "figs"
    proc = subprocess.run(["bash", str(BENCH / "gpu.sh"), "--smoke", "--dtype", dtype, "--out", str(out)],
                          capture_output=True, text=True, timeout=1500, env=ENV)  # compiles on a shared CPU
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    figures = json.loads((out / "figures.json").read_text())
    assert figures["smoke"] is True and figures["gpu"] == "cpu"
    assert (out / "figures.md").read_text().startswith("SMOKE RUN")
    assert set(figures["probe"]) == {"blip-base", "blip2", "clip-l"}
    for name, row in figures["probe"].items():
        assert "error" not in row, (name, row)
        assert row["pairs"] == 8 and row["naive_pairs"] == 4
        # the naive per-pair loop and connote's engine give the same p(match) on the pairs both scored (in bf16,
        # up to its rounding: both sides run bf16 weights, in different batch shapes)
        assert row["max_abs_dp"] <= (1e-5 if dtype == "fp32" else 1e-2), (name, row["max_abs_dp"])
        assert row["input_s"] > 0 and row["input_share_of_wall"] > 0
        assert row["gflops_per_pair"] > 0 and row["naive_pairs_per_s"] > 0 and row["connote_pairs_per_s"] > 0
    explain = figures["explain"]
    assert explain["exit"] == 0, explain["output_tail"]
    paths = {r["path"]: r for r in explain["figures"]["paths"]}
    public = paths["public MM-SHAP (shap permutation, 10 perms)"]
    # 2 words -> 4 ids and 2x2 patches, n = 8: shap's permutation explainer, 10 permutations of 2n + 1 masks,
    # each answered by its own forward pass (the image re-encoded every time)
    assert public["calls"] == public["vision_passes"] == 10 * (2 * 8 + 1)
    ours = paths["connote permutation (10 perms)"]
    assert ours["vision_passes"] <= 2 ** 4  # one encode per distinct image mask, at most 2^(2x2 patches)
    assert ours["mean_abs_dT"] < 0.05 and public["mean_abs_dT"] < 0.05  # both near the exact T-SHAP
    train = figures["train"]
    assert train["exit"] == 0, train.get("output_tail")
    steps = train["figures"]
    assert steps["size"] == "small" and steps["device"] == "cpu" and steps["bf16"] is True
    # connote's side took the GPU's path: packed batch, every decoder layer compiled (inductor on the CPU)
    assert steps["connote"]["settings"] == {"pack": True, "compiled_layers": 4, "kernels": "none"}
    # the plain HF step and connote's train the same model on the same batch: the same first loss
    assert steps["connote"]["first_loss"] == pytest.approx(steps["plain_hf"]["first_loss"], abs=1e-2)
    (run,) = figures["generate"].values()
    assert run["exit"] == 0, run["output_tail"]
    assert run["figures"]["dtype"] == "bfloat16"
    for model in ("vlm", "git-llava"):
        row = run["figures"][model]
        assert row["naive"]["tokens"] > 0
        for cache in ("dynamic", "static"):  # the static cache's step compiled, as on a GPU
            config = row["configs"][cache]
            assert config["compiled"] is (cache == "static") and config["tokens"] > 0
            # the flip rate against batch 1 is measured on every run (bf16 here: any number of the 2)
            assert config["invariance"]["items"] == 2 and 0 <= config["invariance"]["changed"] <= 2
            assert config["compared_to_loop"] == 2


def test_readme_times_checks_and_rewrites_an_examples_figures(tmp_path, capsys):
    """benchmarks/readme_times.py (issue 40): --check fails on figures far from what it measures, a rewrite puts
    the measured ones in (and the machine's cores and load in the sentence that says where they come from), and
    --check then passes."""
    times = benchmark_scripts.load("readme_times")
    doc = tmp_path / "README.md"
    doc.write_text("Figures measured by `benchmarks/readme_times.py` (how) on 64 cores at load average 9.0, "
                   "2020-01-01.\n\n```bash\nconnote tasks   # every task (~300 s, 40 GB)\n"
                   "connote vist generate --data x.json   # needs: data (~1 s, 1.0 GB)\n```\n", encoding="utf-8")
    assert times.main(["--readme", str(doc), "--check"]) == 1
    assert "the comment says (~300 s, 40 GB)" in capsys.readouterr().err
    assert times.main(["--readme", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    figures = times.FIGURES.search(text.splitlines()[3])
    assert figures and float(figures.group("time")) < 60 and float(figures.group("peak")) < 2
    assert f"on {os.cpu_count()} core" in text and "2020-01-01" not in text
    assert "# needs: data (~1 s, 1.0 GB)" in text  # an example that is not run keeps its comment
    assert times.main(["--readme", str(doc), "--check"]) == 0


def test_startup_profile_splits_a_profile_into_its_parts(tmp_path, capsys):
    """benchmarks/startup_profile.py (issue 40): a real cProfile of connote code lands in the part its functions
    name (hashing: file digests and run fingerprints, each outermost call once); an unknown command is refused."""
    import cProfile

    from connote.core.files import file_sha256
    from connote.runs.store import fingerprint

    startup = benchmark_scripts.load("startup_profile")
    data = tmp_path / "data.bin"
    data.write_bytes(b"x" * 5_000_000)
    profile = cProfile.Profile()
    profile.runcall(lambda: [file_sha256(data), fingerprint({"a": 1})])
    profile.dump_stats(tmp_path / "p.stats")
    parts = startup.split(tmp_path / "p.stats")
    assert 0 < parts["hashing"] <= parts["profiled"] and parts["items"] == parts["sample writing"] == 0
    assert startup.main(["--only", "no such command"]) == 2
    assert "they are: cv-probes run, vist generate, vmc caption" in capsys.readouterr().err


def test_readme_times_reads_a_runs_speed_line_into_its_figures():
    """A run command's closing ``speed:`` line (what it computed, in how long) goes into the comment beside the
    wall, so the README says how much of a run is start-up; the figure pattern reads both forms."""
    from connote.runs.speed import speed_block, speed_line

    times = benchmark_scripts.load("readme_times")
    line = speed_line(speed_block({"calls": 0}, computed=18, resumed=0, seconds=0.428))
    err = f"pairs: 18 to compute: done 18/18\nspeed: {line}\n"
    found = times.SPEED.findall(err)
    m = times.Measured(6.51, 1.25, 2.4, 0, resumed=0.47, items=(int(found[-1][0]), float(found[-1][1])))
    text = times.figures_text(m, True)
    assert text == "(~6.5 s, 1.2 GB; 18 items in 0.4 s; resumed ~0.5 s)"
    assert times.FIGURES.fullmatch(text)["resumed"] == "0.5"
    assert times.FIGURES.fullmatch("(~6.5 s, 1.2 GB)") and not times.SPEED.findall("speed: nothing computed")


@pytest.mark.slow
def test_input_pipeline_benchmark_runs_with_tiny_settings():
    pytest.importorskip("skimage")
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent / "src")}
    proc = subprocess.run([sys.executable, str(BENCH / "input_pipeline.py"), "--images", "8", "--captions", "1",
                           "--compute-ms", "1", "--batch", "4", "--image-batch", "2", "--workers", "2"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "device / hf:" in out and "pipelined wall / max(input, compute):" in out
    assert "engine, 8 pairs in 2 groups" in out  # 4 pairs a scoring batch: the prefetch thread had a group ahead
