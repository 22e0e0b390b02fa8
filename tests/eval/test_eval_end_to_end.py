"""A tiny evaluation through the CLI against the test LLM server: questions, answers under two
conditions, judging, claims, report files; and a resumed step repeats no LLM call."""

import csv
import json

import pytest

from graphrag_ray.cli import main
from graphrag_ray.index.build import build_index
from graphrag_testkit.llm_server import run_test_server

from conftest import CAROL_DIR, llm_config


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    with run_test_server() as server:
        text = (CAROL_DIR / "book.txt").read_text(encoding="utf-8")
        start = text.find("STAVE ONE")
        corpus = tmp_path_factory.mktemp("corpus")
        (corpus / "carol.txt").write_text(text[start:start + 25_000], encoding="utf-8")
        index = tmp_path_factory.mktemp("index")
        build_index(str(corpus), str(index), llm_config(server, "runtime.engine=local"),
                    progress=lambda _: None)
        yield server, index, tmp_path_factory.mktemp("eval")


@pytest.mark.slow  # every evaluation step through the CLI
def test_tiny_evaluation_writes_the_report_and_resumes(setup, capsys):
    server, index, out = setup
    settings = ["--set", f"llm.api_base={server.url}", "--set", "llm.model=test-model",
                "--set", "eval.conditions=[C0,SS]", "--set", "eval.repeats=2"]
    questions = out / "questions.csv"
    assert main(["eval", "questions", "--out", str(questions), "--description",
                 "A Christmas Carol by Charles Dickens", "--set", "eval.users=2",
                 "--set", "eval.tasks_per_user=1", "--set", "eval.questions_per_task=2",
                 *settings]) == 0
    with questions.open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4 and all(r["user"] and r["task"] for r in rows)

    assert main(["eval", "answer", "--index", str(index), "--questions", str(questions),
                 "--dir", str(out), *settings]) == 0
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert {(a["condition"]) for a in answers} == {"C0", "SS"} and len(answers) == 8
    assert all(a["answer"] and a["llm_calls"] >= 1 and a["context_tokens"] > 0 for a in answers)

    # A crash mid-write: the last record is cut short. The rerun redoes that one answer, and
    # its LLM calls come from the cache.
    lines = (out / "answers.jsonl").read_text().splitlines()
    (out / "answers.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20])
    requests = server.stats()["requests"]
    capsys.readouterr()
    assert main(["eval", "answer", "--index", str(index), "--questions", str(questions),
                 "--dir", str(out), *settings]) == 0
    assert "answered 1 " in capsys.readouterr().out
    assert server.stats()["requests"] == requests

    assert main(["eval", "judge", "--dir", str(out), *settings]) == 0
    judgments = (out / "judgments.jsonl").read_text().splitlines()
    assert len(judgments) == 4 * 4 * 1 * 2  # questions x metrics x pairs x repeats
    assert main(["eval", "claims", "--dir", str(out), *settings]) == 0
    for name in ("summary.md", "context_tokens.csv", "claims.csv",
                 *[f"win_rates_{m}.{ext}" for m in ("comprehensiveness", "diversity",
                                                    "empowerment", "directness")
                   for ext in ("csv", "png")]):
        assert (out / name).stat().st_size > 0, name
    assert (out / "win_rates_diversity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (out / "summary.md").read_text()
    assert "| C0 |" in summary and "% of" in summary and "Claim metrics" in summary
    # Each pair's first condition was shown first in exactly half its judgements.
    assert "shown first 16 times and second 16 times" in summary

    requests = server.stats()["requests"]
    assert main(["eval", "judge", "--dir", str(out), *settings]) == 0
    assert server.stats()["requests"] == requests  # nothing left to judge


def test_eval_needs_answers_before_judging(tmp_path, capsys):
    assert main(["eval", "judge", "--dir", str(tmp_path), "--set",
                 "llm.api_base=http://127.0.0.1:9/v1"]) == 2
    assert "run `eval answer` first" in capsys.readouterr().err


def test_lazy_conditions_and_the_dry_run_that_calls_nothing(setup, tmp_path, capsys):
    server, index, _ = setup
    questions = tmp_path / "questions.csv"
    questions.write_text("question_text\nWhat does Scrooge say of Christmas?\n"
                         "How does Scrooge treat his clerk?\n", encoding="utf-8")
    settings = ["--set", f"llm.api_base={server.url}", "--set", "llm.model=gpt-4o-mini",
                "--set", "eval.conditions=[C0,SS,LZ100,LZ7]", "--set", "eval.repeats=1"]
    requests = server.stats()["requests"]
    capsys.readouterr()
    assert main(["eval", "answer", "--index", str(index), "--questions", str(questions),
                 "--dir", str(tmp_path / "eval"), "--dry-run", *settings]) == 0
    printed = capsys.readouterr().out
    assert server.stats()["requests"] == requests and not (tmp_path / "eval").exists()
    bounds = {line.split()[0]: int(line.split()[1].replace(",", ""))
              for line in printed.splitlines()[2:]}
    assert bounds["LZ7"] == 2 * 3 and bounds["LZ100"] == 2 * 7  # sub-questions, tests, answer
    assert bounds["judge"] == 2 * 6 * 4  # questions x pairs x metrics x 1 repeat
    assert "$" in printed.splitlines()[-1]  # gpt-4o-mini has a price

    assert main(["eval", "answer", "--index", str(index), "--questions", str(questions),
                 "--dir", str(tmp_path / "eval"), *settings]) == 0
    answers = [json.loads(line)
               for line in (tmp_path / "eval" / "answers.jsonl").read_text().splitlines()]
    lazy = [a for a in answers if a["condition"] == "LZ100"]
    assert len(lazy) == 2 and all("Sources (" in a["answer"] for a in lazy)
    assert all(a["llm_calls"] <= bounds[a["condition"]] / 2 for a in answers)
