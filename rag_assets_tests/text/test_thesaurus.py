"""Thesaurus expansion: the shipped thesaurus is sourced, and expansion weights terms as promised."""

import json
import re
from functools import lru_cache
from pathlib import Path

import pytest

from rag_assets.evaluation.evidence import words
from rag_assets.retrieve.query import AnalyzedQuery, analyze
from rag_assets.text.acronyms import is_acronym
from rag_assets.text.thesaurus import (
    DEFAULT_PATH,
    ENV,
    MAX_ADDED,
    Thesaurus,
    ThesaurusError,
    expand,
    load_thesaurus,
)

SHIPPED = DEFAULT_PATH / "fr-insurance.json"


def q(text: str) -> AnalyzedQuery:
    return AnalyzedQuery.of(text, "fr")


# -- the shipped thesaurus -------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped() -> Thesaurus:
    return Thesaurus.load(SHIPPED)


def labels(concept, kinds=("prefLabel", "altLabel")):
    return [(kind, language, label) for kind, language, label in concept.all_labels() if kind in kinds]


def test_the_shipped_thesaurus_validates_and_every_concept_is_sourced(shipped):
    assert 80 <= len(shipped) <= 150
    for concept in shipped.concepts.values():
        assert concept.sources, concept.id
        for source in concept.sources:
            assert len(source["quote"].split()) <= 25, (concept.id, source["quote"])
            assert not Path(source["document"]).is_absolute() and source["document"].startswith("corpora/")


def test_every_preferred_and_alternative_label_is_written_in_a_quote_of_its_concept(shipped):
    """An equivalence is backed by its sources: each label a document uses is quoted (hidden
    labels are the users' words, backed by the concept's definition)."""
    for concept in shipped.concepts.values():
        quotes = [s["quote"] for s in concept.sources]
        for kind, language, label in labels(concept):
            if is_acronym(label):
                slashless = [re.sub(r"\s*/\s*", "/", quote) for quote in quotes]
                assert any(re.search(rf"(?<![\w/]){re.escape(label)}(?![\w/])", quote) for quote in slashless), (
                    concept.id,
                    label,
                )
            else:
                sequence = " " + " ".join(analyze(label, language)) + " "
                assert any(sequence in " " + " ".join(analyze(quote, language)) + " " for quote in quotes), (
                    concept.id,
                    kind,
                    label,
                )


def test_no_label_names_two_concepts(shipped):
    seen = {}
    for concept in shipped.concepts.values():
        for _, _, label in concept.all_labels():
            key = label if is_acronym(label) else tuple(analyze(label, "fr"))
            assert seen.setdefault(key, concept.id) == concept.id, (label, seen[key], concept.id)


@lru_cache(maxsize=64)
def _document_words(path: Path) -> str:
    if path.suffix.lower() == ".pdf":
        import pypdfium2 as pdfium

        document = pdfium.PdfDocument(str(path))
        try:
            text = "\n".join(document[i].get_textpage().get_text_range() for i in range(len(document)))
        finally:
            document.close()
    else:
        text = path.read_text(encoding="utf-8", errors="replace")
    return " " + " ".join(words(text)) + " "


def test_every_quote_is_found_in_its_shared_document(shipped, shared_dir):
    missing = []
    for concept in shipped.concepts.values():
        for source in concept.sources:
            path = shared_dir / source["document"]
            if not path.exists():
                missing.append((concept.id, source["document"], "no such document"))
            elif " " + " ".join(words(source["quote"])) + " " not in _document_words(path):
                missing.append((concept.id, source["document"], source["quote"]))
    assert not missing, missing


@pytest.mark.parametrize(
    "question, concept, added",
    [
        ("Quel est le délai de carence de ma garantie ?", "delai-de-carence", "attente"),
        ("mon appart a été inondé par le voisin du dessus", "degats-des-eaux", "dégâts"),
        ("Je suis en arrêt maladie depuis trois semaines", "incapacite-temporaire-totale", "incapacité"),
        ("Mon pare-brise est fendu par un gravillon", "bris-de-glace", "glace"),
        ("Comment le MCR est-il calculé ?", "mcr", "minimum"),
        ("best estimate des provisions", "best-estimate", "meilleure"),
    ],
)
def test_the_shipped_thesaurus_recognises_the_policyholders_words(shipped, question, concept, added):
    expansion = shipped.expand(q(question))
    assert concept in [c["id"] for c in expansion.concepts]
    assert analyze(added)[0] in expansion.added


# -- expansion on a small thesaurus --------------------------------------------------------------

