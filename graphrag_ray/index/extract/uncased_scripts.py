"""Offline names and concepts in scripts without capital letters, where the capitalisation
the offline extractor reads for names says nothing (Chinese, Japanese, Arabic, Hebrew,
Devanagari, ...): so every language gets a graph.

- Chinese: jieba's segmenter and part-of-speech tags (it ships its dictionary: nothing is
  downloaded): person, place and organisation names become PERSON, GEO and ORGANIZATION
  entities (types from the tagger's evidence), other proper nouns and compound nouns of four
  or more characters become concepts (OTHER); shorter common nouns (会议, 教授, 文章) do not.
- Japanese (kana present): katakana runs (names and loanwords) and kanji compounds said
  twice in the chunk.
- Thai: PyThaiNLP's dictionary segmenter (newmm; it ships its dictionary and name lists):
  a title and the name after it (นาย, นางสาว, ดร.) -> PERSON, an organisation's kind word and
  the words after it (บริษัท, มหาวิทยาลัย...) -> ORGANIZATION, a place's (จังหวัด, แม่น้ำ...)
  -> GEO, words of its lists of provinces and countries -> GEO and of given names -> PERSON;
  each name found anywhere in the chunk is then found wherever the chunk says it.
- Space-separated scripts: the longest word sequences (one to three words, none a stop word)
  said at least twice in the chunk: statistical phrases, typed OTHER.
Scripts written without spaces and without a segmenter here (Khmer, Lao, Burmese) get no
entities yet.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from functools import lru_cache

from graphrag_ray.terms import WORD_MARKS

_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = r"\u3040-\u30ff"
_KATAKANA_RUN = re.compile(r"[\u30a0-\u30ff]{2,}")
_KANJI_RUN = re.compile(rf"[{_HAN}]{{2,}}")
# Letters, and the vowel signs inside Indic, Hebrew and Arabic words (not letters to `re`).
_WORD = re.compile(rf"[^\W\d_](?:[^\W\d_]|[{WORD_MARKS}])*")
_THAI = re.compile(r"[\u0e00-\u0e7f]")
# Tags of jieba's dictionary: nr person, nrfg/nrt names, ns place, nt organisation, nz other
# proper noun.
_CHINESE_TYPES = {"nr": "PERSON", "nrfg": "PERSON", "nrt": "PERSON", "ns": "GEO",
                  "nt": "ORGANIZATION", "nz": "OTHER"}
# Function words of the space-separated uncased scripts handled here: a phrase starting or
# ending with one is not a name.
_STOPWORDS = frozenset("""
في من على إلى عن مع هذا هذه ذلك تلك التي الذي الذين أن إن كان كانت قد لا ما لم لن هو هي هم
نحن أنا أنت كل بعض بين حتى ثم أو أي عند منذ بعد قبل فوق تحت حول خلال و ف ب ل ك يا قال قالت
عام سنة يوم شهر له لها لهم ذات أيضا
את של על עם זה זו הוא היא הם אני אתה כל גם או אם כי לא כן יש אין היה היתה אל מן עד אחרי לפני
और का की के में से को पर यह वह है थे था थी हैं कि जो भी नहीं तो ही एक
""".split())


def is_uncased(sentence: str) -> bool:
    """Whether most of the sentence's letters belong to scripts without case."""
    letters = [c for c in sentence if c.isalpha()]
    uncased = sum(1 for c in letters if not c.isupper() and not c.islower())
    return bool(letters) and uncased > 0.5 * len(letters)


@lru_cache(maxsize=1)
def _jieba():
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    return jieba.posseg


def _chinese_words(text: str) -> list[tuple[str, str]]:
    return [(w.word, w.flag) for w in _jieba().cut(text)]


# The commonest Chinese surnames (one character): a name the segmenter cut after one of them
# is joined back.
_CHINESE_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏"
    "魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚"
    "邵万钱严覃武戴莫孔汤")
_CHINESE_NAME_TAGS = {"nr", "nrfg", "nrt", "ns", "nz"}
_THAI_TITLES = frozenset("นาย นาง นางสาว คุณ ดร. ดร ศาสตราจารย์ รองศาสตราจารย์ "
                         "ผู้ช่วยศาสตราจารย์ พลเอก".split())
_THAI_ORG_WORDS = ("มหาวิทยาลัย", "โรงพยาบาล", "โรงเรียน", "ธนาคาร", "บริษัท", "กระทรวง",
                   "สถาบัน", "องค์การ", "สำนักงาน", "พรรค", "สมาคม", "มูลนิธิ", "กรม")
_THAI_PLACE_WORDS = ("จังหวัด", "อำเภอ", "เมือง", "แม่น้ำ", "ประเทศ", "เกาะ", "ดอย", "ภูเขา",
                     "ถนน", "วัด")
# Words that end a name run after a kind word: prepositions, conjunctions, common verbs.
_THAI_STOPS = frozenset("ใน ที่ จาก ไป มา กับ และ ของ ว่า เป็น ได้ ให้ โดย เพื่อ แต่ หรือ "
                        "ซึ่ง จะ ก็ ยัง แล้ว ทุก เมื่อ ตั้งแต่ ถึง กล่าว กล่าวว่า ประกาศ".split())
_THAI_NAME_WORDS = 3  # tokens a name may take after its kind word or title


