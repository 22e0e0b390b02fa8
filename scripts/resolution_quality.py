"""Entity resolution measured: a synthetic corpus with planted aliases and homonyms (known
truth) indexed offline twice, resolution off and on; prints the merges' precision and
recall, what resolution did to the communities (and so the reports), and what it cost in time.

    python scripts/resolution_quality.py --tokens 300000
    python scripts/resolution_quality.py --tokens 10000000 --engine ray --json out.json
    python scripts/resolution_quality.py --input ../shared/corpora/podcast/input --top 40
    python scripts/resolution_quality.py --input ../shared/corpora/podcast/input --labels podcast
    python scripts/resolution_quality.py --input novels/ --labels novels \
        --set resolution.split_homonyms=true

With `--input` (a corpus without truth) it indexes with resolution on and prints the top
merges for a reader to judge, and the per-document resolutions that moved the most mentions;
with `--labels NAME` also the merges' precision and recall and the share of wrong types
against the hand labels `tests/data/resolution_labels/NAME.json`
(`testing/resolution_labels.py`), the homonym splits' precision and recall where the labels
judge them, and with resolution off the types alone. `--set` passes settings to the builds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test kit

from graphrag_ray import schema  # noqa: E402
from graphrag_ray.storage import IndexStore  # noqa: E402
from graphrag_testkit import resolution_labels  # noqa: E402
from graphrag_testkit.synthetic_corpus import generate_corpus, merge_quality  # noqa: E402


def build(corpus: Path, out: Path, engine: str, resolution: bool,
          settings: list[str] = ()) -> tuple[dict, float]:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "graphrag_ray", "index", "--input", str(corpus),
                    "--output", str(out), "--set", f"runtime.engine={engine}",
                    "--set", f"resolution.enabled={str(resolution).lower()}",
                    *[arg for setting in settings for arg in ("--set", setting)]],
                   check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    return IndexStore(str(out)).read_manifest(), wall


def tables(out: Path, name: str, columns: list[str]):
    index = IndexStore(str(out)).open()
    return index.read_table(name, columns)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=300_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine", default="local", choices=["local", "ray", "auto"])
    parser.add_argument("--input", help="a corpus without truth: list its top merges")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--labels", help="with --input: hand labels to measure against")
    parser.add_argument("--work", help="folder for the corpus and indexes (default: temp)")
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("--set", action="append", default=[], help="a setting for the builds")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="resolution-quality-"))
    figures: dict = {}
    if args.input:
        manifest, wall = build(Path(args.input), work / "on", args.engine, True, args.set)
        aliases = tables(work / "on", schema.ENTITY_ALIASES, schema.ENTITY_ALIAS_COLUMNS)
        rows = sorted(aliases.to_pylist(), key=lambda r: -r["score"])
        documents = tables(work / "on", schema.DOCUMENTS, ["id", "title"])
        title_of = dict(zip(documents.column("id").to_pylist(),
                            documents.column("title").to_pylist()))
        for row in rows:  # (labels name documents by their titles)
            row["document_ids"] = [title_of.get(d, d) for d in row["document_ids"]]
        # The per-document resolutions that moved the most mentions (their evidence says
        # "N of M mentions, ..."): where a wrong rule costs most, whatever their score.
        moved = [(int(r["evidence"].split(" of ")[0]), r["alias"], r["entity_title"],
                  r["method"]) for r in rows if r["method"].startswith(("in_document", "in_work"))]
        figures = {"wall_s": round(wall, 1), "resolution": manifest.resolution,
                   "top_merges": [(r["alias"], r["entity_title"], r["score"], r["method"])
                                  for r in rows[:args.top]],
                   "largest_in_document": sorted(moved, reverse=True)[:args.top]}
        if args.labels:
            labels = resolution_labels.load_labels(args.labels)
            figures["labelled"] = resolution_labels.merge_quality(rows, labels)
            if "homonyms" in labels:
                figures["homonym_splits"] = resolution_labels.split_quality(rows, labels)
            build(Path(args.input), work / "off", args.engine, False, args.set)
            for name, aliases in (("on", rows), ("off", [])):
                types = tables(work / name, schema.ENTITIES, ["title", "type"]).to_pylist()
                figures[f"types_resolution_{name}"] = resolution_labels.type_quality(
                    {e["title"]: e["type"] for e in types}, aliases, labels)
    else:
        corpus = generate_corpus(work / "corpus", args.tokens, args.seed, aliases=True)
        runs = {}
        for enabled in (False, True):
            manifest, wall = build(work / "corpus", work / ("on" if enabled else "off"),
                                   args.engine, enabled)
            runs[enabled] = (manifest, wall)
        titles = tables(work / "off", schema.ENTITIES, ["title"]).column("title").to_pylist()
        aliases = tables(work / "on", schema.ENTITY_ALIASES, ["alias", "entity_title"])
        quality = merge_quality(list(zip(aliases.column("alias").to_pylist(),
                                         aliases.column("entity_title").to_pylist())),
                                titles, corpus.truth)
        members = {}
        for enabled in (False, True):
            out = work / ("on" if enabled else "off")
            entities = tables(out, schema.ENTITIES, ["id", "title"])
            title_of = dict(zip(entities.column("id").to_pylist(),
                                entities.column("title").to_pylist()))
            communities = tables(out, schema.COMMUNITIES, ["entity_ids"])
            members[enabled] = {frozenset(title_of[i] for i in ids.as_py())
                                for ids in communities.column("entity_ids")}
        off, on = runs[False][0], runs[True][0]
        figures = {
            "tokens": corpus.tokens, "engine": args.engine, "quality": quality,
            "entities": {"off": off.tables[schema.ENTITIES],
                         "on": on.tables[schema.ENTITIES]},
            "communities": {"off": off.tables[schema.COMMUNITIES],
                            "on": on.tables[schema.COMMUNITIES]},
            "communities_per_level": {"off": off.communities_per_level,
                                      "on": on.communities_per_level},
            # A community whose members changed gets a new report.
            "communities_same_members": len(members[False] & members[True]),
            "communities_new_members": len(members[True] - members[False]),
            "wall_s": {"off": round(runs[False][1], 1), "on": round(runs[True][1], 1)},
            "build_s": {"off": off.timings_s["total"], "on": on.timings_s["total"]},
            "resolve_s": on.timings_s.get("resolve"),
            "resolution": on.resolution}
    print(json.dumps(figures, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
