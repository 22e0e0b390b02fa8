"""Who a full name's bearer is, by how the corpus titles people: a man, a titled man, a
woman, a younger daughter. It lets a family's honorific with the surname alone (MR WICKHAM,
MISS LUCAS: `names.family_name`) be resolved, document by document (`mentions.py`), to the
one of the family the honorific can say, where news writes "John Smith" once and "Mr. Smith"
after, and a novel "George Wickham" and "Mr. Wickham".

What the titles say, corpus-wide, with no list of names (and the pronouns after a given
name, `scoring.WordForms.sexes`, where the titles say nothing):
- of a given name: a man's honorific before it says a man's name (MR EDWARD, SIR JOHN, MR
  GEORGE LYNN, CAPTAIN FREDERICK WENTWORTH), and so does MRS before a full name (MRS JOHN
  DASHWOOD: her husband's); MISS, LADY and the like a woman's (MISS LUCY, MISS LOUISA
  MUSGROVE). A name said both ways says nothing.
- of a full name: its own titled forms (MR EDWARD FERRARS: a man; SIR WALTER ELLIOT: a titled
  man, never "Mr Elliot"; MISS LOUISA MUSGROVE: a younger daughter), else its given name's.

Which full names an honorific with the surname can be (`Standings.fits`):
- MR: a man by the titles (pronouns are not enough: DICK MUSGROVE, the dead son, and HARRY
  DASHWOOD, a child, are "he" too); not a titled one (SIR WALTER ELLIOT is not MR ELLIOT;
  WILLIAM WALTER ELLIOT is), nor one called by a rank (CAPTAIN FREDERICK WENTWORTH: MR
  WENTWORTH is his brother, the curate), nor one whose wife is called by his given name
  beside a MRS with the surname alone (MRS CHARLES MUSGROVE beside MRS MUSGROVE: Charles is
  the son, MR MUSGROVE his father), and, where the family has a boy (MASTER REED), one
  titled a man in his own full name;
- a rank (CAPTAIN WENTWORTH): a man the corpus calls by that rank in his full name;
- MISS: a woman, by the titles or the pronouns after her given name (CAROLINE, BLANCHE: a
  woman's given name is seldom titled; DICK MUSGROVE is no MISS MUSGROVE), and not a
  younger sister: a given name after MISS marks one (MISS ANNE ELLIOT and MISS LUCY STEELE
  are not MISS ELLIOT and MISS STEELE, their elder sisters), unless she is the only woman of
  her family named in full and the family is never written with daughters in the plural
  (MISS JANE EYRE is MISS EYRE; the MISS STEELES say Lucy has a sister).
Other honorifics fit no one: MRS (a wife is called by her husband's name, MRS JOHN DASHWOOD,
so no full name the text writes is hers), LADY, AUNT.
"""

from __future__ import annotations

from collections import defaultdict

from graphrag_ray.languages import active as language
from graphrag_ray.index.resolve.names import (
    bearer, content_tokens, first_word, name_tokens)

MAN, WOMAN = "man", "woman"
_WOMEN = frozenset({"married woman", "unmarried woman", "woman"})