SMALL = {
    "concepts": [
        {
            "id": "degats-des-eaux",
            "prefLabel": {"fr": "dégâts des eaux"},
            "altLabel": {"fr": ["fuite d'eau", "infiltration"]},
            "hiddenLabel": {"fr": ["inondé par le voisin"]},
            "related": ["franchise"],
        },
        {"id": "franchise", "prefLabel": {"fr": "franchise"}, "altLabel": {"fr": ["délai de franchise"]}},
        {"id": "carence", "prefLabel": {"fr": "délai de carence"}, "altLabel": {"fr": ["délai d'attente"]}},
        {
            "id": "itt",
            "prefLabel": {"fr": "incapacité temporaire totale"},
            "altLabel": {"fr": ["ITT", "arrêt de travail"]},
        },
        {
            "id": "many",
            "prefLabel": {"fr": "garantie étendue"},
            "altLabel": {
                "fr": [
                    "alpha bravo charlie",
                    "delta echo foxtrot",
                    "golf hotel india",
                    "juliet kilo lima",
                    "mike november oscar",
                ]
            },
        },
    ]
}


@pytest.fixture
def small() -> Thesaurus:
    return Thesaurus.from_dicts([("small.json", SMALL)])


def weights(**by_word):
    """{analysed term: weight} of written words."""
    return {analyze(word)[0]: weight for word, weight in by_word.items()}


def test_weights_original_preferred_alternative_hidden(small):
    expansion = small.expand(q("Des dégâts des eaux chez moi"))
    assert [c["id"] for c in expansion.concepts] == ["degats-des-eaux"]
    assert expansion.concepts[0]["kind"] == "prefLabel"
    assert {t: expansion[t] for t in analyze("dégâts eaux chez")} == weights(dégâts=1.0, eaux=1.0, chez=1.0)
    # "fuite d'eau" adds "fuite" only: "eaux" is the question's own term
    assert expansion.added == weights(fuite=0.85, infiltration=0.85, inondé=0.85, voisin=0.85)
    assert analyze("franchise")[0] not in expansion  # relations only on request
    related = small.expand(q("Des dégâts des eaux chez moi"), relations=True)
    assert related.added[analyze("franchise")[0]] == pytest.approx(0.7)


def test_added_words_give_back_their_terms_through_the_index_analyzer(small):
    expansion = small.expand(q("quelle fuite d'eau ?"))
    assert expansion.added == {**weights(dégâts=0.95), **weights(infiltration=0.85, inondé=0.85, voisin=0.85)}
    assert {analyze(word)[0]: weight for word, weight in expansion.words.items()} == expansion.added
    assert all(len(analyze(word)) == 1 for word in expansion.words)


def test_an_original_term_is_never_lowered(small):
    # "délai" is the question's own term and a label term of the concept it names
    expansion = small.expand(q("Quel délai d'attente ?"))
    delai = analyze("délai")[0]
    assert expansion[delai] == 1.0 and delai not in expansion.added
    assert expansion.added == weights(carence=0.95)
    assert all(weight == 1.0 for term, weight in expansion.items() if term not in expansion.added)


def test_multi_word_labels_match_contiguous_analysed_terms(small):
    assert [c["id"] for c in small.expand(q("les dégâts causés par les eaux")).concepts] == []
    assert [c["id"] for c in small.expand(q("Les DÉGÂTS DES EAUX")).concepts] == ["degats-des-eaux"]
    # the longest label wins where labels overlap: "délai de franchise" is not "délai de carence"
    assert [c["id"] for c in small.expand(q("mon délai de franchise")).concepts] == ["franchise"]


def test_acronym_labels_match_as_written(small):
    assert [c["id"] for c in small.expand(q("ma garantie ITT")).concepts] == ["itt"]
    assert small.expand(q("ma garantie itt")).concepts == []


def test_at_most_twelve_terms_are_added(small):
    expansion = small.expand(q("ma garantie étendue"))
    assert len(expansion.added) == MAX_ADDED == 12
    assert set(expansion.added) <= {t for label in SMALL["concepts"][4]["altLabel"]["fr"] for t in analyze(label)}
    assert len(small.expand(q("ma garantie étendue"), limit=3).added) == 3


def test_preferred_labels_come_first_under_the_cap(small):
    expansion = small.expand(q("arrêt de travail et fuite d'eau"), limit=4)
    # both preferred labels (0.95) before any alternative label
    assert set(expansion.added) == set(analyze("incapacité temporaire totale dégâts"))


# -- loading and validation ------------------------------------------------------------------------


def write(path: Path, data) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "concept, message",
    [
        ({"id": "x", "prefLabel": "franchise"}, "concept 'x': prefLabel must map a language"),
        (
            {"id": "x", "prefLabel": {"fr": "franchise"}, "altLabel": {"fr": "plafond"}},
            "concept 'x': altLabel\\['fr'\\] must be a list",
        ),
        (
            {"id": "x", "prefLabel": {"fr": "franchise"}, "altlabel": {"fr": ["plafond"]}},
            "concept 'x': unknown keys \\['altlabel'\\]",
        ),
        ({"id": "x", "prefLabel": {}}, "concept 'x': a prefLabel is required"),
        ({"id": "x", "prefLabel": {"fr": "de la"}}, "concept 'x': prefLabel 'de la' has no searchable word"),
        (
            {"id": "x", "prefLabel": {"fr": "franchise"}, "related": ["nowhere"]},
            "concept 'x': related names unknown concept 'nowhere'",
        ),
        (
            {"id": "x", "prefLabel": {"fr": "franchise"}, "sources": [{"document": "a.pdf"}]},
            "concept 'x': each source needs",
        ),
        ({"prefLabel": {"fr": "franchise"}}, 'concept #1: "id" must be a non-empty string'),
    ],
)
def test_a_malformed_entry_names_the_file_and_the_concept(tmp_path, concept, message):
    path = write(tmp_path / "bad.json", {"concepts": [concept]})
    with pytest.raises(ThesaurusError, match=f"/bad.json: {message}"):
        Thesaurus.load(path)


