"""The relevance gate as a calibrated decision (answering/gate.py, evaluation/gate_fitting.py):
a probability from several signals, none a veto, its threshold chosen for a stated refusal
precision, the model file checked against its own version."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_assets.answering.gate import FEATURES, MODEL_PATH, GateModel
from rag_assets.evaluation.gate_fitting import choose_threshold, fit, reliability
from rag_assets.retrieve.query import AnalyzedQuery
from rag_assets.retrieve.scope import DocumentIdentities


def _model(**weights) -> GateModel:
    return GateModel(
        FEATURES, tuple(weights.get(f, 0.0) for f in FEATURES), 0.0, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES), 0.5
    )


def test_the_probability_rises_with_the_signals_the_model_weighs_up():
    model = _model(coverage=4.0, off_lines=-6.0)
    assert model.probability({"coverage": 0.8}) > 0.95
    assert model.probability({"coverage": 0.8, "off_lines": 1.0}) < 0.2
    assert model.probability({"coverage": 1.6, "off_lines": 1.0}) > 0.5  # weighed, not a veto
    assert model.passes({"coverage": 0.8}) and not model.passes({"coverage": -0.5})


def test_a_model_file_whose_weights_do_not_match_its_version_is_refused(tmp_path):
    data = _model(coverage=1.0).to_dict()
    path = tmp_path / "gate.json"
    path.write_text(json.dumps({**data, "weights": [2.0] + list(data["weights"][1:])}))
    with pytest.raises(ValueError, match="does not match"):
        GateModel.load(path)
    path.write_text(
        json.dumps(
            {
                **data,
                "features": ["coverage", "colour"],
                "weights": [1.0, 1.0],
                "mean": [0, 0],
                "scale": [1, 1],
                "version": None,
            }
        )
    )
    with pytest.raises(ValueError, match="unknown features"):
        GateModel.load(path)


def test_the_packaged_model_records_how_it_was_fitted():
    model = GateModel.load(MODEL_PATH)
    assert model.features == FEATURES and 0.0 < model.threshold < 1.0
    assert model.fitted["split"] == "dev" and "rag-assets fit-gate" in model.fitted["procedure"]
    assert model.fitted["out_of_corpus_rows"] > 0 and model.fitted["answered_rows"] > 0


def test_the_fit_separates_what_the_signals_separate():
    rng = np.random.default_rng(7)
    answered = np.column_stack([rng.uniform(0.5, 1.0, 60), rng.uniform(0.0, 1.0, 60)])
    refused = np.column_stack([rng.uniform(0.0, 0.45, 40), rng.uniform(0.0, 1.0, 40)])
    x = np.vstack([answered, refused])
    y = np.array([1] * 60 + [0] * 40, dtype=float)
    weights, intercept, mean, scale = fit(x, y)
    assert weights[0] > 2 * abs(weights[1])  # the informative signal carries the weight
    z = (x - mean) / scale @ weights + intercept
    assert np.mean((z > 0) == (y == 1)) > 0.95


def test_the_threshold_refuses_no_more_answerable_rows_than_its_budget():
    probabilities = np.array([0.05, 0.1, 0.2, 0.3, 0.35, 0.6, 0.7, 0.9, 0.95, 0.97])
    labels = np.array([0, 0, 0, 1, 0, 1, 0, 1, 1, 1])
    # 5 answerable rows: a 20 % budget refuses the lowest one (0.3), halfway to the next (0.6)
    assert choose_threshold(probabilities, labels, budget=0.2) == pytest.approx(0.45)
    assert choose_threshold(probabilities, labels, budget=0.0) == pytest.approx(0.15)  # under 0.3, half of it


def test_the_reliability_table_bins_predictions_against_outcomes():
    table = reliability(np.array([0.05, 0.08, 0.92, 0.97]), np.array([0, 1, 1, 1]), bins=10)
    assert [b["rows"] for b in table] == [2, 2]
    assert table[0]["answered_share"] == 0.5 and table[-1]["answered_share"] == 1.0


def _identities():
    return DocumentIdentities.of(
        {
            "a": {"title": "Assurance habitation Mila", "file_name": "mila-mrh.pdf", "language": "fr"},
            "b": {"title": "Protection juridique MAIF", "file_name": "maif-pj.pdf", "language": "fr"},
        }
    )


def _scope(question: str):
    known = {"voitur", "vacanc", "vol", "clé"}
    return _identities().scope(AnalyzedQuery.of(question), lambda t: t in known, lambda t: False)


def test_a_town_in_a_story_is_an_unknown_name_but_no_contract_the_reader_holds():
    scope = _scope("En vacances à Porto, on m'a volé ma voiture avec les clés : suis-je couvert ?")
    assert "Porto" in scope.unknown_names and scope.unheld == ()


@pytest.mark.parametrize(
    "question",
    [
        "Chez Groupama, ma voiture volée est-elle couverte ?",
        "Je suis assurée à la Macif : ma voiture volée est-elle couverte ?",
        "Mon contrat Generali couvre-t-il le vol de ma voiture ?",
    ],
)
def test_an_insurer_or_contract_the_reader_says_they_hold_is_unheld_when_no_document_names_it(question):
    scope = _scope(question)
    assert scope.unheld and set(scope.unheld) <= set(scope.unknown_names)
