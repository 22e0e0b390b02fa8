"""The language a sample of text is written in, offline: by script for the scripts one
language dominates (Han, kana, Hangul, Thai, Arabic, Hebrew, Devanagari, Cyrillic, Greek),
by the share of each language's commonest function words for Latin script.

Good enough to tell a prompt which language to write in; `--language` overrides it.
"""

from __future__ import annotations

import re
from collections import Counter

# Script -> the language a corpus in it most likely is (Han without kana: Chinese).
_SCRIPTS = (
    ("Japanese", re.compile(r"[\u3040-\u30ff]")),
    ("Chinese", re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")),
    ("Korean", re.compile(r"[\uac00-\ud7af]")),
    ("Thai", re.compile(r"[\u0e00-\u0e7f]")),
    ("Arabic", re.compile(r"[\u0600-\u06ff]")),
    ("Hebrew", re.compile(r"[\u0590-\u05ff]")),
    ("Hindi", re.compile(r"[\u0900-\u097f]")),
    ("Russian", re.compile(r"[\u0400-\u04ff]")),
    ("Greek", re.compile(r"[\u0370-\u03ff]")),
)
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_WORD = re.compile(r"[a-z\u00e0-\u024f']+")

# Each language's commonest short words that other Latin-script languages rarely use alike.
_FUNCTION_WORDS = {
    "English": "the and of to in is that it was for with as on be by this are from have not",
    "French": "le la les des et est une dans que pour qui sur au aux du pas avec ce sont "
              "il elle",
    "Spanish": "el los las del y es una que en por con para se como su al lo pero más",
    "German": "der die das und ist nicht ein eine mit den dem des auf sich für ich zu von",
    "Italian": "il lo gli della delle che è per una con non sono del al nel come più anche",
    "Portuguese": "o os as da do das dos que em uma para com não por se mais ao como foi",
    "Dutch": "de het een en van is dat op te zijn niet met voor er aan ook als maar",
}
_VOCABULARY = {language: frozenset(words.split()) for language, words in _FUNCTION_WORDS.items()}


def detect_language(texts: list[str]) -> str:
    """The language `texts` are mostly written in, as an English name ("French")."""
    sample = "\n".join(texts)
    latin = len(_LATIN.findall(sample))
    scripts = Counter({name: len(pattern.findall(sample)) for name, pattern in _SCRIPTS})
    if scripts["Japanese"] and scripts["Japanese"] + scripts["Chinese"] >= latin:
        return "Japanese"  # kana appear in Japanese only; its kanji count as Han
    name, count = max(scripts.items(), key=lambda item: item[1])
    if count > latin:
        return name
    words = Counter(_WORD.findall(sample.lower()))
    scores = {language: sum(words[w] for w in vocabulary)
              for language, vocabulary in _VOCABULARY.items()}
    best = max(scores, key=scores.get)
    return best if scores[best] else "English"


def function_words(language: str) -> frozenset[str]:
    """The commonest short words of a Latin-script language (empty for others)."""
    return _VOCABULARY.get(language, frozenset())
