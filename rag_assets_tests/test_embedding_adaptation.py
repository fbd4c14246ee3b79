"""Domain adaptation of e5-local: the pairs the law articles give (definitions, first sentence and
the rest), the articles an evaluation set cites left out, batches without an article twice."""

from __future__ import annotations

import json

from rag_assets import cli
from rag_assets.embedding import adaptation
from rag_assets.embedding.adaptation import Pair

ARTICLE = """# Article L999-1

Pour l'application du présent titre, l'expression « véhicule terrestre à moteur » désigne tout
engin circulant sur le sol et mû par une force motrice quelconque.

L'assuré est tenu de déclarer le sinistre à l'assureur dans le délai fixé par le contrat, qui ne
peut être inférieur à cinq jours ouvrés. Le délai est ramené à deux jours ouvrés en cas de vol, et
la déchéance ne peut être opposée que si le retard a causé un préjudice à l'assureur, comme le
prévoit l'art. L. 113-2 du présent code pour tous les contrats.

**Liens relatifs à cet article**

_Cité par_:

  - Code des assurances - art. L211-1 (V)
"""

LIST_DEFINITION = """# Article R999-2

1° L'expression : " entreprise mère " désigne :

a) Une entreprise qui contrôle de manière exclusive une autre entreprise au sens du code de commerce ;

b) Une entreprise qui exerce une influence dominante sur une autre entreprise en vertu d'un contrat.
"""


def test_an_article_gives_definition_clause_and_paragraph_pairs():
    pairs = adaptation.article_pairs(ARTICLE, "code/Article L999-1.md")
    by_kind = {kind: [p for p in pairs if p.kind == kind] for kind in adaptation.KINDS}
    assert [p.query for p in by_kind["definition"]] == ["véhicule terrestre à moteur"]
    assert by_kind["definition"][0].passage.startswith("Pour l'application du présent titre")
    (clause,) = by_kind["clause"]
    assert clause.query.startswith("Pour l'application du présent titre") and clause.query.endswith("quelconque.")
    assert clause.passage.startswith("L'assuré est tenu de déclarer")
    (paragraph,) = by_kind["paragraph"]
    assert paragraph.query.startswith("L'assuré est tenu") and paragraph.passage.startswith("Le délai est ramené")
    assert "art. L. 113-2 du présent code" in paragraph.passage  # an abbreviation ends no sentence
    assert not any("Liens relatifs" in p.passage or "L211-1" in p.passage or "# Article" in p.query for p in pairs)
    assert {p.source for p in pairs} == {"code/Article L999-1.md"}


def test_a_definition_announcing_a_list_takes_the_items():
    (definition,) = [p for p in adaptation.article_pairs(LIST_DEFINITION, "s") if p.kind == "definition"]
    assert definition.query == "entreprise mère"
    assert "contrôle de manière exclusive" in definition.passage


CITED = f"{adaptation.CORPUS}/01. Partie/Article L999-1 - 1.md"


def _corpora(tmp_path):
    """Two articles (one cited by a question set) and the corpus's README."""
    corpus = tmp_path / "corpora" / adaptation.CORPUS / "01. Partie"
    corpus.mkdir(parents=True)
    (corpus / "Article L999-1 - 1.md").write_text(ARTICLE, encoding="utf-8")
    (corpus / "Article R999-2 - 2.md").write_text(LIST_DEFINITION, encoding="utf-8")
    (corpus.parent / "SOURCE-README.md").write_text("# Code des assurances\n\nCe dépôt contient le code.\n")
    questions = tmp_path / "golden.jsonl"
    questions.write_text(json.dumps({"id": "q", "evidence": [{"document": CITED, "quote": "x"}]}) + "\n\n")
    return tmp_path / "corpora", questions


def test_articles_an_evaluation_set_cites_are_left_out(tmp_path):
    corpora, questions = _corpora(tmp_path)
    excluded = adaptation.cited_documents([questions])
    pairs, articles = adaptation.corpus_pairs(corpora, excluded)
    assert excluded == {CITED} and articles == 1
    assert pairs and {p.source for p in pairs} == {f"{adaptation.CORPUS}/01. Partie/Article R999-2 - 2.md"}


def test_selection_keeps_definitions_first():
    pairs = [Pair(f"q{i}", "p", f"a{i}", "clause") for i in range(5)] + [Pair("terme", "p", "d", "definition")]
    chosen = adaptation.select_pairs(pairs, 3, seed=1)
    assert len(chosen) == 3 and chosen[0].kind == "definition"
    assert adaptation.select_pairs(pairs, 3, seed=1) == chosen  # seeded


def test_a_batch_never_holds_two_pairs_of_one_article():
    pairs = [Pair(f"q{i}", f"p{i}", f"article{i % 3}", "paragraph") for i in range(12)]
    batches = adaptation.batches(pairs, size=4, seed=0)
    assert sorted(p.query for b in batches for p in b) == sorted(p.query for p in pairs)
    for batch in batches:
        assert 2 <= len(batch) <= 4 and len({p.source for p in batch}) == len(batch)


def test_the_command_counts_the_pairs_without_training(tmp_path, capsys):
    corpora, questions = _corpora(tmp_path)
    argv = ["adapt-embedder", "--corpora", str(corpora), "--exclude", str(questions), "--dry-run"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "1 articles (1 cited documents left out)" in out and "[definition] 'entreprise mère'" in out
