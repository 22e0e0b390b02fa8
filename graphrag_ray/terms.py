"""Content words of a text: what the offline methods (hashing embeddings, extractive scoring)
compare, so that "the", "what" and "main" never make two texts look alike.

Words of any script: letters are lower-cased and their accents folded ("Président" and
"president" are one term; plurals lose their "s"). Chinese and Japanese, written without
spaces, give their characters' overlapping pairs ("大观园" -> "大观", "观园"), the usual unit
of search without a segmenter: a two-character word matches itself, a longer name matches by
its pairs.
"""

from __future__ import annotations

import re
import unicodedata

# The vowel signs and marks inside Hebrew, Arabic, Indic, Thai, Lao and Myanmar words (not
# "word" characters to `re`), as a character-class body.
WORD_MARKS = r"\u0591-\u05c7\u064b-\u065f\u0900-\u0eff\u1000-\u109f"
# Letters and digits, and those marks.
_WORD = re.compile(rf"[^\W_](?:[^\W_]|[{WORD_MARKS}])*")
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_UNSPACED_RUN = re.compile(f"({_UNSPACED.pattern})")
# English, and French words that are no English word.
STOPWORDS = frozenset("""
a an and are as at be by can do does for from how in is it its of on or that the their them
these they this to was were what when where which who whom why will with would about across
main most major key some any all there between into than more over such your you i we our
had has have he her his she him not but so if then been also no yes us me my
le la les de des du un une et est en que qui dans au aux ce ces cet cette il elle ils elles
ne pas se sa ses leur leurs avec comme mais ou sont ete etre ont nous vous je tu lui quel
quelle quels quelles entre tout tous toutes aussi fait
的 了 是 在 和 与 及 有 也 都 就 这 那 什么 哪些 这些 那些 一个 他们 我们 没有 就是 之间
""".split())


# Accents of Latin, Greek and Cyrillic letters, and Arabic's optional vowel marks; not the
# vowel signs of Indic scripts, which are part of their words.
_ACCENTS = re.compile(r"[\u0300-\u036f\u064b-\u0652]")


def _folded(text: str) -> str:
    text = text.lower()
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", _ACCENTS.sub("", unicodedata.normalize("NFD", text)))


def _words(text: str) -> list[str]:
    text = _folded(text)
    if not _UNSPACED.search(text):
        return _WORD.findall(text)
    words = []
    for word in _WORD.findall(text):
        for piece in _UNSPACED_RUN.split(word):  # runs of unspaced script, and the rest
            if _UNSPACED.match(piece):
                words += [piece] if len(piece) == 1 else \
                    [piece[i:i + 2] for i in range(len(piece) - 1)]
            elif piece:
                words.append(piece)
    return words


def _singular(word: str) -> str:
    """A plural's "s" off (Harman's S-stemmer: companies -> company, changes -> change,
    conflits -> conflit; not "us", "ss", "is"), so a question's plural meets a text's
    singular."""
    if len(word) <= 3 or not word.endswith("s") or not word.isascii():
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith(("us", "ss", "is")):
        return word
    return word[:-1]


def content_terms(text: str) -> list[str]:
    """Words of more than one letter (a Chinese or Japanese character counts) without
    stopwords, plurals made singular, in order."""
    return [_singular(t) for t in _words(text)
            if t not in STOPWORDS and (len(t) > 1 or _UNSPACED.match(t))]


# Texts sharing this share of the smaller one's content terms say the same thing (a sentence
# cut short by a chunk boundary, a finding carried down to a sub-community).
NEAR_DUPLICATE_OVERLAP = 0.8


def says_the_same(terms: set[str], seen: list[set[str]]) -> bool:
    return any(len(terms & other) >= NEAR_DUPLICATE_OVERLAP * max(1, min(len(terms), len(other)))
               for other in seen)


def distinct_texts(texts: list[str], seen: list[set[str]] | None = None) -> list[str]:
    """`texts` without those that repeat an earlier one (or one of `seen`, the terms of
    texts already said, which it extends)."""
    seen = [] if seen is None else seen
    kept = []
    for text in texts:
        terms = set(content_terms(text))
        if not says_the_same(terms, seen):
            seen.append(terms)
            kept.append(text)
    return kept
