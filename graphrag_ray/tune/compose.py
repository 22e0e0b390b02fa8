"""The tuned prompt files, written from the built-ins: what a tuning changes is said in a
few lines added to each, never by rewriting the built-in's instructions, so the record format
and every section the parsers read stay as they are.

- extraction: the persona and the domain first, the record descriptions written in
  `{language}`, and the corpus's own worked examples in place of the built-in one (their
  records in the prompt's delimiter placeholders, so a later change of delimiters holds);
- summaries and reports: the persona first and their text in `{language}` (a report's JSON
  keys stay English: the parser reads them);
- answers: written in `{language}`.

`{language}` stays a placeholder: the settings' `prompts.language` fills it (`load_prompts`),
so one setting changes the language every prompt asks for.
"""

from __future__ import annotations

import re

from graphrag_ray.tune.tuning import Example, Tuning

# The built-in extraction prompt's worked example sits between these two lines.
_EXAMPLE_START, _EXAMPLE_END = "Worked example\n", "\nNow the real task"
_ENGLISH_RECORDS = re.compile(r"in\s+English\.")
TEXT_IN_LANGUAGE = "Write every description in {language}; write names as the text writes them."
REPORT_IN_LANGUAGE = ("Write the report's text (title, summary, explanations, findings) in "
                      "{language}; keep the JSON keys exactly as given.")
ANSWER_IN_LANGUAGE = "Write the answer in {language}."
ANSWER_JSON_IN_LANGUAGE = "Write the answer's text in {language}; keep the JSON keys as given."
# Prompts whose output a reader sees as the answer (the final step of each query method).
ANSWER_PROMPTS = ("global_reduce", "local_answer", "basic_answer", "drift_reduce",
                  "lazy_answer")
ANSWER_JSON_PROMPTS = ("global_map_single", "text_map_single")


def tuned_prompts(builtins: dict[str, str], tuning: Tuning) -> dict[str, str]:
    """Prompt name -> tuned text, for the prompts a tuning changes."""
    persona = f"{tuning.persona}\nThe documents are {tuning.domain}.\n\n"
    prompts = {
        "extract_graph": tuned_extraction(builtins["extract_graph"], tuning),
        "summarize_descriptions": f"{persona}{TEXT_IN_LANGUAGE}\n\n"
                                  f"{builtins['summarize_descriptions']}",
        "community_report": f"{persona}{REPORT_IN_LANGUAGE}\n\n{builtins['community_report']}",
    }
    for name in ANSWER_PROMPTS:
        prompts[name] = f"{ANSWER_IN_LANGUAGE}\n\n{builtins[name]}"
    for name in ANSWER_JSON_PROMPTS:
        prompts[name] = f"{ANSWER_JSON_IN_LANGUAGE}\n\n{builtins[name]}"
    return prompts


def tuned_extraction(builtin: str, tuning: Tuning, with_examples: bool = True) -> str:
    """The extraction prompt with the persona, the language and (`with_examples`) the
    corpus's worked examples; the built-in example stays when the tuning found none."""
    text = _ENGLISH_RECORDS.sub("in {language}.", builtin, count=1)
    text = f"{tuning.persona}\nThe documents are {tuning.domain}.\n{TEXT_IN_LANGUAGE}\n\n{text}"
    start, end = text.find(_EXAMPLE_START), text.find(_EXAMPLE_END)
    if not (with_examples and tuning.examples) or start < 0 or end < start:
        return text
    shown = "\n\n".join(_worked(example, tuning.entity_types) for example in tuning.examples)
    return f"{text[:start]}Worked examples\n{shown}\n{text[end:]}"


def _worked(example: Example, entity_types: list[str]) -> str:
    records = [_record("entity", e["title"], e["type"].upper(), e["description"])
               for e in example.entities]
    records += [_record("relationship", r["source"], r["target"], r["description"],
                        str(int(round(float(r["strength"])))))
                for r in example.relationships]
    return (f"Entity types: {', '.join(entity_types)}\nText:\n{example.text}\nOutput:\n"
            + "{record_delimiter}\n".join(records) + "\n{completion_delimiter}")


def _record(kind: str, *fields: str) -> str:
    # A field must not hold the placeholders' braces or break the record's line.
    clean = [" ".join(str(f).replace("{", "(").replace("}", ")").split()) for f in fields]
    return f'("{kind}"' + "".join("{tuple_delimiter}" + f for f in clean) + ")"
