"""Folding of accents and case: one word written several ways compares equal."""

import pytest

from rag_assets.answering.figures import fold_keeping_positions
from rag_assets.text.folding import fold, fold_alphanumeric


@pytest.mark.parametrize(
    "written, folded",
    [
        ("Assuré", "assure"),
        ("ASSURÉ", "assure"),
        ("Prévoyance Générale", "prevoyance generale"),
        ("Cœur, maïs, çà", "cœur, mais, ca"),
        ("Bénéﬁciaire", "beneficiaire"),  # the ligature "ﬁ" a PDF's text layer may hold
        ("Straße", "strasse"),  # casefold, not lower
        ("ＰＴＩＡ", "ptia"),  # fullwidth letters
        ("d’un délai", "d’un delai"),  # apostrophes are the callers' business
    ],
)
def test_fold_drops_accents_and_case(written, folded):
    assert fold(written) == folded


def test_folding_twice_changes_nothing():
    text = "ÉTÉ ℌ ﬁ İ Straße ²"
    assert fold(fold(text)) == fold(text)


def test_fold_alphanumeric_keeps_letters_digits_and_single_spaces():
    assert fold_alphanumeric("  Article 3 – Garanties :\tÉtendue ") == "article 3 garanties etendue"
    assert fold_alphanumeric("L’Assuré") == "lassure"


@pytest.mark.parametrize("text", ["Indemnité : 5 000 € (cinq mille)", "Straße ﬁn İ", "", "e\u0301té"])
def test_fold_keeping_positions_keeps_the_length(text):
    folded = fold_keeping_positions(text)
    assert len(folded) == len(text)
    # each character stands for its own folded form's first character
    assert all(f == (fold(c)[:1] or " ") for c, f in zip(text, folded))


def test_fold_keeping_positions_folds_like_fold():
    assert fold_keeping_positions("Délai d'ATTENTE") == "delai d'attente"
