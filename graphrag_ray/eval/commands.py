"""The `graphrag-ray eval` steps, each resumable: questions -> answer -> judge / claims ->
report. Everything lands in one folder; LLM replies are cached in its `cache/`, and finished
items in its JSON-lines files, so a crashed step rerun repeats no completed call."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from graphrag_ray.api import GraphIndex
from graphrag_ray.config import GraphRagConfig, LLMConfig
from graphrag_ray.errors import GraphRagError
from graphrag_ray.eval.answers import answer_questions
from graphrag_ray.eval.claims import measure_claims
from graphrag_ray.eval.judge import METRICS, judge_answers
from graphrag_ray.eval.questions import Question, generate_questions, read_questions, write_questions
from graphrag_ray.eval.records import RecordFile
from graphrag_ray.eval.report import write_report
from graphrag_ray.llm.cache import ResponseCache
from graphrag_ray.llm.client import ChatClient
from graphrag_ray.llm.embedding_methods import Embedder
from graphrag_ray.llm.rate_limiter import LocalRateLimiter
from graphrag_ray.distributed.services import open_services
from graphrag_ray.prompts_loader import load_prompts

Progress = Callable[[str], None]
ANSWERS, JUDGMENTS, CLAIMS = "answers.jsonl", "judgments.jsonl", "claims.jsonl"


def _answers(out: Path) -> RecordFile:
    return RecordFile(out / ANSWERS, ("question_id", "condition"))


def _judgments(out: Path) -> RecordFile:
    return RecordFile(out / JUDGMENTS, ("question_id", "metric", "a", "b", "repeat"))


def _claims(out: Path) -> RecordFile:
    return RecordFile(out / CLAIMS, ("question_id", "condition"))


def judge_llm(config: GraphRagConfig) -> LLMConfig:
    """The answer model's settings with the judge's model, endpoint and temperature."""
    cfg = config.eval
    return config.llm.model_copy(update={
        "model": cfg.judge_model or config.llm.model,
        "api_base": cfg.judge_api_base or config.llm.api_base,
        "temperature": cfg.judge_temperature})


def _chat(llm: LLMConfig, out: Path) -> ChatClient:
    if not llm.api_base:
        raise GraphRagError("evaluation needs an LLM: set llm.api_base (and eval.judge_* for "
                            "another judge)")
    return ChatClient(llm, limiter=LocalRateLimiter(llm), cache=ResponseCache(str(out / "cache")))


def questions_step(config: GraphRagConfig, out_csv: Path, description: str | None,
                   from_csv: Path | None, progress: Progress) -> list[Question]:
    if from_csv:
        questions = read_questions(from_csv)
    elif description:
        questions = generate_questions(description, config, load_prompts(config),
                                       _chat(config.llm, out_csv.parent))
        wanted = config.eval.users * config.eval.tasks_per_user * config.eval.questions_per_task
        if len(questions) < wanted:
            progress(f"warning: {len(questions)} unique questions of {wanted} asked for "
                     "(the model repeated some)")
    else:
        raise GraphRagError("give --description (to generate questions) or --from-csv")
    write_questions(questions, out_csv)
    return questions


def answer_step(index_url: str, questions_csv: Path, out: Path, config: GraphRagConfig,
                progress: Progress) -> int:
    index = GraphIndex.open(index_url, config=config, cache_url=str(out / "cache"))
    try:
        return answer_questions(index, read_questions(questions_csv), config.eval.conditions,
                                _answers(out), config.eval.concurrency, progress)
    finally:
        index.close()


def _answer_table(out: Path) -> dict[tuple[str, str], dict]:
    answers = {(a["question_id"], a["condition"]): a for a in _answers(out).read()}
    if not answers:
        raise GraphRagError(f"no answers in {out / ANSWERS}: run `eval answer` first")
    return answers


def judge_step(out: Path, config: GraphRagConfig, progress: Progress) -> int:
    unknown = [m for m in config.eval.metrics if m not in METRICS]
    if unknown:
        raise GraphRagError(f"unknown metrics {unknown}; known: {', '.join(METRICS)}")
    answers = _answer_table(out)
    conditions = [c for c in config.eval.conditions if any(k[1] == c for k in answers)]
    return judge_answers(answers, conditions, config.eval.metrics, config.eval.repeats,
                         _chat(judge_llm(config), out), load_prompts(config)["eval_judge"],
                         _judgments(out), config.eval.concurrency,
                         config.eval.max_output_tokens, config.llm.max_parse_retries + 1,
                         progress)


def claims_step(out: Path, config: GraphRagConfig, progress: Progress) -> int:
    services = open_services(config, ResponseCache(str(out / "cache")), on_ray=False,
                             job="eval")
    embedder = Embedder(config.embeddings, services)
    return measure_claims(list(_answer_table(out).values()), _chat(judge_llm(config), out),
                          load_prompts(config)["eval_claims"], embedder.embed,
                          config.eval.claim_distance_thresholds, _claims(out),
                          config.eval.concurrency, config.eval.max_output_tokens,
                          config.llm.max_parse_retries + 1, progress)


def report_step(out: Path, config: GraphRagConfig) -> list[Path]:
    answers = list(_answer_table(out).values())
    present = {a["condition"] for a in answers}
    conditions = [c for c in config.eval.conditions if c in present]
    return write_report(out, answers, _judgments(out).read(), _claims(out).read(), conditions,
                        config.eval.metrics)
