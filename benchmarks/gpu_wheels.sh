#!/usr/bin/env bash
# Wheels that benchmarks/gpu.sh needs on a lent GPU machine and that its image lacks, downloaded HERE
# (where pip reaches the package index) for that machine's Python 3.12 on x86-64, into .whl/ (git-ignored).
# The machine's image already holds torch, transformers, accelerate, peft, numpy, scipy, typer, rich,
# matplotlib, pyyaml and shap's other needs (numba, pandas, scikit-learn, tqdm, cloudpickle); it lacks
# shap (the public MM-SHAP path of benchmarks/explain_vs_mmshap.py) and shap's `slicer`, and pydantic (connote's
# option checkers) with pydantic-core, annotated-types, typing-inspection and a typing-extensions new enough for
# them. Install them there with
#   python3 -m pip install --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
#
#   bash benchmarks/gpu_wheels.sh        # then carry .whl to the GPU machine; see docs/performance.md
set -euo pipefail
cd "$(dirname "$0")/.."
PY_VERSION="${PY_VERSION:-3.12}"
mkdir -p .whl
for spec in "shap==0.51.0" "slicer==0.0.8" "pydantic==2.13.4" "pydantic-core==2.46.4" "annotated-types==0.7.0" \
    "typing-inspection==0.4.2" "typing-extensions==4.16.0"; do
  "${PYTHON:-python}" -m pip download -q --no-deps --only-binary=:all: --python-version "$PY_VERSION" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    --platform any -d .whl "$spec"
done
ls -l .whl
