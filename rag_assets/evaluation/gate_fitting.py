"""The relevance gate fitted on the dev split of the golden sets (never on test, never on the
sealed set): a logistic regression over the gate's features (`answering/gate.py`), its
threshold chosen for a stated share of answerable questions refused, its reliability curve drawn.

Rows, each a question asked of a store, the gate's features read from the first pass of
`Retriever.assess` (the hybrid top 10):

* a dev question asked of its own set's store: **1** when a parent holding its evidence is
  among the candidates (the retrieved evidence answers), **0** for an out-of-corpus trap;
  an answerable question whose evidence was not retrieved is left out (refusing it is a
  retrieval miss, not a gate error, and it says nothing either way);
* a dev question asked of **another** set's store: **0** when it names its documents in its
  own store (its scope there is not empty: "chez MAIF", "le contrat MX-200"), for the store
  asked holds no document it is about. A question naming nothing ("quel est le délai de
  prescription ?") may be answered by any policy and is left out;
* a dev question asked of a store holding **part** of its set's documents (`--part`), none of
  those its evidence lies in: **0** when it names its documents, the reader's insurer often
  still there with other products ("MAIF, mon bateau…" without the boat policy), the kind of
  question a help desk gets about products the collection lacks.

A question naming a contract no document is (`unheld`) is refused by rule and gives no row.
The features are standardized, the weights fitted by L2-penalised maximum likelihood
(C = 1). Probabilities out of 5-fold cross-validation (folds by question, so a question's
rows stay together) draw the reliability curve and choose the threshold: the highest that
refuses at most `ANSWERED_REFUSED` of the rows whose evidence answers (the refusal rate
golden-insurance must show), so it refuses every out-of-corpus row that this budget allows;
the refusals' precision at that threshold is reported beside it. The final weights are
fitted on every row.

    rag-assets fit-gate --part golden-insurance=STORE   # the golden sets' eval stores, and a store of
                             # part of golden-insurance's documents; writes
                             # rag_assets/answering/gate_model.json and evaluations/gate/
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from rag_assets.answering.gate import FEATURES, MODEL_PATH, GateModel
from rag_assets.answering.retrieval import Retriever
from rag_assets.evaluation import provenance, targets
from rag_assets.evaluation.evaluate import golden_inputs
from rag_assets.evaluation.questions import load_questions
from rag_assets.evaluation.splits import in_split
from rag_assets.retrieve.knowledge_base import KnowledgeBase
from rag_assets.settings import PROJECT_ROOT

# the golden sets, each asked of its own store and of the others'
SETS = ("golden-insurance", "golden-sample", "golden-shared")
ANSWERED_REFUSED = 0.02  # the share of answerable rows the threshold may refuse (golden-insurance's must-show)
FOLDS = 5
C = 1.0  # inverse L2 strength on standardized features
CANDIDATES = 10  # the answering retrieval's first pass (RetrievalOptions.candidates)
OUT = PROJECT_ROOT / "evaluations" / "gate"


@dataclass
class Row:
    question_id: str
    asked_of: str  # the set whose store was asked
    label: int
    kind: str  # evidence-retrieved | out-of-corpus-trap | other-store
    features: dict[str, float]


def _fold_of(question_id: str) -> int:
    return int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % FOLDS


def collect_rows(stores: dict[str, KnowledgeBase], parts: dict[str, list] | None = None, log=print) -> list[Row]:
    """`stores`: set name -> its KnowledgeBase; `parts`: set name -> stores holding only some
    of its documents."""
    rows: list[Row] = []
    questions = {name: in_split(load_questions(targets.GOLDEN[name].questions_path), "dev") for name in stores}
    for name, kb in stores.items():
        qrels = golden_inputs(targets.GOLDEN[name], kb, split="dev")["qrels"]
        for question in questions[name]:
            hits, gate = _assess(kb, question.question, question.groups)
            if gate is None:
                continue
            if question.trap == "out-of-corpus":
                rows.append(Row(question.id, name, 0, "out-of-corpus-trap", gate["features"]))
            elif set(qrels.get(question.id, {})) & {h.parent_id for h in hits}:
                rows.append(Row(question.id, name, 1, "evidence-retrieved", gate["features"]))
        log(f"{name}: {sum(r.asked_of == name for r in rows)} rows from its own dev questions")
    for name, own in stores.items():
        for other, kb in stores.items():
            if other == name:
                continue
            count = 0
            for question in questions[name]:
                if question.trap == "out-of-corpus" or not own.scope(question.question).document_ids:
                    continue
                _, gate = _assess(kb, question.question, question.groups)
                if gate is not None:
                    rows.append(Row(question.id, other, 0, "other-store", gate["features"]))
                    count += 1
            log(f"{name} dev questions naming their documents, asked of {other}: {count} rows")
    for name, partial in (parts or {}).items():
        for number, kb in enumerate(partial, start=1):
            held = golden_inputs(targets.GOLDEN[name], kb, split="dev")["qrels"]
            count = 0
            for question in questions[name]:
                if (
                    question.trap == "out-of-corpus"
                    or question.id in held
                    or not stores[name].scope(question.question).document_ids
                ):
                    continue
                _, gate = _assess(kb, question.question, question.groups)
                if gate is not None:
                    rows.append(Row(question.id, f"{name} part {number}", 0, "documents-left-out", gate["features"]))
                    count += 1
            log(f"{name} dev questions naming their documents, asked of part {number} without them: {count} rows")
    return rows


def _assess(kb, question: str, groups) -> tuple[list, dict | None]:
    """The first pass's hits and gate evidence; None for the evidence when the question names a
    contract no document is (refused by rule, not by the fitted weights: no row)."""
    hits, _, gate = Retriever(kb, list(groups) or None).assess(question, CANDIDATES)
    return hits, None if gate["unheld"] else gate


def _matrix(rows: list[Row]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[r.features[f] for f in FEATURES] for r in rows], dtype=float)
    y = np.array([r.label for r in rows], dtype=float)
    return x, y


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """(weights, intercept, mean, scale): L2-penalised logistic regression on standardized
    features. Written here, not taken from scikit-learn: one convex fit of a few weights is
    a dozen lines over SciPy (already installed), the other a package for this alone."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale

    def loss(theta):
        w, b = theta[:-1], theta[-1]
        logits = z @ w + b
        nll = np.sum(np.logaddexp(0, logits) - y * logits)
        p = 1 / (1 + np.exp(-logits))
        grad_w = z.T @ (p - y) + w / C
        return nll + 0.5 * np.dot(w, w) / C, np.append(grad_w, np.sum(p - y))

    result = minimize(loss, np.zeros(z.shape[1] + 1), jac=True, method="L-BFGS-B")
    return result.x[:-1], float(result.x[-1]), mean, scale


