"""An amount written alone, as a table's value cell holds it."""

import re

# "358 €", "1 100 €", "125 e" (the euro sign of some PDF fonts), "80 %", "482 € 2" (a footnote
# call), "(hors taxes) 311 €" (a parenthesis before it)
BARE_AMOUNT = re.compile(r"^(?:\([^)]*\)\s*)?\d[\d\s\u00a0\u202f.,]*\s?(?:€|e|euros?|%)(?:\s?\(?\d\)?)?$")
