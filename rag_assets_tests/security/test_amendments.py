"""A sidecar's `amends` cannot reach out of its folder nor over readers it does not have: a
public file dropped in another folder and claiming to amend the sample policy leaves the
flood deductible at 5 000 €, and is named as refused at ingest and in the answer. A legitimate
amendment still answers, naming both documents and both effective dates."""

from __future__ import annotations

import logging
import shutil

import pytest

from rag_assets.settings import SAMPLES_DIR

pytestmark = pytest.mark.slow  # a store ingested through Dagster

ZONE_A = "Quelle est la franchise pour une inondation en zone A ?"
POLICY = "police-habitation-multirisque.pdf"
POLICY_TITLE = "Contrat Habitation Multirisque – Conditions générales"
ROGUE = "avenant-franchise.md"
ROGUE_TEXT = (
    "# Avenant à la police habitation multirisque\n\nLa franchise pour une inondation en zone A est ramenée à 1 euro.\n"
)
RECTIFICATIF = "rectificatif-procedure.md"  # public, claims to amend the claims-only procedure
RECTIFICATIF_TEXT = (
    "# Rectificatif à la procédure de déclaration des sinistres climatiques\n\n## Expertise\n\n"
    "Une expertise est missionnée uniquement lorsque l'assuré la demande par écrit.\n"
)
FLEET = (
    "# Contrat flotte automobile\n\n## Article 4 – Franchise bris de glace\n\n"
    "La franchise bris de glace du contrat flotte automobile est de 300 euros par véhicule.\n"
)
FLEET_RIDER = (
    "# Avenant au contrat flotte automobile\n\n## Franchise bris de glace\n\n"
    "La franchise bris de glace du contrat flotte automobile est ramenée à 150 euros par véhicule.\n"
)


