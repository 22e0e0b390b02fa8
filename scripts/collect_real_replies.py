"""Gather the real model replies our parser fixtures name, from snapshots of their sources.

`tests/fixtures/real_replies/sources.json` lists each fixture's public repository, commit,
cache file and cache key, with what a reader finds in the reply. The replies stay out of
this repository; this script reads them from local git copies of those repositories and
writes one JSON line per fixture ({"id", "reply"}), the file
`tests/index/extract/test_real_replies.py` reads:

    python scripts/collect_real_replies.py --snapshots /work/.mirror \
        --out ../shared/real_replies/replies.jsonl

A repository is looked for as SNAPSHOTS/owner+name/repo (a bare snapshot) or
SNAPSHOTS/owner/name (a clone). Fixtures whose source is missing are listed, not guessed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SOURCES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "real_replies" / "sources.json"


def git_dir(snapshots: Path, repository: str) -> Path | None:
    owner, name = repository.split("/", 1)
    for candidate in (snapshots / f"{owner}+{name}" / "repo", snapshots / owner / name):
        if candidate.is_dir():
            return candidate
    return None


def cached_reply(cache: dict, key: str) -> str:
    """The reply under `key` in a cache file; LightRAG nests entries one level ("mode/hash")."""
    entry = cache.get(key)
    if entry is None and "/" in key:
        outer, inner = key.split("/", 1)
        entry = cache.get(outer, {}).get(inner)
    if not isinstance(entry, dict) or not isinstance(entry.get("return"), str):
        raise KeyError(key)
    return entry["return"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshots", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    fixtures = json.loads(SOURCES.read_text())["fixtures"]
    files: dict[tuple[str, str, str], dict] = {}
    written, missing = [], []
    for fixture in fixtures:
        source = fixture["source"]
        where = (source["repository"], source["commit"], source["path"])
        if where not in files:
            directory = git_dir(args.snapshots, source["repository"])
            shown = subprocess.run(
                ["git", "-C", str(directory), "show", f"{source['commit']}:{source['path']}"],
                capture_output=True, text=True) if directory else None
            files[where] = json.loads(shown.stdout) if shown and shown.returncode == 0 else {}
        try:
            written.append({"id": fixture["id"],
                            "reply": cached_reply(files[where], source["cache_key"])})
        except KeyError:
            missing.append(f"{fixture['id']}: {source['repository']}@{source['commit'][:12]}:"
                           f"{source['path']} [{source['cache_key']}]")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as out:
        for row in written:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(written)} of {len(fixtures)} replies written to {args.out}")
    for line in missing:
        print(f"missing: {line}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
