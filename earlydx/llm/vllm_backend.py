"""vLLM offline engine backend (batch generation on a GPU node).

`vllm` is imported lazily, inside this backend, so that the rest of the project (and CPU machines
without vLLM) never import it. JSON schemas are enforced by vLLM's structured decoding
(`StructuredOutputsParams(json=...)`; `GuidedDecodingParams` on older releases), and replies are
validated again by the shared layer.
"""

from __future__ import annotations

from typing import Any

from earlydx.llm.base import BatchedClient
from earlydx.llm.config import VLLMConfig
from earlydx.llm.types import ChatRequest, SamplingParams


def structured_output_kwargs(schema: dict[str, Any]) -> dict[str, Any]:
    """vLLM SamplingParams arguments constraining the reply to `schema` (new and old vLLM APIs)."""
    try:
        from vllm.sampling_params import StructuredOutputsParams
    except ImportError:  # vLLM < 0.10.2
        from vllm.sampling_params import GuidedDecodingParams

        return {"guided_decoding": GuidedDecodingParams(json=schema)}
    return {"structured_outputs": StructuredOutputsParams(json=schema)}


class VLLMClient(BatchedClient):
    """LLM client over `vllm.LLM` (the engine starts on first use)."""

    backend = "vllm"

    def __init__(self, cfg: VLLMConfig) -> None:
        super().__init__(cfg)
        self.cfg: VLLMConfig = cfg
        self.chunk_size = max(1, int(cfg.chunk_size))
        self._llm = None

    def key_extras(self) -> dict[str, Any]:
        return {
            "_backend": {
                "dtype": self.cfg.dtype,
                "max_model_len": self.cfg.max_model_len,
                "engine_kwargs": self.cfg.engine_kwargs or {},
            }
        }

    def _engine(self) -> Any:
        if self._llm is None:
            try:
                from vllm import LLM
            except ImportError as exc:
                raise ImportError(
                    "llm.backend=vllm needs vLLM (`pip install -e .[gpu]` on a GPU node); "
                    "on CPU use llm=openai with a local `vllm serve`, or llm=transformers"
                ) from exc
            self._llm = LLM(
                model=self.model,
                tensor_parallel_size=self.cfg.tensor_parallel_size,
                dtype=self.cfg.dtype,
                gpu_memory_utilization=self.cfg.gpu_memory_utilization,
                max_model_len=self.cfg.max_model_len,
                seed=self.cfg.seed,
                enforce_eager=self.cfg.enforce_eager,
                **({"revision": self.cfg.revision} if self.cfg.revision else {}),
                **(self.cfg.engine_kwargs or {}),
            )
        return self._llm

    def _sampling(self, request: ChatRequest, sampling: SamplingParams) -> Any:
        from vllm import SamplingParams as VSamplingParams

        extra = structured_output_kwargs(request.json_schema) if request.json_schema is not None else {}
        return VSamplingParams(
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            seed=sampling.seed,
            stop=list(sampling.stop) or None,
            **extra,
        )

    def _generate_texts(self, requests: list[ChatRequest], sampling: SamplingParams) -> list[str]:
        llm = self._engine()
        outputs = llm.chat(
            [r.messages for r in requests],
            sampling_params=[self._sampling(r, sampling) for r in requests],
            use_tqdm=False,
            chat_template_kwargs=self.chat_template_kwargs or None,
        )
        return [out.outputs[0].text for out in outputs]

    def close(self) -> None:
        self._llm = None
        super().close()