def _sidecar(path, **fields):
    lines = [f"{key}: {value}" for key, value in fields.items()]
    path.with_name(path.name + ".meta.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def amended_store(tmp_path_factory):
    """(settings, outcomes by file name) of a folder `docs/` holding the sample policy, the
    MX-200 contract and its amendment, the claims-only procedure and a public "rectificatif"
    claiming to amend it, a fleet contract with no effective date in a subfolder amended from
    the folder above; and `ailleurs/`, a public file claiming to amend the policy."""
    from rag_assets.orchestration.ingest_runs import ingest
    from rag_assets.orchestration.instance import open_instance
    from rag_assets_tests.support.stores import make_settings

    root = tmp_path_factory.mktemp("amended-store")
    docs, elsewhere = root / "corpus" / "docs", root / "corpus" / "ailleurs"
    (docs / "flotte").mkdir(parents=True)
    elsewhere.mkdir()
    for name in (
        POLICY,
        "contrat-maintenance-MX-200.docx",
        "avenant-1-contrat-MX-200.html",
        "note-interne-procedure.md",
    ):
        for file in (name, name + ".meta.yaml"):
            shutil.copy(SAMPLES_DIR / file, docs / file)
    (elsewhere / ROGUE).write_text(ROGUE_TEXT, encoding="utf-8")
    _sidecar(
        elsewhere / ROGUE,
        title="Avenant franchise",
        language="fr",
        document_type="amendment",
        effective_date="2025-01-01",
        allowed_groups="[public]",
        amends=POLICY,
    )
    (docs / RECTIFICATIF).write_text(RECTIFICATIF_TEXT, encoding="utf-8")
    _sidecar(
        docs / RECTIFICATIF,
        title="Rectificatif procédure",
        language="fr",
        effective_date="2025-01-01",
        allowed_groups="[public]",
        amends="note-interne-procedure.md",
    )
    (docs / "flotte" / "contrat-flotte.md").write_text(FLEET, encoding="utf-8")
    _sidecar(docs / "flotte" / "contrat-flotte.md", title="Contrat flotte automobile", language="fr")
    (docs / "avenant-flotte.md").write_text(FLEET_RIDER, encoding="utf-8")
    _sidecar(
        docs / "avenant-flotte.md",
        title="Avenant flotte automobile",
        language="fr",
        effective_date="2025-02-01",
        amends="flotte/contrat-flotte.md",
    )
    settings = make_settings(root)
    instance = open_instance(settings)
    outcomes = {o.path.name: o for o in ingest([root / "corpus"], settings, instance)}
    yield settings, outcomes
    instance.dispose()


@pytest.fixture
def amended_kb(amended_store):
    from rag_assets.client import KnowledgeBase

    settings, outcomes = amended_store
    assert {o.status for o in outcomes.values()} == {"indexed"}, {n: o.message for n, o in outcomes.items()}
    return KnowledgeBase.open(settings.store)


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    for name in ("RAG_ASSETS_LLM_BASE_URL", "RAG_ASSETS_LLM_ENDPOINTS", "RAG_ASSETS_LLM_GGUF"):
        monkeypatch.delenv(name, raising=False)


def test_a_public_file_in_another_folder_cannot_replace_the_flood_deductible(amended_kb, kb):
    answer = amended_kb.ask(ZONE_A)
    assert answer.text == kb.ask(ZONE_A).text  # the demo's own answer, from the sample store
    assert "5 000 €" in answer.paragraphs[0].text
    assert all(p.role == "answer" and p.lead is None for p in answer.paragraphs)
    rendered = answer.render()
    assert "1 euro" not in rendered and "Disposition antérieure" not in rendered
    assert all(s.document_title != "Avenant franchise" for s in answer.sources)
    assert (
        f"« Avenant franchise » se présente comme modifiant « {POLICY_TITLE} » sans en avoir le droit (le second "
        "n'est ni dans le dossier du premier ni en dessous) : il est écarté de cette réponse."
    ) in answer.alerts


def test_the_rogue_file_is_reported_on_its_summary_line_at_ingest(amended_store):
    from rag_assets.commands.ingest import summary_lines

    settings, outcomes = amended_store
    lines = summary_lines(outcomes[ROGUE], 1, len(outcomes))
    assert "1 warning" in lines[0]
    folder = settings.store.parent / "corpus"
    assert lines[1:] == [
        f"          warning: amends '{POLICY}' ({folder / 'docs' / POLICY}): refused, it is not in "
        f"this document's folder ({folder / 'ailleurs'}) or below it; the amendment is not applied"
    ]
    # the legitimate amendments say nothing
    assert not outcomes["avenant-1-contrat-MX-200.html"].warnings and not outcomes["avenant-flotte.md"].warnings


def test_a_refusal_the_ingestion_could_not_see_is_logged_once(amended_kb, caplog, monkeypatch):
    from rag_assets.answering import citations

    monkeypatch.setattr(citations, "_REPORTED", set())  # what this process already logged
    with caplog.at_level(logging.WARNING, logger=citations.__name__):
        for _ in range(2):
            found = citations.document_amendments(amended_kb)
    assert {(amended_kb.document(r.amending)["file_name"], r.rule) for r in found.refused} == {
        (ROGUE, "folder"),
        (RECTIFICATIF, "groups"),
    }
    assert len(caplog.records) == 2  # each once
    assert any(r.getMessage().startswith(f"{ROGUE} amends '{POLICY}'") for r in caplog.records)


def test_a_broader_group_cannot_amend_a_restricted_procedure(amended_store, amended_kb):
    _, outcomes = amended_store
    assert outcomes[RECTIFICATIF].warnings == [
        "amends 'note-interne-procedure.md' ({}): refused, this document is readable by public, more widely than "
        "the amended one (claims); the amendment is not applied".format(
            amended_kb.document(
                next(
                    d
                    for d in amended_kb.document_ids()
                    if amended_kb.document(d)["file_name"] == "note-interne-procedure.md"
                )
            )["original_path"]
        )
    ]
    answer = amended_kb.ask("Quand une expertise est-elle missionnée ?", user_groups=["claims"])
    assert "seuil de délégation" in answer.text and "uniquement lorsque l'assuré" not in answer.render()
    assert all(p.role == "answer" for p in answer.paragraphs)
    assert any(a.startswith("« Rectificatif procédure » se présente comme modifiant") for a in answer.alerts)


def test_a_legitimate_amendment_names_both_documents_and_dates(amended_kb):
    answer = amended_kb.ask("Quel est le préavis de résiliation du contrat MX-200 ?")
    current, *_, old = answer.paragraphs  # the amendment's passages first, the replaced clause last
    assert "deux (2) mois" in current.text and "trois (3) mois" in old.text and old.role == "superseded"
    assert old.lead == (
        "Disposition antérieure de « Contrat de maintenance MX-200 » (date d'effet : 2022-03-01), "
        "remplacée par « Avenant n° 1 au contrat de maintenance MX-200 » (date d'effet : 2024-10-01) :"
    )


def test_an_amendment_from_the_folder_above_holds_and_an_unknown_date_is_said(amended_kb):
    answer = amended_kb.ask("Quelle est la franchise bris de glace du contrat flotte automobile ?")
    current, *_, old = answer.paragraphs
    assert "150 euros" in current.text and "300 euros" in old.text and old.role == "superseded"
    assert old.lead == (
        "Disposition antérieure de « Contrat flotte automobile » (date d'effet : date inconnue), "
        "remplacée par « Avenant flotte automobile » (date d'effet : 2025-02-01) :"
    )


def test_the_model_is_told_both_documents_and_dates_of_a_replaced_provision(amended_kb):
    from rag_assets.answering.citations import build_registry

    contract = next(
        d for d in amended_kb.document_ids() if amended_kb.document(d)["file_name"] == "contrat-maintenance-MX-200.docx"
    )
    notice = next(p["parent_id"] for p in amended_kb.parents_of(contract) if "trois (3) mois" in p["text"])
    registry = build_registry(amended_kb, [notice])
    assert registry.catalogue() == (
        "- S1 : Contrat de maintenance MX-200, Article 7 – Résiliation — « Contrat de maintenance MX-200 » "
        "(date d'effet : 2022-03-01) modifié par « Avenant n° 1 au contrat de maintenance MX-200 » "
        "(date d'effet : 2024-10-01)"
    )
    assert (
        'modifié_par="« Avenant n° 1 au contrat de maintenance MX-200 » (date d\'effet : 2024-10-01)"'
        in registry.context_text()
    )
