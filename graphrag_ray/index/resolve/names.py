"""What a name says on its own: its tokens without honorifics, its blocking keys, and how two
names relate (the same name, a short form, initials, an acronym, a nickname, a typo, or
nothing).

Entity titles arrive upper-cased (`tuples.normalize_name`). A name's tokens are its runs of
letters and digits; honorifics lead a name ("MR. HOLMES", "DR WATSON") and are dropped, so
"MR. HOLMES" and "HOLMES" have the same tokens. Joiners ("BANK OF ENGLAND") are tokens but
carry no initial in an acronym and open no block.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from rapidfuzz.distance import OSA

from graphrag_ray.index.extract.nlp_extractor import CONCEPT_ABBREVIATIONS, GIVEN_NAMES
from graphrag_ray.languages import active as language, on_change

_TOKEN = re.compile(r"[^\W_]+")
# The strength of one name under two men's titles (MR and CAPTAIN WENTWORTH): one man or two
# of a family, as the context says.
TWO_TITLES = 0.6
# Tokens this long or longer open typo blocks (their one-deletion variants).
TYPO_MIN_LENGTH = 5
# Acronyms and single-token names this short are matched as acronyms.
ACRONYM_LENGTHS = range(2, 7)
# Names written run together match their spaced form (BEHINDTHETECH, BEHIND THE TECH) from
# this many letters: shorter runs meet by chance (AT T, ATT).
JOINED_MIN_LENGTH = 6


def _folded(text: str) -> str:
    """Accents off (LÜTKE is LUTKE, SCHRÖDINGER is SCHRODINGER) for comparing names."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


@on_change
@lru_cache(maxsize=200_000)
def name_tokens(title: str) -> tuple[str, ...]:
    """The name's tokens, upper case and without accents, leading honorifics and trailing
    suffixes dropped (a name that is nothing but an honorific keeps it)."""
    tokens = tuple(t.upper() for t in _TOKEN.findall(_folded(title).replace("'S ", " ")))
    start, end, data = 0, len(tokens), language()
    while start < end - 1 and tokens[start] in data.honorifics:
        start += 1
    while end > start + 1 and tokens[end - 1] in data.suffixes:
        end -= 1
    return tokens[start:end]


@lru_cache(maxsize=200_000)
def _words(title: str) -> tuple[str, ...]:
    """The name's words as written, honorifics and ranks kept: upper case, no accents."""
    return tuple(t.upper() for t in _TOKEN.findall(_folded(title)))


def first_word(title: str) -> str:
    """The name's first word as written, honorific or not (MR of MR. DARCY), or ""."""
    words = _words(title)
    return words[0] if words else ""


def _leading_word(title: str) -> str | None:
    """The first word of a name of two words or more (COLONEL of COLONEL BRANDON)."""
    words = _words(title)
    return words[0] if len(words) > 1 else None


@on_change
@lru_cache(maxsize=200_000)
def bearer(title: str) -> str | None:
    """Who the name's leading honorifics say its bearer is (the language data's
    `honorific_bearers`), if any. A married woman's comes first and the rest is her
    husband's (MRS COLONEL DENT)."""
    honorifics, bearers = language().honorifics, language().honorific_bearers
    said = []
    for token in _words(title)[:-1]:
        if token not in honorifics and token not in bearers:
            break
        if token in bearers:
            said.append(bearers[token])
    if said and said[0] == "married woman":
        return said[0]
    return said[0] if len(set(said)) == 1 else None


def wife_of(a: str, b: str) -> bool:
    """MRS CHARLES MUSGROVE and CHARLES MUSGROVE: a married woman called by her husband's
    full name is not him."""
    for wife, other in ((a, b), (b, a)):
        if bearer(wife) == "married woman" and bearer(other) != "married woman" and \
                len(content_tokens(name_tokens(wife))) >= 2:
            return True
    return False


def lone_rank(title: str) -> str | None:
    """The rank a name is nothing but (COLONEL), if it is one of the language data's
    `ranks`."""
    words = _words(title)
    return words[0] if len(words) == 1 and words[0] in language().ranks else None


