"""Ablation of the retrieval components on a split of a golden set (parents judged by
evidence quotes) or a benchmark (its own queries and qrels, records judged): each component
added to plain RRF alone, the tuned fusion, everything, and everything but one. Every
variant is the product's own retrieval (`KnowledgeBase.retrieve` through `run_engines`) with
its switches set; scores are ranx's, with percentile-bootstrap CIs on the same resamples for
every variant and a CI of each variant's paired difference with plain RRF. Recall@5 is also
broken down by trap kind (golden sets) and by whether acronym resolution or the thesaurus
changes the question at all (what "with and without expansion" can move).

    result = ablation("golden-insurance", settings, split="test", store="/path/to/store")
    print(result["markdown"])
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from rag_assets.evaluation import metrics as m
from rag_assets.evaluation import provenance, targets
from rag_assets.evaluation.engines import DEPTH, run_engines
from rag_assets.evaluation.evaluate import benchmark_inputs, golden_inputs
from rag_assets.evaluation.fusion_tuning import tuning_path
from rag_assets.retrieve.fusion import PLAIN_RRF, Fusion
from rag_assets.retrieve.knowledge_base import KnowledgeBase
from rag_assets.retrieve.query import AnalyzedQuery
from rag_assets.settings import PROJECT_ROOT, Settings
from rag_assets.text.thesaurus import load_thesaurus

METRICS = ("recall@5", "ndcg@10", "mrr@10")
BASELINE = "rrf"
ENGINES = ("bm25", "dense")
HYBRIDS = (BASELINE, "tuned fusion", "default")  # compared with each engine alone
COMPONENTS = ("scope", "thesaurus", "acronyms", "definitions", "everyday", "prf")


def variants(tuned: Fusion, default: dict | None = None) -> dict[str, dict]:
    """name -> KnowledgeBase switches (fusion, use_<component>); with the settings' ``default``
    (`default_config`), also that configuration with PRF and without the everyday words."""
    none = {f"use_{c}": False for c in COMPONENTS}
    every = {f"use_{c}": c != "prf" for c in COMPONENTS}
    out = {BASELINE: {**none, "fusion": PLAIN_RRF}}
    for component in COMPONENTS:
        out[f"+{component}"] = {**none, f"use_{component}": True, "fusion": PLAIN_RRF}
    out["tuned fusion"] = {**none, "fusion": tuned}
    out["all, plain RRF"] = {**every, "fusion": PLAIN_RRF}
    out["all"] = {**every, "fusion": tuned}
    for component in ("scope", "thesaurus", "acronyms", "definitions", "everyday"):
        out[f"all - {component}"] = {**every, f"use_{component}": False, "fusion": tuned}
    out["all + prf"] = {**every, "use_prf": True, "fusion": tuned}
    if default:
        switches = {f"use_{c}": default[c] for c in COMPONENTS}
        out["default"] = {**switches, "fusion": Fusion.parse(default["fusion"])}
        out["default + prf"] = {**switches, "use_prf": True, "fusion": Fusion.parse(default["fusion"])}
        out["default - everyday"] = {**switches, "use_everyday": False, "fusion": Fusion.parse(default["fusion"])}
    return out


def reference_of(variant: str) -> str | None:
    """The variant one component is added to or removed from ("all - scope" -> "all")."""
    for reference in ("all", "default"):
        if variant.startswith((f"{reference} - ", f"{reference} + ")):
            return reference
    return None


def tuned_fusion(name: str, settings: Settings) -> tuple[Fusion, str]:
    """The fusion tuned on ``name``'s dev split when recorded, else the configured one
    (tuned on golden-insurance's dev split); and which of the two it is."""
    path = tuning_path(name)
    if path.exists():
        return Fusion.parse(json.loads(path.read_text(encoding="utf-8"))["chosen"]["fusion"]), f"{name} dev split"
    return Fusion.parse(settings.fusion), "the default, settings.fusion"


def ablation(
    name: str,
    settings: Settings,
    split: str = "test",
    store: str = "",
    only: tuple[str, ...] = (),
    candidates: int = 2 * DEPTH,
    resamples: int = m.RESAMPLES,
    seed: int = m.SEED,
    log=print,
    write: bool = True,
    queries: int = 0,
    distractors: int = 0,
) -> dict:
    """``candidates``: children each engine returns; 2 × depth as `rag-assets eval` ranks, or
    the product's served depth (settings.candidates_per_engine) to see what `search` gives.
    ``queries``/``distractors``: a benchmark slice, as `rag-assets eval` builds it."""
    if name not in targets.target_names():
        raise ValueError(f"unknown evaluation target {name!r}; known: {', '.join(targets.target_names())}")
    if store:
        settings = settings.model_copy(update={"store": Path(store).resolve()})
    tuned, tuned_on = tuned_fusion(name, settings)
    chosen = {
        k: v for k, v in variants(tuned, default_config(settings)).items() if not only or k in only or k == BASELINE
    }
    prepared = None
    ranked: dict[str, dict[str, list[str]]] = {}
    configs: dict[str, dict] = {}
    for variant, switches in chosen.items():
        kb = KnowledgeBase.from_settings(settings, reranker=None, candidates=candidates, **switches)
        if prepared is None:
            prepared = (
                benchmark_inputs(targets.load_target_benchmark(name, queries, distractors), kb, split=split)
                if targets.is_benchmark(name)
                else golden_inputs(targets.GOLDEN[name], kb, split=split)
            )
            log(f"{name} {split or 'all'}: {len(prepared['qrels'])} judged questions")
        requests = [r for r in prepared["requests"] if r.qid in prepared["qrels"]]
        runs = run_engines(kb, requests, candidates=candidates, unit_of=prepared["unit_of"])
        if variant == BASELINE:
            ranked["bm25"], ranked["dense"] = runs.units["bm25"], runs.units["dense"]
            configs["bm25"] = configs["dense"] = {c: False for c in COMPONENTS}
        ranked[variant] = runs.units["hybrid"]
        configs[variant] = kb.retrieval_config()
        log(f"  {variant}: ranked")
    qrels = prepared["qrels"]
    scores = m.score_engines(qrels, ranked, METRICS)
    counts = m.bootstrap_counts(len(scores.qids), resamples, seed)
    rows = {}
    for variant, per_metric in scores.scores.items():
        rows[variant] = {metric: m.interval(values, counts).to_dict() for metric, values in per_metric.items()}
        if variant != BASELINE:
            rows[variant].update(
                {
                    f"{metric} - rrf": m.interval(values - scores.scores[BASELINE][metric], counts).to_dict()
                    for metric, values in per_metric.items()
                }
            )
    # does the hybrid beat the better engine alone? paired, on the same resamples
    versus_engines = {
        variant: {
            f"{metric} - {engine}": m.interval(
                scores.scores[variant][metric] - scores.scores[engine][metric], counts
            ).to_dict()
            for engine in ENGINES
            for metric in METRICS
        }
        for variant in HYBRIDS
        if variant in scores.scores
    }
    # what one component does where the others are: paired with the variant it changes
    versus_reference = {
        variant: {
            "reference": reference,
            **{
                metric: m.interval(scores.scores[variant][metric] - scores.scores[reference][metric], counts).to_dict()
                for metric in METRICS
            },
        }
        for variant in scores.scores
        if (reference := reference_of(variant)) in scores.scores
    }
    questions = prepared["questions"]
    traps = {q: (questions[q].trap if q in questions else None) or "none" for q in scores.qids}
    by_trap = m.breakdown(scores, traps, resamples, seed, ("recall@5",))
    texts = {r.qid: r.text for r in requests}
    by_expansion = {
        kind: m.breakdown(scores, labels, resamples, seed, ("recall@5",))
        for kind, labels in expansion_labels(kb, {q: texts[q] for q in scores.qids}, questions).items()
    }
    result = {
        "target": targets.label_of(name, queries, distractors),
        "split": split or "all",
        "questions": len(scores.qids),
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "store": str(settings.store),
        "code": provenance.code_version().get("git_commit"),
        "tuned_fusion": tuned.spec(),
        "tuned_on": tuned_on,
        "default": default_config(settings),
        "candidates_per_engine": candidates,
        "configs": configs,
        "bootstrap": {"resamples": resamples, "seed": seed, "confidence": m.CONFIDENCE},
        "rows": rows,
        "versus_engines": versus_engines,
        "versus_reference": versus_reference,
        "by_trap": by_trap,
        "by_expansion": by_expansion,
    }
    result["markdown"] = markdown(result)
    if write:
        served = "" if candidates == 2 * DEPTH else f"-c{candidates}"
        stem = PROJECT_ROOT / "evaluations" / "ablations" / f"{result['target']}-{split or 'all'}{served}"
        stem.parent.mkdir(parents=True, exist_ok=True)
        stem.with_suffix(".json").write_text(
            json.dumps(m.json_safe(result), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
        )
        stem.with_suffix(".md").write_text(result["markdown"] + "\n", encoding="utf-8")
        log(f"written to {stem.relative_to(PROJECT_ROOT)}.md and .json")
    return result


def expansion_labels(
    kb: KnowledgeBase, texts: dict[str, str], questions: dict | None = None
) -> dict[str, dict[str, str]]:
    """qid -> "changed" / "unchanged" for each expansion: whether acronym resolution (the
    store's dictionary, which ``kb`` has built by retrieving) or the thesaurus adds anything
    to the question; only changed questions can move with the switch. For golden questions
    (evidence quotes), also "synonym-linked": see `synonym_linked`."""
    thesaurus = load_thesaurus()
    labels = {
        "acronyms": {q: "changed" if kb.acronyms.resolve_traced(t)[1] else "unchanged" for q, t in texts.items()},
        "thesaurus": {
            q: "changed" if thesaurus.expand(AnalyzedQuery.of(t)).words else "unchanged" for q, t in texts.items()
        },
    }
    if questions:
        labels["synonyms"] = {
            q: "synonym-linked" if q in questions and synonym_linked(t, questions[q], thesaurus) else "other"
            for q, t in texts.items()
        }
    return labels


def synonym_linked(text: str, question, thesaurus) -> bool:
    """The evidence quotes share at most one stem with the question, and the thesaurus labels
    it adds share at least one more: a question whose way to its evidence is a synonym
    ("vétusté" → "abattement", "voiles" → "voilure")."""
    asked = set(AnalyzedQuery.of(text).terms)
    quoted = {t for item in question.evidence for t in AnalyzedQuery.of(item.quote, question.language).terms}
    added = {
        t
        for word in thesaurus.expand(AnalyzedQuery.of(text)).words
        for t in AnalyzedQuery.of(word, question.language).terms
    }
    return len(asked & quoted) <= 1 and bool((added & quoted) - asked)


def default_config(settings: Settings) -> dict:
    """The switches and fusion the settings give (the product's default)."""
    return {
        "fusion": Fusion.parse(settings.fusion).spec(),
        "scope": settings.use_scope,
        "thesaurus": settings.use_thesaurus,
        "acronyms": settings.use_acronyms,
        "prf": settings.use_prf,
        "definitions": settings.use_definitions,
        "everyday": settings.use_everyday,
    }


def _is_default(config: dict, default: dict) -> bool:
    return bool(default) and all(config.get(k) == v for k, v in default.items())


def _cell(cell: dict | None, signed: bool = False) -> str:
    if not cell:
        return ""
    f = "{:+.3f}" if signed else "{:.3f}"
    mark = " *" if signed and not cell["ci_low"] <= 0 <= cell["ci_high"] else ""
    return f"{f.format(cell['mean'])} [{f.format(cell['ci_low'])}, {f.format(cell['ci_high'])}]{mark}"


def markdown(result: dict) -> str:
    lines = [
        f"### {result['target']}, {result['split']} split ({result['questions']} judged questions, "
        f"{result['candidates_per_engine']} children per engine)",
        "",
        "| variant | recall@5 | nDCG@10 | MRR@10 | Δ recall@5 vs RRF | Δ nDCG@10 vs RRF | Δ MRR@10 vs RRF |",
        "|---|---|---|---|---|---|---|",
    ]
    for variant, row in result["rows"].items():
        default = _is_default(result["configs"].get(variant, {}), result.get("default"))
        name = f"**{variant}{'' if variant == 'default' else ' (default)'}**" if default else variant
        lines.append(
            f"| {name} | "
            + " | ".join(_cell(row.get(metric)) for metric in METRICS)
            + " | "
            + " | ".join(_cell(row.get(f"{metric} - rrf"), signed=True) for metric in METRICS)
            + " |"
        )
    lines += [
        "",
        f"Mean [95 % bootstrap CI, {result['bootstrap']['resamples']} resamples, seed "
        f"{result['bootstrap']['seed']}]; * = the paired difference's CI excludes 0. "
        "rrf = plain RRF (k = 60, equal weights), no scope, thesaurus, acronyms, glossary lead, "
        "everyday-word fields or PRF; "
        "bm25 and dense are "
        f"its two engines; tuned fusion = `{result['tuned_fusion']}` "
        f"({result.get('tuned_on', 'dev split')}).",
    ]
    versus = result.get("versus_engines") or {}
    if versus:
        lines += [
            "",
            "Hybrid against each engine alone (paired differences, same resamples):",
            "",
            "| variant | "
            + " | ".join(f"Δ {_LABELS[metric]} vs {engine}" for metric in ("ndcg@10", "recall@5") for engine in ENGINES)
            + " |",
            "|---|" + "---|" * 2 * len(ENGINES),
        ]
        for variant, cells in versus.items():
            lines.append(
                f"| {variant} | "
                + " | ".join(
                    _cell(cells[f"{metric} - {engine}"], signed=True)
                    for metric in ("ndcg@10", "recall@5")
                    for engine in ENGINES
                )
                + " |"
            )
    changed = result.get("versus_reference") or {}
    if changed:
        lines += [
            "",
            "One component added or removed, against the variant it changes (paired differences, same resamples):",
            "",
            "| variant | against | " + " | ".join(f"Δ {_LABELS[metric]}" for metric in METRICS) + " |",
            "|---|---|" + "---|" * len(METRICS),
        ]
        for variant, cells in changed.items():
            lines.append(
                f"| {variant} | {cells['reference']} | "
                + " | ".join(_cell(cells[metric], signed=True) for metric in METRICS)
                + " |"
            )
    traps = result.get("by_trap") or {}
    if len(traps) > 1:
        lines += ["", "recall@5 by trap kind:", "", *_breakdown_table(result, traps)]
    for kind, groups in (result.get("by_expansion") or {}).items():
        if "changed" in groups:
            lines += [
                "",
                f"recall@5 where {kind} {'resolution ' if kind == 'acronyms' else ''}changes the question or not:",
                "",
                *_breakdown_table(result, groups),
            ]
        elif "synonym-linked" in groups:
            lines += [
                "",
                "recall@5 of the questions linked to their evidence through the thesaurus only "
                "(≤ 1 shared stem, the added labels share more):",
                "",
                *_breakdown_table(result, groups),
            ]
    return "\n".join(lines)


_LABELS = {"ndcg@10": "nDCG@10", "recall@5": "recall@5", "mrr@10": "MRR@10"}


def _breakdown_table(result: dict, groups: dict) -> list[str]:
    lines = [
        "| variant | " + " | ".join(f"{g} (n={_n(groups[g])})" for g in groups) + " |",
        "|---|" + "---|" * len(groups),
    ]
    for variant in result["rows"]:
        lines.append(
            f"| {variant} | " + " | ".join(f"{groups[g][variant]['recall@5']['mean']:.3f}" for g in groups) + " |"
        )
    return lines


def _n(per_variant: dict) -> int:
    return next(iter(per_variant.values()))["recall@5"]["n"]
