"""The relevance gate as a calibrated decision: the probability that what retrieval found
answers the question, from signals of the retrieval itself, and one threshold on it.

A word-share rule alone refuses a policyholder's story told in their own words and lets
through a question about something no policy mentions as soon as it shares a few words with
one. The gate weighs several signals instead (`FEATURES`), none a veto but one: an insurer or
contract the reader says is theirs that no document names ("chez Groupama", "assurée à la
Macif") is refused whatever the words shared (`Retriever._passes`): the documents cannot
answer for the reader's contract. A town or a country in the story is no such name.

* `coverage`: the IDF-weighted share of the question's terms the best parent holds, the
  terms that chose the documents (the insurer named) counting as found;
* `content_coverage`: the same without that credit: what the passage itself holds;
* `child_coverage`: the best passage's (child's) share, among the first parents;
* `agreement`: 1 / the best rank both engines give one parent (0 when they share none);
* `dense`: the dense engine's best similarity between the question and a passage;
* `bm25`: the lexical engine's best score over the sum of the question's term IDFs (a
  per-query normalisation: BM25 scores are not comparable across questions otherwise);
* `off_lines`: the question speaks of lines of insurance (car, home, health, pet…) that none
  of the documents searched covers, those it names or else the whole store
  (`retrieve/branches.py`): "mon chien assuré chez MAIF" against MAIF's home and car
  policies (a weight, not a rule: a home policy's options reach other lines);
* `unknown_names`: names no document contains (a town in a story), at most 2;
* `terms`: log(1 + the question's number of content terms): a long story covers less.

The weights are a logistic regression fitted by `rag-assets fit-gate` on the dev split of
the golden sets (`rag_assets/evaluation/gate_fitting.py`, the procedure and its reliability
curve in `evaluations/gate/`); the threshold is chosen there for a stated share of answerable
questions refused (2 %). The model file records its features, weights, threshold and what it was fitted
on; its version is the hash of what decides.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

FEATURES = (
    "coverage",
    "content_coverage",
    "child_coverage",
    "agreement",
    "dense",
    "bm25",
    "off_lines",
    "unknown_names",
    "terms",
)
MODEL_PATH = Path(__file__).with_name("gate_model.json")


@dataclass(frozen=True)
class GateModel:
    features: tuple[str, ...]
    weights: tuple[float, ...]  # on standardized features
    intercept: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    threshold: float  # refuse below this probability
    fitted: dict = field(default_factory=dict, compare=False)  # procedure, data, figures

    @property
    def version(self) -> str:
        decides = json.dumps([self.features, self.weights, self.intercept, self.mean, self.scale, self.threshold])
        return hashlib.sha256(decides.encode()).hexdigest()[:12]

    def logit(self, values: dict[str, float]) -> float:
        z = self.intercept
        for name, weight, mean, scale in zip(self.features, self.weights, self.mean, self.scale):
            z += weight * (float(values.get(name) or 0.0) - mean) / scale
        return z

    def probability(self, values: dict[str, float]) -> float:
        z = self.logit(values)
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def passes(self, values: dict[str, float]) -> bool:
        return self.probability(values) >= self.threshold

    def to_dict(self) -> dict:
        return {**asdict(self), "version": self.version}

    def save(self, path: Path = MODEL_PATH) -> None:
        path.write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, data: dict) -> "GateModel":
        model = cls(
            tuple(data["features"]),
            tuple(data["weights"]),
            float(data["intercept"]),
            tuple(data["mean"]),
            tuple(data["scale"]),
            float(data["threshold"]),
            data.get("fitted") or {},
        )
        if data.get("version") and data["version"] != model.version:
            raise ValueError(f"gate model {data['version']} does not match its own weights ({model.version})")
        if set(model.features) - set(FEATURES):
            raise ValueError(f"gate model uses unknown features {sorted(set(model.features) - set(FEATURES))}")
        return model

    @classmethod
    def load(cls, path: Path | str = MODEL_PATH) -> "GateModel":
        return _load(str(path))


@lru_cache(maxsize=4)
def _load(path: str) -> GateModel:
    return GateModel.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
