"""Start and stop a local OpenAI-compatible `vllm serve` on CPU, for the integration tests and
benchmarks/llm_layer.py (and for anyone who wants a judge endpoint on a laptop).

The CPU build of vLLM lives in its own virtual environment, `.venv-vllm` (created by
`bash .ci/setup_vllm.sh`), because it pins an older transformers than the main one; the server is
launched as `python -m vllm.entrypoints.openai.api_server` (the `vllm` command fails on that
package's distribution name). The served model is a tiny Qwen3 built with `earlydx.tiny_models`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import httpx

from earlydx.paths import REPO_ROOT

# `EARLYDX_VLLM_VENV` points elsewhere, e.g. at a shared install on a CI runner.
VLLM_VENV = Path(os.environ.get("EARLYDX_VLLM_VENV", REPO_ROOT / ".venv-vllm"))
# Small models emit endless whitespace inside JSON unless the grammar forbids it; compact JSON is also
# what the judge prompts ask for. Requires the xgrammar structured-output backend.
STRUCTURED_OUTPUTS_CONFIG = {"backend": "xgrammar", "disable_any_whitespace": True}
DEFAULT_TEXTS = tuple(
    f"Patient {i} presents with chest pain, fever {37 + i % 3}.5 C and cough. "
    f'{{"label": "supported", "score": {i % 10}, "urgent": true, "diagnoses": ["sepsis", "pneumonia"]}}'
    for i in range(200)
)


def vllm_python(venv: str | Path = VLLM_VENV) -> Path:
    """The interpreter of the vLLM venv (may not exist; callers check)."""
    return Path(venv) / "bin" / "python"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_tiny_served_model(out_dir: str | Path, texts: Iterable[str] = DEFAULT_TEXTS, seed: int = 0) -> Path:
    """A tiny Qwen3ForCausalLM + trained tokenizer that the CPU build of vLLM can serve (head_dim 64:
    vLLM's CPU attention refuses 16). Saved with the main venv's transformers; the older transformers
    in .venv-vllm reads the same config.json."""
    from earlydx.tiny_models import build_tiny_checkpoint

    return build_tiny_checkpoint(
        texts,
        out_dir,
        kind="qwen3",
        vocab_size=1000,
        seed=seed,
        hidden_size=128,
        num_layers=2,
        num_heads=2,
        num_kv_heads=1,
        head_dim=64,
        intermediate_size=256,
    )


class VLLMServer:
    """One `vllm serve` subprocess.

    Args:
        model_dir: the model to serve (its path is also the served model name).
        port: TCP port on 127.0.0.1 (default: a free one).
        log_path: where the server's stdout/stderr go.
        venv: the vLLM virtual environment.
        extra_args: more server arguments.
    """

    def __init__(
        self,
        model_dir: str | Path,
        log_path: str | Path,
        port: int | None = None,
        venv: str | Path = VLLM_VENV,
        extra_args: list[str] | None = None,
    ) -> None:
        self.model = str(model_dir)
        self.port = port or free_port()
        self.log_path = Path(log_path)
        self.python = vllm_python(venv)
        self.extra_args = extra_args or []
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [
            str(self.python),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            self.model,
            "--dtype",
            "float32",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--structured-outputs-config",
            json.dumps(STRUCTURED_OUTPUTS_CONFIG),
            *self.extra_args,
        ]

    def start(self, timeout: float = 300.0) -> VLLMServer:
        """Launch the server and wait until /v1/models answers (1–2 minutes on a laptop CPU)."""
        if not self.python.exists():
            raise FileNotFoundError(f"{self.python} not found: run `bash .ci/setup_vllm.sh` first")
        env = {
            **os.environ,
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
        log = self.log_path.open("ab")
        # Own process group, so that stop() also ends the engine core and worker processes.
        self.proc = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"vllm server exited with {self.proc.returncode} during startup; "
                    f"log tail:\n{self.log_tail()}"
                )
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(1.0)
        self.stop()
        raise TimeoutError(f"vllm server not ready after {timeout:.0f} s; log tail:\n{self.log_tail()}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        """End the server's process group (SIGTERM, then SIGKILL after `timeout`)."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = None
            return
        pgid = os.getpgid(self.proc.pid)
        os.killpg(pgid, sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.proc.wait(timeout=timeout)
        try:  # engine-core children may outlive the API process briefly
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc = None

    def kill(self) -> None:
        """Simulate a crash: SIGKILL the whole server at once."""
        self.stop(sig=signal.SIGKILL)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
