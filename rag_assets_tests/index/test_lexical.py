import pytest
import tantivy

from rag_assets.index.filters import SearchFilters
from rag_assets.index.lexical import LexicalDoc, LexicalIndex, _schema
from rag_assets.index.rows import write_rows
from rag_assets.store import KnowledgeStore


def doc(child, document, text, language="fr", groups=("public",), date="2024-01-01"):
    return LexicalDoc(child, f"p-{child}", document, language, "policy", list(groups), date, text)


@pytest.fixture
def index(tmp_path):
    lexical = LexicalIndex(tmp_path / "tantivy")
    lexical.stage_version(
        "d1",
        "v1",
        [
            doc("c1", "d1", "La franchise pour une inondation en zone A est de 5 000 €."),
            doc("c2", "d1", "Les tempêtes sont couvertes, c'est-à-dire le vent."),
        ],
        keep=set(),
    )
    lexical.stage_version(
        "d2",
        "v1",
        [
            doc("c3", "d2", "The deductible for floods is 5,000 dollars.", language="en"),
            doc("c4", "d2", "Rapport S/P: sinistres à primes", groups=("claims",)),
        ],
        keep=set(),
    )
    return lexical


def test_french_analyzer_stems_and_folds_accents(index):
    assert index.analyze("Les Inondations déclarées", "fr") == ["inond", "declar"]


def test_user_text_never_breaks_the_query(index):
    for text in ["c'est-à-dire", "S/P:", "(zone A] AND", '"', "OR NOT", ""]:
        index.search(text, SearchFilters())  # must not raise


def test_french_and_english_documents_are_both_searchable(index):
    assert index.search("inondations zone A", SearchFilters())[0]["child_id"] == "c1"
    assert index.search("flood deductible", SearchFilters())[0]["child_id"] == "c3"


def test_a_questions_stop_words_weigh_nothing_in_the_other_languages_field(tmp_path):
    lexical = LexicalIndex(tmp_path / "tantivy")
    quoting = "in the case of France: 'société anonyme', 'société d'assurance mutuelle', 'société en commandite'"
    lexical.stage_version("en", "v1", [doc("e1", "en", quoting, language="en")], keep=set())
    lexical.stage_version(
        "fr", "v1", [doc("f1", "fr", "L'assureur peut résilier en cas d'aggravation du risque.")], keep=set()
    )
    question = "Que peut faire l'assureur en cas d'aggravation du risque ?"
    # French stop words are rare in the English field: without the question's language they count there
    assert {h["child_id"] for h in lexical.search(question, SearchFilters())} == {"e1", "f1"}
    assert [h["child_id"] for h in lexical.search(question, SearchFilters(), language="fr")] == ["f1"]


def test_a_passage_is_found_in_the_policyholders_words_its_thesaurus_concept_gives(tmp_path):
    lexical = LexicalIndex(tmp_path / "tantivy")
    clause = "Le bris des glaces est garanti sans franchise."
    lexical.stage_version("d", "v1", [doc("c1", "d", clause), doc("c2", "d", "Le vol est garanti.")], keep=set())
    # the shipped thesaurus: "pare-brise" is a policyholder's word for "bris de glace"
    assert [h["child_id"] for h in lexical.search("pare-brise fendu", SearchFilters(), language="fr")] == ["c1"]
    # the everyday words are indexed apart: the documents' own words keep their statistics
    assert lexical.doc_freq(lexical.analyze("pare-brise", "fr")[0], "fr") == 0
    assert not lexical.holds("pare-brise", SearchFilters())


