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
from graphrag_ray.index.graph.merge import EITHER, GUESSED_TYPE
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


def describe_corpus(chat: ChatClient, prompts: dict[str, str], config: GraphRagConfig,
                    texts: list[str], language: str, domain: str | None) -> Tuning:
    """The model's domain (unless given), persona and entity types; no examples yet."""
    sample = joined_sample(texts, config.tokenizer.encoding)
    notes: list[str] = []

    def one_line(name: str, max_tokens: int, fallback: str, **values: str) -> str:
        """The model's one-line answer to `name`, asked again when empty; `fallback`, and a
        note saying so, when it never gives one."""
        try:
            return chat.complete_parsed(
                [{"role": "user", "content": render(prompts[name], input_text=sample,
                                                    **values)}],
                _one_line, max_tokens=max_tokens, cache_tag="tune", kind=name)
        except MalformedReply as exc:
            notes.append(f"the model gave no {name.removeprefix('tune_')} ({exc}): "
                         f"{fallback!r} used")
            return fallback

    if domain is None:
        domain = one_line("tune_domain", 60, "general texts", corpus_language=language)
    persona = one_line("tune_persona", 150, f"You are an expert reader of {domain}",
                       domain=domain)
    try:
        types = chat.complete_parsed(
            [{"role": "user", "content": render(prompts["tune_entity_types"], input_text=sample,
                                                domain=domain, persona=persona,
                                                corpus_language=language,
                                                max_types=MAX_TYPES)}],
            _entity_types, max_tokens=200, cache_tag="tune", kind="tune_entity_types")
    except MalformedReply as exc:
        types = list(config.extraction.entity_types)
        notes.append(f"the entity types reply was not a list ({exc}): kept "
                     f"{', '.join(types)}")
    return Tuning(language, domain, persona + ".", types, [], "llm", notes)


def worked_examples(chat: ChatClient, config: GraphRagConfig, texts: list[str],
                    tuning: Tuning, extract_template: str) -> list[Example]:
    """Short sampled passages run through `extract_template` (the extraction prompt as
    tuned, without examples): what the model writes for them is the prompt's example."""
    ex = config.extraction
    delimiters = Delimiters(ex.tuple_delimiter, ex.record_delimiter, ex.completion_delimiter)
    examples = []
    for passage in passages(texts, EXAMPLE_TOKENS, config.tokenizer.encoding):
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


def _one_line(reply: str) -> str:
    """A reply's first line, without quotes or emphasis; an empty reply is none."""
    line = next((part.strip() for part in reply.strip().splitlines() if part.strip()), "")
    line = line.strip("\"'*` ").rstrip(".")
    if not line:
        raise ValueError("an empty reply")
    return line


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
