"""The offline default, measured on corpora it was not tuned on, before and after a change:
per corpus, entities, the share typed OTHER (all, and the top 100 by degree), the share of
junk among the top 100 by degree (hand labels in scripts/labels/offline_junk.json; titles
without a label are counted and listed), entities in non-Latin scripts, the share of the
corpus's tokens kept out of extraction as repeated passages, and, for 10 global questions
(the podcast's first 10 of its own question set; for the others, the same 10 generic
questions in the corpus's language), how many answer points repeat another and the share of
answer points that are on the question (hand labels in scripts/labels/offline_on_topic.json,
by question and point; points without a label are counted).

    python scripts/offline_quality.py --before 8baf7a2 --json out.json
    python scripts/offline_quality.py --label podcast     # print unlabelled top-100 titles
    python scripts/offline_quality.py --before 8baf7a2 --unlabelled todo.json   # to label

`--before REV` builds the same corpora with the code at REV (a git worktree), so "before"
and "after" are measured by the same script.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from graphrag_ray import schema  # noqa: E402
from graphrag_ray.storage import IndexStore  # noqa: E402
from graphrag_ray.terms import content_terms, says_the_same  # noqa: E402

SHARED = REPO.parent / "shared" / "corpora"
CORPORA = {
    "podcast": SHARED / "podcast" / "input",
    "carol": SHARED / "christmas_carol",
    # Six articles each, written for this measurement, with a newspaper's notice repeated.
    "french": REPO / "tests" / "data" / "other_languages" / "fr",
    "chinese": REPO / "tests" / "data" / "other_languages" / "zh",
}
ENGLISH_QUESTIONS = [
    "What are the main themes?", "Who are the most important people and what do they do?",
    "Which organisations appear and what is their role?", "Which places matter most?",
    "What events take place?", "How do the main people relate to each other?",
    "What changes over the course of the text?", "What problems or conflicts are described?",
    "What work or research is discussed?", "What is said about the future?",
]
QUESTIONS = {
    "carol": ENGLISH_QUESTIONS,
    "french": [
        "Quels sont les thèmes principaux ?",
        "Qui sont les personnages les plus importants et que font-ils ?",
        "Quelles organisations apparaissent et quel est leur rôle ?",
        "Quels lieux comptent le plus ?", "Quels événements ont lieu ?",
        "Comment les personnages principaux sont-ils liés entre eux ?",
        "Qu'est-ce qui change au fil du texte ?", "Quels problèmes ou conflits sont décrits ?",
        "Quel travail ou quelle recherche est évoqué ?", "Que dit-on de l'avenir ?"],
    "chinese": [
        "主要主题是什么？", "最重要的人物是谁，他们做了什么？",
        "出现了哪些组织，它们起什么作用？", "哪些地方最重要？", "发生了哪些事件？",
        "主要人物之间有什么关系？", "文本中发生了什么变化？",
        "描述了哪些问题或冲突？", "讨论了哪些工作或研究？", "关于未来说了什么？"],
}
LABELS = REPO / "scripts" / "labels" / "offline_junk.json"
ON_TOPIC_LABELS = REPO / "scripts" / "labels" / "offline_on_topic.json"


def questions_for(name: str) -> list[str]:
    if name == "podcast":
        with open(SHARED / "podcast" / "questions.csv", encoding="utf-8-sig") as f:
            return [row["question_text"] for row in csv.DictReader(f)][:10]
    return QUESTIONS[name]


def answer_points(answer: str) -> list[str]:
    """An answer's points (its "- " and "> " lines), as shown."""
    return [line[2:] for line in answer.splitlines() if line.startswith(("- ", "> "))]


def point_key(point: str) -> str:
    """The key a point's label is filed under: its first 80 characters, spaces collapsed."""
    return " ".join(point.split())[:80]


