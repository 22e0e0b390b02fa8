"""What each chat request is, said in a header that providers ignore.

The project's test server answers by it instead of by the prompt's wording, so an edited or
tuned prompt still gets the right kind of answer; a request without it (another client) is
told by its prose. The header is not part of the response cache's key: the same request,
however it is named, has the same reply.
"""

REQUEST_KIND_HEADER = "X-Graphrag-Request-Kind"
# What an extraction request holds besides its prose, as ASCII JSON: the record delimiters
# (`delimiters`: tuple, record, completion), the entity types asked for, and where in the
# first message the input text is (`text`: [start, end) characters); on every request of a
# job whose prompts ask for a language (`prompts.language`), that language (`language`).
REQUEST_ABOUT_HEADER = "X-Graphrag-Request-About"

KINDS = (
    # index
    "extract_graph", "glean_check", "glean_continue", "claims", "summarize", "resolve_pairs",
    "community_report",
    # query
    "global_map", "global_map_single", "global_reduce", "rate_report", "drift_step",
    "drift_reduce", "hypothetical_answer", "context_answer", "lazy_subquestions",
    "lazy_relevance", "lazy_answer",
    # eval
    "eval_personas", "eval_questions", "eval_claims", "eval_judge",
    # prompt-tune
    "tune_domain", "tune_persona", "tune_entity_types",
    # doctor's probes, and anything else
    "json_only", "yes_no", "other")
