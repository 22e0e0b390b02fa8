"""What prompt-tune decides about a corpus from its sampled chunks: its domain, a persona for
the model, the entity types its graph should record, and worked extraction examples written
from its own passages, in its own language.

With an LLM (the paper's method) each is asked of the model: the domain, the persona and the
types by prompts of their own (`tune_domain`, `tune_persona`, `tune_entity_types`;
`describe_corpus`), the examples by the tuned extraction prompt itself run on short passages
(`worked_examples`), so an example is what the model writes for the prompt it will sit in.
Offline, the types are those the offline extractor votes for most often in the sample, the
examples its records of short passages, the domain the names the sample mentions most.

The tuning prompts name the corpus's language `{corpus_language}`: `{language}` is the
job's (`prompts.language`), filled when prompts are loaded.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.index.extract.nlp_extractor import extract_nlp
from graphrag_ray.index.extract.tuples import Delimiters, ParsedRecords, parse_graph_records
from graphrag_ray.index.elements import EITHER, GUESSED_TYPE
from graphrag_ray.llm.client import ChatClient, MalformedReply
from graphrag_ray.prompts_loader import render
from graphrag_ray.terms import content_terms
from graphrag_ray.tokens import truncate_to_tokens
from graphrag_ray.tune.language import function_words

# Sampled text shown to each tuning prompt, and the length of a worked example's passage.
SAMPLE_TOKENS = 6000
EXAMPLE_TOKENS = 220
EXAMPLES = 2
MAX_TYPES = 8
_CJK_GAP = re.compile(r"(?<=[。！？])\s+")  # sentences joined where the script uses no space
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|[。！？]")
NO_EXAMPLE = ("no sampled passage gave records of two related things: the built-in worked "
              "example is kept")
# A worked example shows at most this many records of each kind: enough to teach the format.
EXAMPLE_ENTITIES, EXAMPLE_RELATIONSHIPS = 8, 6


@dataclass
class Example:
    """A worked extraction: a passage and the records it yields."""
    text: str
    entities: list[dict] = field(default_factory=list)
    relationships: list[dict] = field(default_factory=list)


@dataclass
class Tuning:
    language: str
    domain: str
    persona: str
    entity_types: list[str]
    examples: list[Example]
    method: str  # llm | offline
    notes: list[str] = field(default_factory=list)  # what fell back, and why

    def to_json(self) -> dict:
        return asdict(self)


def passages(texts: list[str], tokens: int, encoding: str) -> list[str]:
    """Short passages for worked examples: each sample chunk's opening whole sentences, up
    to `tokens` (the chunk's text as written, on one line), those naming the most
    capitalised words first."""
    found = []
    for text in texts:
        head = truncate_to_tokens(_CJK_GAP.sub("", " ".join(text.split())), tokens, encoding)
        cut = max((m.end() for m in _SENTENCE_END.finditer(head)), default=0)
        passage = (head[:cut] if cut else head).strip()
        if passage:
            found.append(passage)
    return sorted(found, key=lambda p: -sum(w[:1].isupper() for w in p.split()))


def joined_sample(texts: list[str], encoding: str) -> str:
    """The sampled chunks as one text within `SAMPLE_TOKENS`, each chunk's share equal."""
    share = max(200, SAMPLE_TOKENS // max(1, len(texts)))
    return "\n\n---\n\n".join(truncate_to_tokens(t.strip(), share, encoding) for t in texts)


# The second ask when a reply was no answer: the same prompt, and this line after it.
STRICTER = ("\n\nReply with the {what} itself, in a few words of the corpus's language: not "
            "an acknowledgement, a question or a comment on these instructions.")


def describe_corpus(chat: ChatClient, prompts: dict[str, str], config: GraphRagConfig,
                    texts: list[str], language: str, domain: str | None) -> Tuning:
    """The model's domain (unless given), persona and entity types; no examples yet. Each
    reply is checked (`_checked`): one that is no answer (empty, "OK.", the same words it
    gave another question) is asked once more, more strictly, then the built-in text is
    kept and a note says so."""
    sample = joined_sample(texts, config.tokenizer.encoding)
    notes: list[str] = []
    given: list[str] = []

    def ask(name: str, parse, max_tokens: int, fallback, what: str, **values: str):
        prompt = render(prompts[name], input_text=sample, **values)
        for attempt, suffix in enumerate(("", STRICTER.format(what=what))):
            try:
                answer = chat.complete_parsed(
                    [{"role": "user", "content": prompt + suffix}], parse, retries=0,
                    max_tokens=max_tokens, cache_tag=f"tune:{attempt}", kind=name)
            except MalformedReply as exc:
                problem = str(exc).partition("attempts: ")[2] or str(exc)
                continue
            if _said_before(answer, given):
                problem = "the same words it gave another question"
                continue
            given.append(str(answer))
            return answer
        notes.append(f"the model gave no {what} in two asks ({problem}): "
                     f"the built-in {fallback!r} is kept")
        return fallback

    if domain is None:
        domain = ask("tune_domain", _checked(1), 60, "general texts", "domain",
                     corpus_language=language)
    persona = ask("tune_persona", _checked(3), 150, f"You are an expert reader of {domain}",
                  "persona", domain=domain)
    types = ask("tune_entity_types", _entity_types, 200, list(config.extraction.entity_types),
                "list of entity types", domain=domain, persona=persona,
                corpus_language=language, max_types=MAX_TYPES)
    return Tuning(language, domain, persona + ".", types, [], "llm", notes)


def _said_before(answer, given: list[str]) -> bool:
    """A model that answers every question alike ("Understood.") is answering none."""
    key = " ".join(str(answer).lower().split()).strip(".")
    return any(key == " ".join(g.lower().split()).strip(".") for g in given)


def worked_examples(chat: ChatClient, config: GraphRagConfig, texts: list[str],
                    tuning: Tuning, extract_template: str) -> list[Example]:
    """Short sampled passages run through `extract_template` (the extraction prompt as
    tuned, without examples): what the model writes for them is the prompt's example."""
    ex = config.extraction
    delimiters = Delimiters(ex.tuple_delimiter, ex.record_delimiter, ex.completion_delimiter)
    examples = []
    # A model that writes no records for the first passages writes none for the others:
    # at most two passages more than the examples wanted are tried.
    for passage in passages(texts, EXAMPLE_TOKENS, config.tokenizer.encoding)[:EXAMPLES + 2]:
        prompt = render(extract_template, entity_types=", ".join(tuning.entity_types),
                        input_text=passage, tuple_delimiter=delimiters.tuple,
                        record_delimiter=delimiters.record,
                        completion_delimiter=delimiters.completion, language=tuning.language)
        start = prompt.rfind(passage)
        about = {"delimiters": [delimiters.tuple, delimiters.record, delimiters.completion],
                 "entity_types": tuning.entity_types, "text": [start, start + len(passage)]}
        reply = chat.complete([{"role": "user", "content": prompt}],
                              max_tokens=ex.max_output_tokens, cache_tag="tune",
                              kind="extract_graph", about=about)
        example = _example(passage, parse_graph_records(reply, delimiters))
        if example is not None:
            examples.append(example)
        if len(examples) == EXAMPLES:
            break
    return examples


def tune_offline(config: GraphRagConfig, texts: list[str], language: str,
                 domain: str | None) -> Tuning:
    """From the offline extractor's statistics and records; no model is asked."""
    votes: Counter = Counter()
    for text in texts:
        votes.update(_type_of(e).lower() for e in extract_nlp(text).entities)
    types = [t for t, _ in votes.most_common(MAX_TYPES) if t != "other"] \
        or list(config.extraction.entity_types)
    if domain is None:  # the names the sample mentions most, else its commonest words
        names = Counter(e["title"] for text in texts for e in extract_nlp(text).entities)
        common = [n.title() for n, _ in names.most_common(4)]
        if not common:
            skip = function_words(language)
            terms = Counter(t for text in texts for t in content_terms(text)
                            if t not in skip and len(t) > 3)
            common = [t for t, _ in terms.most_common(4)]
        domain = f"texts about {', '.join(common)}" if common else "general texts"
    persona = (f"You are an expert reader of {domain}, who records the things they name "
               "and how those things relate.")
    examples = []
    for passage in passages(texts, EXAMPLE_TOKENS, config.tokenizer.encoding):
        example = _example(passage, extract_nlp(passage))
        if example is not None:
            examples.append(example)
        if len(examples) == EXAMPLES:
            break
    return Tuning(language, domain, persona, types, examples, "offline",
                  [] if examples else [NO_EXAMPLE])


def _type_of(entity: dict) -> str:
    """An offline record's type without the mark of a guess (`merge.GUESSED_TYPE`): a prompt
    shows types as the model should write them; OTHER for a mention that says one of two
    types without saying which (`merge.EITHER`)."""
    kind = entity["type"].removesuffix(GUESSED_TYPE)
    return "OTHER" if EITHER in kind else kind


def _example(passage: str, records: ParsedRecords) -> Example | None:
    """A worked example from a passage's records: its first entities and the relationships
    between them; None unless it shows at least one relationship."""
    entities = records.entities[:EXAMPLE_ENTITIES]
    names = {e["title"] for e in entities}
    relationships = [r for r in records.relationships
                     if r["source"] in names and r["target"] in names][:EXAMPLE_RELATIONSHIPS]
    if not relationships:
        return None
    return Example(passage, [{"title": e["title"], "type": _type_of(e),
                              "description": e["description"]} for e in entities],
                   [{"source": r["source"], "target": r["target"],
                     "description": r["description"], "strength": r.get("strength") or 1}
                    for r in relationships])


# One-word replies that acknowledge instead of answering, in the languages the prompts are
# written in most (data, not rules: a reply of fewer than `_SHORTEST` letters is none either).
ACKNOWLEDGEMENTS = frozenset(phrase.strip() for phrase in """ok, okay, sure, yes, no,
understood, certainly, done, noted, fine, got it, of course, agreed, d'accord, oui,
bien entendu, compris, vale, claro, entendido, ja, jawohl, verstanden, sì, certo, 好, 好的,
是, 明白, 了解, はい, 네, 알겠습니다, да, понял""".replace("\n", " ").split(","))
_SHORTEST = 3


def _checked(fewest_words: int):
    """A parser of a one-line answer of at least `fewest_words` words: its first line,
    without quotes or emphasis; ValueError for an empty reply or an acknowledgement."""
    def parse(reply: str) -> str:
        line = next((part.strip() for part in reply.strip().splitlines() if part.strip()), "")
        line = line.strip("\"'*` ").rstrip(".!。")
        letters = sum(ch.isalpha() for ch in line)
        # Words: spaced ones, and each character of scripts written without spaces.
        words = len(line.split()) + sum(ord(ch) >= 0x2E80 for ch in line)
        if not line:
            raise ValueError("an empty reply")
        if line.lower() in ACKNOWLEDGEMENTS or letters < _SHORTEST:
            raise ValueError(f"an acknowledgement, not an answer: {line!r}")
        if words < fewest_words:
            raise ValueError(f"too short to be one: {line!r}")
        return line
    return parse


def _entity_types(reply: str) -> list[str]:
    """A JSON list of type names (a fenced or prefixed list too), lowercased, at most
    `MAX_TYPES`."""
    start, end = reply.find("["), reply.rfind("]")
    if start < 0 or end < start:
        raise ValueError("no JSON list in the reply")
    values = json.loads(reply[start:end + 1])
    if not isinstance(values, list):
        raise ValueError("not a list")
    types = list(dict.fromkeys(str(v).strip().lower() for v in values
                               if isinstance(v, str) and str(v).strip()))
    if not types:
        raise ValueError("an empty list")
    return types[:MAX_TYPES]
