"""The lines of insurance (branches) and the words that name each: what is insured, who is
covered — not the words every policy writes (garantie, sinistre, franchise). Read by the
retrieval side (what a question and a document are about, `retrieve/branches.py`) and by the
write side (the branch a document's identity names, `parsing/identity.py`)."""

from __future__ import annotations

from functools import lru_cache

from rag_assets.text.analysis import analyze

BRANCHES = {
    "auto": "voiture voitures véhicule véhicules automobile auto autos moto motos scooter conducteur conductrice "
    "conduite pare-brise carrosserie bonus-malus dépanneuse remorquage crevaison circulation",
    "habitation": "habitation logement logements maison maisons appartement appartements locataire propriétaire "
    "cambriolage mobilier multirisque toiture canalisation résidence",
    "santé": "santé mutuelle soins dentaire dentiste optique lunettes pharmacie consultation orthodontie "
    "hospitalisation hôpital kinésithérapeute ostéopathe",
    "animaux": "chien chiens chat chats animal animaux vétérinaire chiot chaton",
    "prévoyance": "prévoyance décès invalidité incapacité arrêt obsèques rente",
    "emprunteur": "prêt prêts emprunt emprunteur crédit mensualités",
    "protection juridique": "juridique litige litiges avocat tribunal procès contentieux",
    "chasse": "chasse chasseur chasseurs fusil gibier battue",
    "navigation": "bateau bateaux voilier navigation plaisance navire",
    "épargne": "épargne placement placements rendement capitalisation",
    "voyage": "voyage voyages séjour annulation vacances",
}


@lru_cache(maxsize=4)
def branch_terms(language: str = "fr") -> dict[str, frozenset[str]]:
    return {branch: frozenset(analyze(words, language)) for branch, words in BRANCHES.items()}


def branches_of_text(text: str, language: str = "fr") -> frozenset[str]:
    """The branches whose words `text` writes."""
    terms = set(analyze(text or "", language))
    return frozenset(branch for branch, words in branch_terms(language).items() if words & terms)