def build(code: Path, corpus: Path, out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(code)}
    subprocess.run([sys.executable, "-m", "graphrag_ray", "index", "--input", str(corpus),
                    "--output", str(out), "--set", "runtime.engine=local"], cwd=code, env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def top_titles(index: Path, n: int = 100) -> list[tuple[str, str]]:
    rows = IndexStore(str(index)).open().read_table(
        schema.ENTITIES, ["title", "type", "degree"]).to_pylist()
    rows.sort(key=lambda r: (-(r["degree"] or 0), r["title"]))
    return [(r["title"], r["type"]) for r in rows[:n]]


def repeated_points(answer: str) -> int:
    seen, repeats = [], 0
    for point in answer_points(answer):
        terms = set(content_terms(point.split("[Data:")[0]))
        repeats += says_the_same(terms, seen)
        seen.append(terms)
    return repeats


_ANSWER = """
import json, sys, warnings
warnings.simplefilter("ignore")
from graphrag_ray.api import GraphIndex
from graphrag_ray.errors import GraphRagError
questions = json.loads(sys.argv[2])
try:
    index = GraphIndex.open(sys.argv[1])
    print(json.dumps([index.search("global", q).answer for q in questions]))
except GraphRagError as exc:  # an index with no communities (no graph at all)
    print(json.dumps([f"error: {exc}"]))
"""


def global_answers(code: Path, index: Path, questions: list[str]) -> list[str]:
    """The answers of the code at `code` (its query methods, not this checkout's)."""
    done = subprocess.run([sys.executable, "-c", _ANSWER, str(index), json.dumps(questions)],
                          cwd=code, env={**os.environ, "PYTHONPATH": str(code)}, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(code: Path, corpus: Path, index: Path, junk: set[str], questions: list[str],
            on_topic: dict) -> dict:
    build(code, corpus, index)
    version = IndexStore(str(index)).open()
    manifest = version.read_manifest()
    entities = version.read_table(schema.ENTITIES, ["title", "type"]).to_pylist()
    top = top_titles(index)
    answers = global_answers(code, index, questions)
    repeated = manifest.repeated_passages or {}
    verdicts = [on_topic.get(question, {}).get(point) for question, answer in
                zip(questions, answers) for point in map(point_key, answer_points(answer))]
    judged = [v for v in verdicts if v is not None]
    return {
        "entities": len(entities),
        "other_share": round(sum(e["type"] == "OTHER" for e in entities)
                             / max(1, len(entities)), 3),
        "other_share_top100": round(sum(k == "OTHER" for _, k in top) / max(1, len(top)), 3),
        # Every title of the top 100 was judged; those not listed as junk are entities.
        "junk_share_top100": round(sum(t in junk for t, _ in top) / max(1, len(top)), 3),
        "non_latin_entities": sum(any(ord(c) > 0x24F and c.isalpha() for c in e["title"])
                                  for e in entities),
        # Copies of passages repeated across documents, against the corpus's tokens.
        "repeated_passage_token_share": round(repeated.get("tokens_not_extracted", 0) /
                                              max(1, manifest.extraction.chunk_tokens), 4),
        # Text units kept out of extraction (framed licences, one copy of each repeat).
        "boilerplate_token_share": round(manifest.extraction.boilerplate_tokens /
                                         max(1, manifest.extraction.chunk_tokens), 4),
        "repeated_points_in_10_global_answers": sum(map(repeated_points, answers)),
        "global_answers": "ok" if len(answers) == len(questions) else answers[0],
        "answer_points": len(verdicts),
        "on_topic_share": round(sum(judged) / len(judged), 3) if judged else None,
        "unlabelled_points": len(verdicts) - len(judged),
        "points": {q: answer_points(a) for q, a in zip(questions, answers)},
        "top10": [f"{t} ({k})" for t, k in top[:10]],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="a git revision to measure too")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--label", help="print this corpus's top-100 titles to label")
    parser.add_argument("--json")
    parser.add_argument("--unlabelled", help="write the answer points without an on-topic "
                                             "label here: key -> the whole point, to judge")
    args = parser.parse_args()
    labels = json.loads(LABELS.read_text(encoding="utf-8")) if LABELS.exists() else {}
    on_topic = json.loads(ON_TOPIC_LABELS.read_text(encoding="utf-8")) \
        if ON_TOPIC_LABELS.exists() else {}
    work = Path(tempfile.mkdtemp(prefix="offline-quality-"))
    if args.label:
        corpus = CORPORA[args.label]
        build(REPO, corpus, work / "index")
        for title, kind in top_titles(work / "index"):
            print(f"{title}\t{kind}")
        return 0
    codes = {"after": REPO}
    if args.before:
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach",
                        str(work / "before-code"), args.before], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        codes = {"before": work / "before-code", **codes}
    figures: dict = {}
    try:
        for name in args.corpora.split(","):
            corpus = CORPORA[name]
            if not corpus.exists():
                print(f"{name}: {corpus} not here, skipped")
                continue
            junk = set(labels.get(name, []))
            figures[name] = {when: measure(code, corpus, work / f"{name}-{when}", junk,
                                           questions_for(name), on_topic.get(name, {}))
                             for when, code in codes.items()}
            print(name, json.dumps({when: {k: v for k, v in f.items() if k != "points"}
                                    for when, f in figures[name].items()},
                                   ensure_ascii=False, indent=1))
    finally:
        if args.before:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                            str(work / "before-code")], check=False)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, ensure_ascii=False, indent=1))
    if args.unlabelled:
        todo: dict = {}
        for name, by_code in figures.items():
            for measured in by_code.values():
                for question, points in measured["points"].items():
                    known = on_topic.get(name, {}).get(question, {})
                    for point in points:
                        key = point_key(point)
                        if key not in known:
                            todo.setdefault(name, {}).setdefault(question, {})[key] = point
        Path(args.unlabelled).write_text(json.dumps(todo, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