def _model(weights, intercept, mean, scale, threshold: float, fitted: dict) -> GateModel:
    return GateModel(
        FEATURES,
        tuple(round(float(w), 6) for w in weights),
        round(intercept, 6),
        tuple(round(float(m), 6) for m in mean),
        tuple(round(float(s), 6) for s in scale),
        round(threshold, 4),
        fitted,
    )


def cross_validated(rows: list[Row]) -> np.ndarray:
    x, y = _matrix(rows)
    folds = np.array([_fold_of(r.question_id) for r in rows])
    probabilities = np.zeros(len(rows))
    for k in range(FOLDS):
        train, held = folds != k, folds == k
        if not held.any():
            continue
        model = _model(*fit(x[train], y[train]), threshold=0.5, fitted={})
        probabilities[held] = [model.probability(dict(zip(FEATURES, v))) for v in x[held]]
    return probabilities


def choose_threshold(probabilities: np.ndarray, labels: np.ndarray, budget: float = ANSWERED_REFUSED) -> float:
    """The highest threshold (refusing under it) that refuses at most `budget` of the rows
    whose evidence answers: every out-of-corpus refusal that budget allows. Halfway between
    the last probability it refuses and the next, so a tie does not decide."""
    answered = np.sort(probabilities[labels == 1])
    allowed = int(np.floor(budget * len(answered)))  # answered rows that may fall under it
    if allowed >= len(answered):
        return 1.0
    upper = answered[allowed]
    lower = answered[allowed - 1] if allowed else 0.0
    return float((lower + upper) / 2)


def reliability(probabilities: np.ndarray, labels: np.ndarray, bins: int = 10) -> list[dict]:
    edges = np.linspace(0, 1, bins + 1)
    table = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (probabilities >= lo) & ((probabilities < hi) | (hi == 1.0))
        if inside.any():
            table.append(
                {
                    "bin": [round(lo, 2), round(hi, 2)],
                    "rows": int(inside.sum()),
                    "mean_probability": round(float(probabilities[inside].mean()), 4),
                    "answered_share": round(float(labels[inside].mean()), 4),
                }
            )
    return table