class Standings:
    """What the corpus's titles say of its full names (see the module's docstring)."""

    def __init__(self, titles: list[str], pronoun_sexes: dict[str, str] | None = None):
        """`pronoun_sexes`: given name -> sex the corpus's pronouns say
        (`scoring.WordForms.sexes`), where its titles say nothing."""
        full_names = [content_tokens(name_tokens(t)) for t in titles]
        firsts = {words[0] for words in full_names if len(words) >= 2}
        lasts = {words[-1] for words in full_names if len(words) >= 2}
        given_names = firsts - lasts  # a word that opens full names and ends none
        self.given_names = frozenset(given_names)
        said: dict[str, set[str]] = defaultdict(set)  # given name -> sexes said of it
        self._forms: dict[tuple[str, ...], set[str]] = defaultdict(set)
        self._younger: set[str] = set()  # given names a MISS is called by alone
        for title, words in zip(titles, full_names):
            who = bearer(title)
            if who is None or not words:
                continue
            if len(words) >= 2:  # (MRS JOHN DASHWOOD says JOHN DASHWOOD is a man: a husband)
                self._forms[words].add(MAN if who == "married woman" else who)
                if first_word(title) in language().titled:
                    self._forms[words].add("titled")
                elif first_word(title) in language().ranks:
                    self._forms[words].add("rank " + first_word(title))
            if len(words) >= 2 or words[0] in given_names:
                if who == "married woman" and len(words) >= 2:
                    said[words[0]].add(MAN)  # MRS JOHN DASHWOOD: her husband's name
                else:
                    said[words[0]].add(MAN if who == MAN else WOMAN)
                if who == "unmarried woman" and len(words) == 1:
                    self._younger.add(words[0])  # MISS LUCY
        self._sex = {name: next(iter(sexes)) for name, sexes in said.items() if len(sexes) == 1}
        self._pronoun_sex = pronoun_sexes or {}
        self._family: dict[str, list[tuple[str, ...]]] = defaultdict(list)
        for words in set(full_names):
            if len(words) >= 2:
                self._family[words[-1]].append(words)
        # MISS STEELES, MISSES DASHWOOD: the family has daughters, more than one.
        self._sisters = set()
        for title in titles:
            first, *rest = title.split() or [""]
            if first == "MISSES" and len(rest) == 1:
                self._sisters.add(rest[0])
            elif first == "MISS" and len(rest) == 1 and rest[0].endswith("S"):
                self._sisters.update(w for w in (rest[0][:-1], rest[0][:-2]) if w in lasts)
        # MASTER REED: the family has a boy, and a man of it named without a man's title may
        # be he (JOHN REED is Master Reed, not the late Mr Reed).
        self._boys = {words[-1] for title, words in zip(titles, full_names)
                      if len(words) == 2 and first_word(title) == "MASTER"}
        # MRS MUSGROVE beside MRS CHARLES MUSGROVE: the wife called by her husband's given
        # name is a younger branch's, and CHARLES MUSGROVE, her husband, is not MR MUSGROVE.
        wives = {words for title, words in zip(titles, full_names)
                 if bearer(title) == "married woman"}
        self._branches = {words for words in wives if len(words) >= 2 and words[-1:] in wives}

    def _sex_of(self, words: tuple[str, ...], pronouns: bool = True) -> str | None:
        """By the name's own titles, else its given name's, else (`pronouns`) what the
        pronouns after the given name say."""
        forms = self._forms.get(words, set())
        if MAN in forms:
            return MAN
        if forms & _WOMEN:
            return WOMAN
        return self._sex.get(words[0], self._pronoun_sex.get(words[0]) if pronouns else None)

    def titled(self, full: str) -> bool:
        """Whether the corpus calls `full` by a title (SIR JOHN MIDDLETON), which SIR JOHN
        alone may then be; JOHN DASHWOOD, called MR, is no SIR JOHN."""
        return "titled" in self._forms.get(content_tokens(name_tokens(full)), set())

    def fits(self, short: str, full: str) -> bool:
        """Whether `short`, an honorific with a surname, can be `full`'s bearer."""
        who, words = bearer(short), content_tokens(name_tokens(full))
        surname = content_tokens(name_tokens(short))
        if len(words) < 2 or len(surname) != 1 or words[-1] != surname[0]:
            return False
        forms = self._forms.get(words, set())
        if who == MAN:
            a_man = MAN in forms if words[-1] in self._boys else \
                self._sex_of(words, pronouns=False) == MAN
            ranks = {form for form in forms if form.startswith("rank ")}
            own_rank = first_word(short) in language().ranks
            return a_man and "titled" not in forms and \
                first_word(short) not in language().titled and \
                words not in self._branches and (
                    "rank " + first_word(short) in ranks if own_rank else not ranks)
        if who == "unmarried woman":
            younger = "unmarried woman" in forms or words[0] in self._younger
            return self._sex_of(words) == WOMAN and (not younger or self._only_daughter(words))
        return False

    def _only_daughter(self, words: tuple[str, ...]) -> bool:
        """The one woman of her family named in full, of a family never written with daughters
        in the plural (MISS STEELES)."""
        return words[-1] not in self._sisters and [
            w for w in self._family[words[-1]] if self._sex_of(w) == WOMAN] == [words]
