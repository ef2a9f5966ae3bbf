#!/usr/bin/env bash
# Every GPU figure of docs/performance.md in one run on a single-GPU machine (~8 minutes):
# probe throughput (real-size BLIP-base, BLIP-2, CLIP-L; naive per-pair loop vs connote), explain
# wall-clock (when benchmarks/explain_vs_mmshap.py is present) and GIT-LLaVA stage-2 step time and MFU.
# Needs only the README's install; no hub access (models are built from configs with random weights).
#
#   bash benchmarks/gpu.sh                    # writes runs/gpu-figures/figures.json and figures.md
#   bash benchmarks/gpu.sh --out /tmp/figs    # elsewhere
#   bash benchmarks/gpu.sh --dry-run          # the plan and parameter counts, on any machine
#   bash benchmarks/gpu.sh --smoke            # every section's code with tiny models on the CPU (~1 min)
#
# Without CUDA (and without --dry-run or --smoke) it stops at once with exit status 2. The explain
# section needs shap (the dev extra); on a machine that cannot reach the package index, fetch its wheels
# elsewhere with benchmarks/gpu_wheels.sh and install them there (docs/performance.md, "On GPU").
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
PYTHON="${PYTHON:-$(command -v python || command -v python3)}"
exec "$PYTHON" benchmarks/gpu_figures.py "$@"