def _plot(table: list[dict], probabilities: np.ndarray, labels: np.ndarray, threshold: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6, 7), gridspec_kw={"height_ratios": [3, 1]}, sharex=True)
    top.plot([0, 1], [0, 1], ls="--", c="grey", lw=1, label="perfectly calibrated")
    top.plot(
        [b["mean_probability"] for b in table],
        [b["answered_share"] for b in table],
        "o-",
        label="gate (5-fold cross-validated)",
    )
    for b in table:
        top.annotate(
            str(b["rows"]),
            (b["mean_probability"], b["answered_share"]),
            textcoords="offset points",
            xytext=(4, -10),
            fontsize=7,
        )
    top.axvline(threshold, c="tab:red", lw=1, label=f"threshold {threshold:.2f}")
    top.set_ylabel("share of rows whose evidence answers")
    top.set_title("Relevance gate: reliability on golden dev rows")
    top.legend(loc="upper left", fontsize=8)
    bottom.hist(
        [probabilities[labels == 1], probabilities[labels == 0]],
        bins=20,
        range=(0, 1),
        stacked=True,
        label=["evidence retrieved", "out of corpus"],
    )
    bottom.axvline(threshold, c="tab:red", lw=1)
    bottom.set_xlabel("predicted probability that the retrieved evidence answers")
    bottom.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fit_gate(
    stores: dict[str, KnowledgeBase], parts: dict[str, list] | None = None, write: bool = True, log=print
) -> GateModel:
    rows = collect_rows(stores, parts, log)
    x, y = _matrix(rows)
    probabilities = cross_validated(rows)
    threshold = choose_threshold(probabilities, y)
    refused = probabilities < threshold
    figures = {
        "rows": len(rows),
        "answered_rows": int(y.sum()),
        "out_of_corpus_rows": int(len(y) - y.sum()),
        "by_kind": {k: sum(r.kind == k for r in rows) for k in dict.fromkeys(r.kind for r in rows)},
        "cross_validated": {
            "out_of_corpus_refused": round(float(refused[y == 0].mean()), 4) if (y == 0).any() else None,
            "answered_refused": round(float(refused[y == 1].mean()), 4) if (y == 1).any() else None,
            "refusal_precision": round(float((y[refused] == 0).mean()), 4) if refused.any() else None,
            "log_loss": round(
                float(
                    -np.mean(
                        y * np.log(np.clip(probabilities, 1e-9, 1))
                        + (1 - y) * np.log(np.clip(1 - probabilities, 1e-9, 1))
                    )
                ),
                4,
            ),
        },
    }
    weights, intercept, mean, scale = fit(x, y)
    fitted = {
        "procedure": "rag-assets fit-gate (rag_assets/evaluation/gate_fitting.py)",
        "sets": list(stores),
        "split": "dev",
        "answered_refused_budget": ANSWERED_REFUSED,
        "folds": FOLDS,
        "C": C,
        "stores": {
            name: provenance.combined(sorted(kb.document(d).get("sha256", "") for d in kb.document_ids()))
            for name, kb in stores.items()
        },
        "parts": {
            name: [sorted(kb.document(d).get("file_name", d) for d in kb.document_ids()) for kb in partial]
            for name, partial in (parts or {}).items()
        },
        "code": provenance.code_version().get("git_commit"),
        "fitted_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        **figures,
    }
    model = _model(weights, intercept, mean, scale, threshold, fitted)
    table = reliability(probabilities, y)
    log(json.dumps({"threshold": threshold, **figures}, indent=2))
    log("weights (standardized): " + ", ".join(f"{f} {w:+.2f}" for f, w in zip(FEATURES, model.weights)))
    if write:
        model.save(MODEL_PATH)
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / "fit.json").write_text(
            json.dumps(
                {
                    "model": model.to_dict(),
                    "reliability": table,
                    "rows": [
                        {
                            "question": r.question_id,
                            "asked_of": r.asked_of,
                            "label": r.label,
                            "kind": r.kind,
                            "cv_probability": round(float(p), 4),
                            **r.features,
                        }
                        for r, p in zip(rows, probabilities)
                    ],
                },
                ensure_ascii=False,
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
        _plot(table, probabilities, y, threshold, OUT / "reliability.png")
        log(
            f"wrote {MODEL_PATH.relative_to(PROJECT_ROOT)}, {(OUT / 'fit.json').relative_to(PROJECT_ROOT)}, "
            f"{(OUT / 'reliability.png').relative_to(PROJECT_ROOT)}"
        )
    return model
