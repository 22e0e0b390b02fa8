"""The offline default, measured on corpora it was not tuned on, before and after a change:
per corpus, entities, the share typed OTHER (all, and the top 100 by degree), the share of
junk among the top 100 by degree (hand labels in scripts/labels/offline_junk.json; titles
without a label are counted and listed), entities in non-Latin scripts, the share of the
corpus's tokens kept out of extraction as repeated passages, and, for 10 global questions,
how many answer points repeat another.

    python scripts/offline_quality.py --before 8baf7a2 --json out.json
    python scripts/offline_quality.py --label podcast     # print unlabelled top-100 titles

`--before REV` builds the same corpora with the code at REV (a git worktree), so "before"
and "after" are measured by the same script.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from graphrag_ray import schema  # noqa: E402
from graphrag_ray.errors import GraphRagError  # noqa: E402
from graphrag_ray.storage import IndexStore  # noqa: E402
from graphrag_ray.terms import content_terms, says_the_same  # noqa: E402

SHARED = REPO.parent / "shared" / "corpora"
CORPORA = {
    "podcast": SHARED / "podcast" / "input",
    "carol": SHARED / "christmas_carol",
    "french": REPO / "tests" / "data" / "other_languages" / "fr.txt",
    "chinese": REPO / "tests" / "data" / "other_languages" / "zh.txt",
}
QUESTIONS = [
    "What are the main themes?", "Who are the most important people and what do they do?",
    "Which organisations appear and what is their role?", "Which places matter most?",
    "What events take place?", "How do the main people relate to each other?",
    "What changes over the course of the text?", "What problems or conflicts are described?",
    "What work or research is discussed?", "What is said about the future?",
]
LABELS = REPO / "scripts" / "labels" / "offline_junk.json"


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
    for line in answer.splitlines():
        if line.startswith(("- ", "> ")):
            terms = set(content_terms(line.split("[Data:")[0]))
            repeats += says_the_same(terms, seen)
            seen.append(terms)
    return repeats


def measure(code: Path, corpus: Path, index: Path, junk: set[str]) -> dict:
    build(code, corpus, index)
    version = IndexStore(str(index)).open()
    manifest = version.read_manifest()
    entities = version.read_table(schema.ENTITIES, ["title", "type"]).to_pylist()
    top = top_titles(index)
    from graphrag_ray.api import GraphIndex

    searched = GraphIndex.open(str(index))
    try:
        answers = [searched.search("global", q).answer for q in QUESTIONS]
    except GraphRagError as exc:  # an index with no communities (no graph at all)
        answers = [f"error: {exc}"]
    repeated = manifest.get("repeated_passages", {})
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
                                              max(1, manifest["extraction"]["chunk_tokens"]), 4),
        # Text units kept out of extraction (framed licences, one copy of each repeat).
        "boilerplate_token_share": round(manifest["extraction"].get("boilerplate_tokens", 0) /
                                         max(1, manifest["extraction"]["chunk_tokens"]), 4),
        "repeated_points_in_10_global_answers": sum(map(repeated_points, answers)),
        "global_answers": "ok" if len(answers) == len(QUESTIONS) else answers[0],
        "top10": [f"{t} ({k})" for t, k in top[:10]],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="a git revision to measure too")
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--label", help="print this corpus's top-100 titles to label")
    parser.add_argument("--json")
    args = parser.parse_args()
    labels = json.loads(LABELS.read_text(encoding="utf-8")) if LABELS.exists() else {}
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
            folder = corpus if corpus.is_dir() else Path(tempfile.mkdtemp()) / name
            if not corpus.is_dir():
                folder.mkdir(parents=True)
                (folder / corpus.name).write_text(corpus.read_text(encoding="utf-8"),
                                                  encoding="utf-8")
            junk = set(labels.get(name, []))
            figures[name] = {when: measure(code, folder, work / f"{name}-{when}", junk)
                             for when, code in codes.items()}
            print(name, json.dumps(figures[name], ensure_ascii=False, indent=1))
    finally:
        if args.before:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                            str(work / "before-code")], check=False)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