def test_invalid_json_and_duplicate_ids_are_refused(tmp_path):
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(ThesaurusError, match="broken.json: not valid JSON"):
        Thesaurus.load(tmp_path / "broken.json")
    folder = tmp_path / "folder"
    folder.mkdir()
    write(folder / "a.json", {"concepts": [{"id": "x", "prefLabel": {"fr": "franchise"}}]})
    write(folder / "b.json", {"concepts": [{"id": "x", "prefLabel": {"fr": "plafond"}}]})
    with pytest.raises(ThesaurusError, match="b.json: concept 'x' is defined twice"):
        Thesaurus.load(folder)


def test_the_environment_names_a_file_or_a_folder(tmp_path, monkeypatch):
    write(tmp_path / "a.json", {"concepts": [{"id": "a", "prefLabel": {"fr": "franchise"}}]})
    write(tmp_path / "b.json", {"concepts": [{"id": "b", "prefLabel": {"fr": "plafond"}}]})
    monkeypatch.setenv(ENV, str(tmp_path))
    assert set(load_thesaurus().concepts) == {"a", "b"}
    monkeypatch.setenv(ENV, str(tmp_path / "a.json"))
    assert set(load_thesaurus().concepts) == {"a"}
    assert [c["id"] for c in expand(q("quelle franchise ?")).concepts] == ["a"]
    monkeypatch.setenv(ENV, str(tmp_path / "missing"))
    with pytest.raises(ThesaurusError, match="does not exist"):
        load_thesaurus()
    monkeypatch.delenv(ENV)
    assert SHIPPED.exists() and len(load_thesaurus()) > 80  # the default: data/thesaurus/


# -- through the one retrieval path ------------------------------------------------------------------


def test_retrieve_records_the_expansion_and_the_acronyms(sample_kb):
    from rag_assets.retrieve.knowledge_base import KnowledgeBase

    settings, _, _ = sample_kb
    assert KnowledgeBase.open(settings.store).use_thesaurus is False  # off by default: it lost on golden-insurance dev
    kb = KnowledgeBase.from_settings(settings, use_thesaurus=True)
    # the sample note writes "provisions pour sinistres à payer (PSAP)"
    assert kb.acronyms.long_forms.get("PSAP") == "provisions pour sinistres à payer"
    trace = kb.retrieve("Comment la PSAP est-elle estimée ?")
    assert trace.acronyms == {"PSAP": "provisions pour sinistres à payer"}
    assert "psap" in [c["id"] for c in trace.expansions["concepts"]]
    assert trace.expansions["added"] and all(w in (0.95, 0.85) for w in trace.expansions["added"].values())
    top = kb.parent(trace.ranking("hybrid")[0])
    assert "provisionnement" in top["document_id"]
    plain = KnowledgeBase(kb.store, kb.embedder_spec, use_thesaurus=False, use_acronyms=False)
    untouched = plain.retrieve("Comment la PSAP est-elle estimée ?")
    assert untouched.expansions == {} and untouched.acronyms == {}


def test_bm25_reads_the_everyday_words_unless_the_switch_is_off(sample_kb):
    from rag_assets.retrieve.knowledge_base import KnowledgeBase

    settings, _, _ = sample_kb
    kb = KnowledgeBase.from_settings(settings)
    assert kb.retrieval_config()["everyday"] is True  # on by default
    # "catnat" is a policyholder's word for the natural-catastrophe regime the internal note
    # writes, and no sample document writes it: only its everyday words hold it
    assert kb.retrieve("catnat").ranking("bm25")
    plain = KnowledgeBase.from_settings(settings, use_everyday=False)
    assert plain.retrieval_config()["everyday"] is False
    assert plain.retrieve("catnat").ranking("bm25") == []


def test_everyday_words_are_the_hidden_labels_of_the_concepts_a_text_names(shipped):
    words = shipped.everyday_words("Franchise en cas de bris de glace ou de vol.", "fr")
    assert "pare-brise" in words and "cambriolage" in words
    assert shipped.everyday_words("Franchise en cas de bris de glace.", "en") == []
    assert len(set(words)) == len(words)


def test_the_thesaurus_fingerprint_follows_its_labels(small):
    edited = Thesaurus.from_dicts([("small.json", {**SMALL, "concepts": SMALL["concepts"][:-1]})])
    assert small.fingerprint() == Thesaurus.from_dicts([("small.json", SMALL)]).fingerprint() != edited.fingerprint()
