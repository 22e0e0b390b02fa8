"""What a question asks about, for the offline (extractive) answers.

Lexical matching alone answers "What are the main themes of these novels?" with a preface
that talks about novels, and "Which places matter most?" with a sentence saying something
"doesn't matter". So a question is read as:
- its content terms without the words that only frame a question (themes, discussed, the
  text, these novels, matter, role...): those are what a finding must share;
- the kind of entity it asks for, from its kind words (people, guests, places, companies,
  events; in English, French and Chinese) or an opening "who"/"where": findings about
  entities of that kind (their citations say which) answer it.

A finding's kinds come from its citations: an entity finding cites the entity, a
relationship finding the relationship, whose two ends have kinds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.index.reports.citations import cited_ids
from graphrag_ray.terms import content_terms

# Words that say how to answer or what the corpus is, not what the answer is about.
FRAMING = frozenset(content_terms("""
themes theme topics topic subject subjects discussed discuss discusses discussion discussions
described describe describes mentioned mention mentions said say says talk talked talks
speak speaks important importance matter matters role roles appear appears take takes took
happen happens happened happening course text texts book books novel novels story stories
tale tales corpus document documents dataset collection podcast podcasts episode episodes
transcript transcripts article articles chapter chapters passage passages relate relates
related relationship relationships
each other different various often frequently commonly typically specific particular kinds
kind types type overall generally emphasize highlighted highlight compared compare arise
recurring interviews interview focused during
theme themes principaux principales sujets sujet texte livre roman romans recit role
importants importantes important comptent compte discutes decrits mentionnes dit disent
parle parlent apparaissent passe fil comment qu relient relations autres plus lies
liees eux evoque evoques font
"""))
# Chinese has no spaces: these words are cut out of a question before its characters are
# paired, so no pair straddles "哪些" and "地方".
_CHINESE_FRAMING = re.compile(
    "哪些|哪个|什么|怎么|怎样|如何|为什么|是否|主题|主要|文本|本书|这本书|小说|讨论|描述|提到|重要|"
    "发生|作用|之间|关系|出现|它们|他们|做了|说了|关于|最|吗|呢|了|的|是|有|在|和|与|或|中|起|说|谁|"
    "哪里")

# Words naming the kind of entity a question wants (folded, as content_terms gives them).
KIND_WORDS = {
    "PERSON": "people person persons characters character individuals figures guests guest "
              "speakers speaker leaders founders personnes personnages gens 人物 角色 人们",
    "GEO": "places place locations location countries country cities city regions region "
           "settings setting lieux lieu endroits pays villes ville 地方 地点 城市 国家",
    "ORGANIZATION": "organisations organisation organizations organization companies company "
                    "institutions institution firms startups businesses groups entreprises "
                    "societes 组织 机构 公司",
    "EVENT": "events event evenements evenement 事件",
}
# How an answer names a kind it looked for.
KIND_NAMES = {"PERSON": "people", "GEO": "places", "ORGANIZATION": "organisations",
              "EVENT": "events"}
_KIND_OF_WORD = {term: kind for kind, words in KIND_WORDS.items()
                 for term in content_terms(words)}
# An opening interrogative that asks for a kind ("Who...", "Where...", "Qui...", "Où...").
_OPENING = [(re.compile(r"^\s*(who|qui)\b|谁", re.I), "PERSON"),
            (re.compile(r"^\s*(where|où)\b|哪里|什么地方", re.I), "GEO")]
_PHRASES = re.compile(r"\btake[sn]? place\b|\btook place\b|\bover the course of\b|"
                      r"\bau fil\b|\bont lieu\b|\ba lieu\b", re.I)


@dataclass(frozen=True)
class QuestionFocus:
    terms: frozenset[str]  # what a finding must share with the question
    kinds: frozenset[str]  # entity types the question asks for (none: any)


def question_focus(question: str) -> QuestionFocus:
    text = _PHRASES.sub(" ", question)
    kinds = {kind for pattern, kind in _OPENING if pattern.search(text)}
    for word, kind in _KIND_OF_WORD.items():
        if not word.isascii() and word in text:  # a Chinese kind word, wherever it stands
            kinds.add(kind)
            text = text.replace(word, " ")
    terms = set()
    for term in content_terms(_CHINESE_FRAMING.sub(" ", text)):
        if term in _KIND_OF_WORD:
            kinds.add(_KIND_OF_WORD[term])
        elif term not in FRAMING:
            terms.add(term)
    return QuestionFocus(frozenset(terms), frozenset(kinds))


def finding_kinds(read: Callable[..., pa.Table]) -> Callable[[str], list[str]]:
    """A finding's text -> the kinds of what it cites (one per entity, two per relationship),
    read from the index's entities and relationships (`read(name, columns)`)."""
    entities = read(schema.ENTITIES, ["human_readable_id", "title", "type"]).to_pylist()
    kind_of_title = {e["title"]: (e["type"] or "").upper() for e in entities}
    kind_of_entity = {e["human_readable_id"]: kind_of_title[e["title"]] for e in entities}
    kinds_of_relationship = {
        r["human_readable_id"]: [kind_of_title.get(r["source"], ""),
                                 kind_of_title.get(r["target"], "")]
        for r in read(schema.RELATIONSHIPS, ["human_readable_id", "source", "target"]
                      ).to_pylist()}

    def kinds(text: str) -> list[str]:
        cited = cited_ids(text)
        return [kind_of_entity.get(number, "") for number in cited.get("entities", [])] + [
            kind for number in cited.get("relationships", [])
            for kind in kinds_of_relationship.get(number, [])]

    return kinds