def rank_of_holder(rank: str, holder: str) -> bool:
    """Whether `rank` is a rank alone and `holder` a name it opens (COLONEL, COLONEL
    BRANDON): relation `title_form`, the short side `rank`."""
    alone = lone_rank(rank)
    return alone is not None and _leading_word(holder) == alone


def bearers_differ(a: str, b: str) -> bool:
    """MR and MRS, MRS and MISS, LADY and MISS: different people (see
    `honorific_bearers`); so are MRS or MISS SHIRLEY and DR SHIRLEY (a title that says
    nothing of its bearer, beside one that says a wife or a daughter, is her husband's or
    her father's)."""
    ba, bb = bearer(a), bearer(b)
    if {ba, bb} == {"woman", "unmarried woman"} and "LADY" in map(_leading_word, (a, b)):
        return True  # LADY LUCAS and MISS LUCAS: a titled mother and her daughter
    if ba is None and bb is None or ba == bb:
        return False
    if ba is None or bb is None:
        said, other = (bb, a) if ba is None else (ba, b)
        return said in ("married woman", "unmarried woman") and \
            _leading_word(other) in language().honorifics
    return "man" in (ba, bb) or {ba, bb} == {"married woman", "unmarried woman"}


def content_tokens(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """The words but joiners inside the name (a first or last word is a word: QUOC LE,
    THEO VON)."""
    joiners = language().joiners
    return tuple(t for i, t in enumerate(tokens)
                 if t not in joiners or i == 0 or i == len(tokens) - 1)


def acronym_of(tokens: tuple[str, ...]) -> str | None:
    """Initials of a name of two or more content words: INTERNATIONAL BUSINESS MACHINES -> IBM."""
    words = content_tokens(tokens)
    return "".join(w[0] for w in words) if len(words) >= 2 else None


def blocking_keys(title: str) -> set[str]:
    """Keys two names that may be one share: the normalised name (`n:`), its letters run
    together (`j:`, a name written as one word), each content token (`t:`, short forms), the
    acronym or a short single token (`a:`), and each long token's one-deletion variants
    (`d:`: two tokens one edit apart share one)."""
    tokens = name_tokens(title)
    if not tokens:
        return set()
    keys = {"n:" + " ".join(tokens)}
    if _leading_word(title) in language().ranks:  # meets the rank alone (COLONEL, BRANDON's)
        keys.add("t:" + _leading_word(title))
    if len("".join(tokens)) >= JOINED_MIN_LENGTH:
        keys.add("j:" + "".join(tokens))
    words = content_tokens(tokens)
    keys.update("t:" + w for w in words if len(w) >= 2)
    # (A diminutive meets its formal name: LIZZY in ELIZABETH's block.)
    keys.update("t:" + name for name in formal_names(words[0]))
    initials = acronym_of(tokens)
    if initials:
        keys.add("a:" + initials)
    elif len(words) == 1 and len(words[0]) in ACRONYM_LENGTHS:
        keys.add("a:" + words[0])
    for word in words:
        if len(word) >= TYPO_MIN_LENGTH:
            keys.update("d:" + word[:i] + word[i + 1:] for i in range(len(word)))
    return keys


def is_short_form_key(title: str, key: str) -> bool:
    """Whether `title` is the key itself (a one-word name in its own token block): in a block
    too large to pair all of, only such names are paired with the rest."""
    return key.startswith("t:") and content_tokens(name_tokens(title)) == (key[2:],)


def _initials_match(short: tuple[str, ...], full: tuple[str, ...]) -> bool:
    """J SMITH ~ JOHN SMITH: same length, each token equal or an initial of the other's, at
    least one whole word equal and at least one initial."""
    if len(short) != len(full) or len(short) < 2:
        return False
    initials = whole = 0
    for s, f in zip(short, full):
        if s == f:
            whole += len(s) > 1
        elif len(s) == 1 and f.startswith(s) or len(f) == 1 and s.startswith(f):
            initials += 1
        else:
            return False
    return initials > 0 and whole > 0


def _same_word(a: str, b: str) -> bool:
    """Equal, or one slip apart in a word long enough to tell (see `_typo_of`)."""
    return a == b or min(len(a), len(b)) >= TYPO_MIN_LENGTH and OSA.distance(a, b) <= 1


def _is_subsequence(short: tuple[str, ...], full: tuple[str, ...]) -> bool:
    """The short name's words appear in the full name, in order (a slip allowed in each):
    HOLMES in SHERLOCK HOLMES, and in SHERLOCK HOLMSE."""
    position = 0
    for word in full:
        if position < len(short) and _same_word(word, short[position]):
            position += 1
    return position == len(short)


def eldest_and_younger(a: str, b: str) -> bool:
    """MISS ELLIOT and MISS ANNE ELLIOT: where both are written, the surname alone is the
    eldest unmarried daughter's and a given name marks a younger sister (Persuasion's
    Elizabeth and Anne, Sense and Sensibility's Anne and Lucy Steele)."""
    if bearer(a) != "unmarried woman" or bearer(b) != "unmarried woman":
        return False
    ca, cb = content_tokens(name_tokens(a)), content_tokens(name_tokens(b))
    short, full = (ca, cb) if len(ca) < len(cb) else (cb, ca)
    return len(short) == 1 and len(full) >= 2 and full[-1] == short[0]


@lru_cache(maxsize=1)
def _nick_namer():
    from nicknames import NickNamer  # its table loads with the first resolution, not per command
    return NickNamer()


@on_change
@lru_cache(maxsize=50_000)
def formal_names(word: str) -> frozenset[str]:
    """The given name `word` is a diminutive of, where it is of one only, and longer (LIZZY:
    ELIZABETH; not ELIZA, which the table gives to ELIZABETH, LOUISA and LOUISE: Eliza Reed
    is no Louisa; nor RICHARD, which the table also lists under DICK); none where the
    language data has no nicknames."""
    if not language().nicknames:
        return frozenset()
    names = [name for name in _nick_namer().canonicals_of(word) if len(name) > len(word)]
    return frozenset(name.upper() for name in names) if len(names) == 1 else frozenset()


def _nickname_of(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """LIZZY and ELIZABETH, DICK FEYNMAN and RICHARD FEYNMAN: the same words but the first,
    one a diminutive of the other."""
    return len(a) == len(b) and a[1:] == b[1:] and a[0] != b[0] and (
        b[0] in formal_names(a[0]) or a[0] in formal_names(b[0]))


def name_relation(a: str, b: str) -> tuple[str, float] | None:
    """How two titles relate by name alone, with a strength in (0, 1]; None when the names
    say they are different things (which also forbids them in one cluster)."""
    ta, tb = name_tokens(a), name_tokens(b)
    if not ta or not tb or bearers_differ(a, b) or eldest_and_younger(a, b) or \
            wife_of(a, b):
        return None
    if rank_of_holder(a, b) or rank_of_holder(b, a):
        return "title_form", 0.6  # the document's one holder (`mentions.py`)
    ca, cb = content_tokens(ta), content_tokens(tb)
    if ca == cb:  # a name's first and last words are content: neither is empty
        # Two ways of calling a man (MR and CAPTAIN WENTWORTH, MR and COLONEL BRANDON) may be
        # one man or two of a family: the context decides, as for a short form.
        two_titles = bearer(a) == bearer(b) == "man" and _leading_word(a) != _leading_word(b)
        return "same_name", TWO_TITLES if two_titles else 1.0
    if len(ta) != len(tb) and "".join(ta) == "".join(tb) and \
            len("".join(ta)) >= JOINED_MIN_LENGTH:
        return "joined", 0.9
    if _initials_match(ca, cb):
        return "initials", 0.8
    if _nickname_of(ca, cb):
        return "nickname", 0.6
    for one, other in ((ca, cb), (cb, ca)):
        if len(one) == 1 and len(one[0]) in ACRONYM_LENGTHS and acronym_of(other) == one[0] \
                and one[0] not in CONCEPT_ABBREVIATIONS:
            return "acronym", 0.7
    short, full = (ca, cb) if len(ca) < len(cb) else (cb, ca)
    full_tokens = tb if full is cb else ta
    full_title = b if full is cb else a
    short_title = a if full is cb else b
    if len(short) < len(full) and _is_subsequence(short, full) and max(map(len, short)) >= 3 \
            and "OF" not in full_tokens and not (set(full) - set(short)) & language().kind_words \
            and not (bearer(full_title) == "married woman" and full[:len(short)] == short) \
            and not (first_word(short_title) in language().knighted and len(short) >= 2 and
                     full[-len(short):] == short):
        # (MRS JOHN DASHWOOD: the given name after MRS is her husband's, not hers. SIR WALTER
        # ELLIOT, a baronet's whole name, is not WILLIAM WALTER ELLIOT, his heir: a knight
        # with one more given name would be SIR WILLIAM WALTER ELLIOT.)
        return "short_form", 0.6
    if len(full) == len(short) + 1 and full[:-1] == short and \
            full[-1] in language().same_thing_kind_words:
        return "kind_form", 0.6  # the same thing only where typed alike (`PairRules`)
    if len(ca) == len(cb) and _typo_of(ca, cb):
        # A slip in one word of several is believable; a one-word slip needs the contexts to
        # agree (two different one-word names are often one letter apart: VENDPOUS, ZENDPOUS).
        return "typo", 0.8 if len(ca) > 1 else 0.5
    return None


def _typo_of(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Each differing word one slip from the other (a letter wrong, missing, extra, or two
    swapped) and long enough to tell a slip from another name; a one-word name must be long."""
    differing = [(x, y) for x, y in zip(a, b) if x != y]
    if not differing or len(a) == 1 and min(len(a[0]), len(b[0])) < 2 * TYPO_MIN_LENGTH - 2:
        return False
    return all(_same_word(x, y) for x, y in differing)


def placement(short: str, full: str) -> str:
    """Where the shorter name's words sit in the longer one's: `prefix` (ROBLOX in ROBLOX
    STUDIO, KEVIN in KEVIN SCOTT), `suffix` (LINUX in AZURE LINUX, SCOTT in KEVIN SCOTT) or
    `inside` (DOCKER in COMMERCIALLY SUPPORTED DOCKER ENGINE, or scattered)."""
    s, f = content_tokens(name_tokens(short)), content_tokens(name_tokens(full))
    if f[:len(s)] == s:
        return "prefix"
    if f[len(f) - len(s):] == s:
        return "suffix"
    return "inside"


def leading_words(short: str, full: str) -> str:
    """The longer name's words before the shorter one's, when it ends the longer name
    (MICROSOFT of MICROSOFT AZURE), as a name."""
    s, f = content_tokens(name_tokens(short)), content_tokens(name_tokens(full))
    return " ".join(f[:len(f) - len(s)])


def family_name(short: str, full: str) -> bool:
    """A short name with an honorific that is not a given name opening the longer name:
    MRS FERRARS of EDWARD FERRARS (his mother: a family shares its surname), MRS FAIRFAX or
    MISS FAIRFAX of FAIRFAX ROCHESTER (his middle name, her surname), unlike MISS ANNE of
    ANNE ELLIOT or SIR JOHN of SIR JOHN MIDDLETON. A married woman's honorific with one
    word is her surname (MRS JENNINGS), and a word is taken for a given name only when it is
    a known one (`nlp_extractor.GIVEN_NAMES`)."""
    who = bearer(short)
    if who is None:
        return False
    words = content_tokens(name_tokens(short))
    return placement(short, full) != "prefix" or who == "married woman" or \
        words[0].lower() not in GIVEN_NAMES


def is_short_side(title: str, other: str) -> bool:
    """Whether `title` is the shorter name of a short-form or initials pair (the side that
    may be ambiguous: FANNY of FANNY PRICE)."""
    if rank_of_holder(title, other):
        return True
    if rank_of_holder(other, title):
        return False
    a, b = content_tokens(name_tokens(title)), content_tokens(name_tokens(other))
    return len(a) < len(b) or (len(a) == len(b) and sum(map(len, a)) < sum(map(len, b)))
