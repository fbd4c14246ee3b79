"""Small synthetic Markdown policies for the re-indexing figure of `rag-assets bench`.

Re-indexing is measured through the pipeline itself (one Dagster run per document, as
`rag-assets ingest` runs it), so a store of 100 real policies would take hours to build
on two cores; these documents keep the store's shape (several documents, sections,
paragraphs, a table) at a few hundred words each. The bench says they are synthetic.
"""

from __future__ import annotations

import random
from pathlib import Path

GUARANTEES = [
    "incendie",
    "dégât des eaux",
    "vol",
    "bris de glace",
    "responsabilité civile",
    "catastrophe naturelle",
    "tempête",
    "assistance",
    "protection juridique",
    "dommages électriques",
]
CLAUSES = [
    "La garantie {g} couvre les dommages matériels subis par les biens assurés au lieu désigné "
    "aux conditions particulières.",
    "Une franchise de {n} euros reste à la charge de l'assuré pour chaque sinistre {g}.",
    "Le plafond d'indemnisation de la garantie {g} est fixé à {m} euros par année d'assurance.",
    "L'assuré déclare le sinistre {g} dans un délai de {d} jours ouvrés à compter du jour où il en a connaissance.",
    "Sont exclus de la garantie {g} les dommages résultant d'un défaut d'entretien caractérisé.",
    "L'indemnité due au titre de la garantie {g} est versée dans les {d} jours suivant l'accord des parties.",
]


def _section(rng: random.Random, guarantee: str) -> str:
    clauses = rng.sample(CLAUSES, 4)
    values = {
        "g": guarantee,
        "n": rng.choice([150, 230, 380, 500]),
        "m": rng.choice([5000, 15000, 75000]),
        "d": rng.choice([2, 5, 10, 30]),
    }
    return "\n\n".join(" ".join(c.format(**values) for c in clauses[i : i + 2]) for i in (0, 2))


def document_text(number: int, edition: int = 0) -> str:
    """Policy `number`; `edition` > 0 rewrites its last section (a new version of the document)."""
    rng = random.Random(number)
    guarantees = rng.sample(GUARANTEES, 4)
    parts = [
        f"# Conditions générales, contrat habitation n° {number}",
        f"Le présent contrat n° {number} est régi par le Code des assurances.",
    ]
    for guarantee in guarantees:
        parts += [f"## Garantie {guarantee}", _section(rng, guarantee)]
    parts += [
        "## Tableau des franchises",
        "| Garantie | Franchise |\n|---|---|\n"
        + "\n".join(f"| {g} | {rng.choice([150, 230, 380])} € |" for g in guarantees),
    ]
    if edition:
        parts[-3] = (
            _section(random.Random(f"{number}-{edition}"), guarantees[-1])
            + f"\n\nAvenant n° {edition} : cette rédaction remplace la précédente."
        )
    return "\n\n".join(parts) + "\n"


def write_documents(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"contrat-{number:03d}.md" for number in range(count)]
    for number, path in enumerate(paths):
        path.write_text(document_text(number), encoding="utf-8")
    return paths


def change_document(path: Path, number: int, edition: int) -> None:
    path.write_text(document_text(number, edition), encoding="utf-8")
