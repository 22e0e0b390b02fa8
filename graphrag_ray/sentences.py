"""Sentences, for every part that cuts text into them (offline extraction, extractive
summaries, reports and answers): a period after an abbreviation ends no sentence.

"Mr. Darcy", "Dr. Watson", "St. Paul", "J. R. R. Tolkien", "the U.S. market", "e.g. this":
splitting at every period cut names in two (passages ending in `"Mr.`, descriptions and
summaries stopped there, and the name's halves met no one). The abbreviations are those of
titles, initials and Latin phrases in the languages the offline extractor reads.
"""

from __future__ import annotations

import re

# Lower-cased, without their period. Titles and honorifics; name suffixes; places' kinds;
# Latin and common phrases; in English, French, Spanish, Portuguese, Italian, German, Dutch.
ABBREVIATIONS = frozenset("""
mr mrs ms mx dr prof rev fr sr sra srta sres dña dn jr snr mt st ste hon capt col gen lt maj sgt
cmdr adm gov sen rep pres supt insp messrs mme mmes mlle mlles mgr me pr vve
hr hrn fr frl dipl ing univ
sig sigg dott dssa avv arch
dhr mevr drs ir
no nos nr vol vols p pp ch fig figs ed eds art op cf vs viz approx ca
inc ltd co corp bros dept univ assn
jan feb mar apr jun jul aug sep sept oct nov dec
av ave blvd rd bd
""".split())
# "e.g.", "i.e.", "U.S.", "a.m.", "z.B.": letters each followed by a period.
_DOTTED = re.compile(r"(?:\b[^\W\d_]\.){2,}$")
# An initial: one capital letter and its period ("J. Watson", "George R. R. Martin").
_INITIAL = re.compile(r"(?:^|[\s(\[\"'“‘])[^\W\d_]\.$")
_LAST_WORD = re.compile(r"([^\W\d_]+)\.$")


def ends_with_abbreviation(text: str) -> bool:
    """Whether `text` ends with an abbreviation's period (so no sentence ends there)."""
    tail = text.rstrip()[-24:]
    if not tail.endswith("."):
        return False
    if _DOTTED.search(tail) or _INITIAL.search(tail):
        return True
    word = _LAST_WORD.search(tail)
    return bool(word) and word.group(1).lower() in ABBREVIATIONS


def split_at(text: str, breaks: re.Pattern) -> list[str]:
    """`text` cut at the matches of `breaks` (sentence ends), except after an abbreviation;
    pieces stripped, empty ones dropped."""
    pieces, start = [], 0
    for match in breaks.finditer(text):
        if match.end() == match.start() and match.start() in (0, len(text)):
            continue
        head = text[start:match.start()]
        if head.rstrip().endswith(".") and ends_with_abbreviation(head) \
                and "\n\n" not in text[match.start():match.end()]:
            continue
        pieces.append(head)
        start = match.end()
    pieces.append(text[start:])
    return [piece.strip() for piece in pieces if piece.strip()]


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences of prose: cut after . ! ? and the spaces that follow."""
    return split_at(text, _SENTENCE_BREAK)