@lru_cache(maxsize=1)
def _thai_lists() -> tuple[frozenset, frozenset]:
    from pythainlp.corpus import countries, provinces, thai_female_names, thai_male_names

    places = frozenset(p for p in provinces() | countries() if len(p) >= 3) - _THAI_STOPS
    return places, frozenset(thai_male_names() | thai_female_names())


def _thai_names(text: str) -> dict[str, str]:
    """NAME -> TYPE of the Thai names in a chunk (see the module's docstring)."""
    from pythainlp.tokenize import word_tokenize

    places, given_names = _thai_lists()
    tokens = word_tokenize(text, engine="newmm", keep_whitespace=True)
    names: dict[str, str] = {}

    def run_after(i: int) -> list[str]:
        run = []
        for token in tokens[i + 1:i + 1 + _THAI_NAME_WORDS]:
            if not _THAI.search(token) or token in _THAI_STOPS or token in _THAI_TITLES or \
                    token.startswith(_THAI_ORG_WORDS):
                break
            run.append(token)
        return run

    for i, token in enumerate(tokens):
        if token in _THAI_TITLES and (run := run_after(i)):
            names.setdefault("".join(run), "PERSON")
        elif token.startswith(_THAI_ORG_WORDS):
            names.setdefault(token + "".join(run_after(i)) if token in _THAI_ORG_WORDS
                             else token, "ORGANIZATION")
        elif token in _THAI_PLACE_WORDS and (run := run_after(i)):
            names.setdefault(run[0], "GEO")
        elif token in places:
            names.setdefault(token, "GEO")
        elif i + 1 < len(tokens) and token + tokens[i + 1] in given_names:
            # A given name the segmenter cut in two (สม + ชาย); a one-word given name is too
            # often a word (ใหม่ "new", รัก "love") to be read as a name alone.
            names.setdefault(token + tokens[i + 1], "PERSON")
    return {name: kind for name, kind in names.items() if len(name) >= 2}


class UncasedChunk:
    """One chunk's counts, so a sentence's concepts can ask "said twice in the chunk?"."""

    def __init__(self, text: str):
        self.text = text
        self.japanese = bool(re.search(f"[{_KANA}]", text))
        self.thai_names = _thai_names(text) if _THAI.search(text) else {}
        self.run_counts: Counter = Counter()
        self.phrase_counts: Counter = Counter()
        if self.japanese:
            self.run_counts.update(_KATAKANA_RUN.findall(text) + _KANJI_RUN.findall(text))
        words = [w for w in _WORD.findall(text) if is_uncased(w)]
        for n in (1, 2, 3):
            for i in range(len(words) - n + 1):
                gram = words[i:i + n]
                if gram[0] not in _STOPWORDS and gram[-1] not in _STOPWORDS and \
                        all(len(w) >= 2 for w in gram):
                    self.phrase_counts[" ".join(gram)] += 1

    def entities(self, sentence: str) -> list[tuple[str, str]]:
        """(NAME, TYPE) in the sentence, in order, without repeats."""
        found: dict[str, str] = {}
        if self.thai_names and _THAI.search(sentence):
            # Longest names first; a name inside a longer one found there (ไทย in
            # บริษัทการบินไทย) is not a mention of its own.
            taken = [False] * len(sentence)
            places = []
            for name in sorted(self.thai_names, key=len, reverse=True):
                for match in re.finditer(re.escape(name), sentence):
                    if not any(taken[match.start():match.end()]):
                        taken[match.start():match.end()] = [True] * len(name)
                        places.append((match.start(), name))
            for _, name in sorted(places):
                found.setdefault(name, self.thai_names[name])
        elif self.japanese and re.search(f"[{_HAN}{_KANA}]", sentence):
            for run in _KATAKANA_RUN.findall(sentence) + _KANJI_RUN.findall(sentence):
                if self.run_counts[run] >= 2:
                    found.setdefault(run, "OTHER")
        elif re.search(f"[{_HAN}]", sentence):
            words = _chinese_words(sentence)
            for k, (word, flag) in enumerate(words):
                following = words[k + 1] if k + 1 < len(words) else ("", "")
                if word in _CHINESE_SURNAMES and 1 <= len(following[0]) <= 2 and \
                        following[1] in _CHINESE_NAME_TAGS:
                    # The segmenter cut a name after its surname (郑 + 海涛, 赵 + 建国).
                    found.setdefault(word + following[0], "PERSON")
                elif flag in _CHINESE_TYPES and len(word) >= 2 and \
                        not (k and words[k - 1][0] in _CHINESE_SURNAMES):
                    found.setdefault(word, _CHINESE_TYPES[flag])
                elif flag == "n" and len(word) >= 4 and self.text.count(word) >= 2:
                    # Compounds the chunk says twice (人工智能, 计算机科学); said once they
                    # are as often a phrase (筹集资金, 工程进度) as a concept.
                    found.setdefault(word, "OTHER")
        else:
            found.update((phrase, "OTHER") for phrase in self._phrases(sentence))
        return list(found.items())

    def _phrases(self, sentence: str) -> list[str]:
        """The sentence's phrases said at least twice in the chunk, longest first, with the
        words of a kept phrase not kept again on their own."""
        words = _WORD.findall(sentence)
        kept, used = [], set()
        for n in (3, 2, 1):
            for i in range(len(words) - n + 1):
                phrase = " ".join(words[i:i + n])
                span = set(range(i, i + n))
                if self.phrase_counts[phrase] >= 2 and not span & used:
                    kept.append((i, phrase))
                    used |= span
        return [phrase for _, phrase in sorted(kept)]