def test_the_everyday_word_fields_are_searched_only_when_asked(tmp_path):
    lexical = LexicalIndex(tmp_path / "tantivy")
    clause = "Le bris des glaces est garanti sans franchise."
    lexical.stage_version("d", "v1", [doc("c1", "d", clause), doc("c2", "d", "Le vol est garanti.")], keep=set())
    # the shipped thesaurus: "cambriolage" is a policyholder's word for "vol", written by no child
    assert lexical.search("cambriolage", SearchFilters(), language="fr", everyday=False) == []
    assert [h["child_id"] for h in lexical.search("cambriolage", SearchFilters(), language="fr")] == ["c2"]
    # a word no everyday field holds scores the same either way
    own = [(h["child_id"], h["score"]) for h in lexical.search("garanti", SearchFilters(), everyday=False)]
    assert len(own) == 2 and own == [(h["child_id"], h["score"]) for h in lexical.search("garanti", SearchFilters())]


def test_an_index_built_before_the_everyday_words_is_rebuilt_on_open_and_loses_nothing(tmp_path):
    store = KnowledgeStore(tmp_path / "knowledge")
    texts = {"c1": "Le bris des glaces est garanti.", "c2": "Le vol est garanti."}
    rows = [{"child_id": c, "parent_id": f"p-{c}", "version": "v1", "contextualized": t} for c, t in texts.items()]
    write_rows(store.children_path("d"), rows, {"stage": "children"})
    store.tantivy_dir.mkdir(parents=True)
    older = tantivy.Index(_schema(everyday=False), path=str(store.tantivy_dir))
    writer = older.writer(heap_size=15_000_000, num_threads=1)
    for child, text in texts.items():
        fields = dict(child_id=child, parent_id=f"p-{child}", document_id="d", version="v1", language="fr")
        writer.add_document(tantivy.Document(**fields, document_type="policy", allowed_groups=["public"], text_fr=text))
    writer.commit()

    lexical = LexicalIndex(store.tantivy_dir)
    assert lexical.count("d", "v1") == 2
    assert [h["child_id"] for h in lexical.search("vol", SearchFilters())] == ["c2"]
    assert [h["child_id"] for h in lexical.search("pare-brise", SearchFilters(), language="fr")] == ["c1"]
    assert LexicalIndex(store.tantivy_dir).count("d", "v1") == 2  # opened again: nothing to rebuild


def test_filters_apply_inside_the_engine(index):
    assert [h["child_id"] for h in index.search("sinistres primes", SearchFilters())] == []
    assert [h["child_id"] for h in index.search("sinistres primes", SearchFilters(groups=("public", "claims")))] == [
        "c4"
    ]
    assert {h["document_id"] for h in index.search("franchise deductible", SearchFilters(document_ids=("d2",)))} == {
        "d2"
    }
    assert index.search("franchise", SearchFilters(effective_from="2025-01-01")) == []


def test_a_new_version_is_staged_beside_the_published_one_then_replaces_it(index):
    index.stage_version("d1", "v2", [doc("c9", "d1", "Nouvelle franchise inondation")], keep={"v1"})
    assert index.versions()["d1"] == {"v1", "v2"}
    assert (index.count("d1", "v1"), index.count("d1", "v2")) == (2, 1)
    index.stage_version("d1", "v2", [doc("c9", "d1", "Nouvelle franchise inondation")], keep={"v1"})
    assert index.count("d1", "v2") == 1, "re-staging the same version adds no duplicates"
    index.drop_versions_except("d1", "v2")
    assert index.versions()["d1"] == {"v2"} and index.count("d1") == 1
    assert index.count("d2") == 2


def test_term_weights_change_the_ranking(index):
    plain = index.search("franchise tempêtes", SearchFilters())
    weighted = index.search("franchise tempêtes", SearchFilters(), weights={"tempêtes": 5.0})
    assert weighted[0]["child_id"] == "c2"
    assert {h["child_id"] for h in plain} == {h["child_id"] for h in weighted}


def test_phrase_search_needs_the_words_in_order(index):
    quote = "La franchise pour une inondation en zone A"
    assert [h["child_id"] for h in index.search(quote, SearchFilters(), phrase=True)] == ["c1"]
    assert index.search("zone A inondation pour une franchise", SearchFilters(), phrase=True) == []
    assert index.search("franchise inondation", SearchFilters(), phrase=True) == [], "too short to be a phrase"
