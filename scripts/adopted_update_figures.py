"""The figures of issue 39's updates after an adoption, for any checkout:

    PYTHONPATH=<checkout>:<checkout>/tests python scripts/adopted_update_figures.py [--shared ../shared]

Adopts the shared Microsoft GraphRAG Carol project (`../shared/msgraphrag/carol`), then,
through the project's test server with the adopted settings (gpt-4.1 prices): an update with
nothing changed; one that adds a one-chunk story; one that deletes the story and adds another
document. Prints, per update, the calls by stage, the reports kept and written, the
communities kept per level and the cost, as JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from graphrag_ray.config import config_from_manifest
from graphrag_ray.index.adopt.stage import adopt_index
from graphrag_ray.index.update import update_index
from graphrag_ray.storage import IndexStore
from graphrag_testkit.llm_server import run_test_server

STORY = ("Tiny Tim met the Ghost of Christmas Present in London. Bob Cratchit carried Tiny "
         "Tim home through the snow of Camden Town. ") * 20
VISIT = "Scrooge walked with Fred to Camden Town, where they met Belle by the market. " * 15


def _figures(manifest, seconds: float) -> dict:
    if isinstance(manifest, dict):  # nothing changed
        return {"no_change": manifest.get("no_change", False)}
    usage = manifest.llm_usage
    return {"seconds": round(seconds, 1),
            "calls": {stage: figures.calls for stage, figures in usage.stages.items()},
            "reports_kept": manifest.update["reports_kept"],
            "reports": sum(manifest.communities_per_level.values()),
            "communities_kept_per_level": {level: counts["kept"] for level, counts in
                                           manifest.update["communities"]["per_level"].items()},
            "cost_usd": usage.total.cost_usd,
            "reports_cost_usd": usage.stages["reports"].cost_usd}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    carol = Path(parser.parse_args().shared) / "msgraphrag" / "carol"
    scratch = Path(tempfile.mkdtemp(prefix="adopted-update-"))
    index, corpus = str(scratch / "index"), scratch / "corpus"
    started = time.perf_counter()
    adopt_index(str(carol), index, progress=lambda _: None)
    results = {"adopt_s": round(time.perf_counter() - started, 1)}
    corpus.mkdir()
    (corpus / "book.txt").write_bytes((carol / "input" / "book.txt").read_bytes())
    with run_test_server() as server:
        config = config_from_manifest(IndexStore(index).read_manifest(), [
            f"llm.api_base={server.url}", f"embeddings.api_base={server.url}",
            "runtime.engine=local"])
        steps = {"unchanged": lambda: None,
                 "add a story": lambda: (corpus / "story.txt").write_text(STORY),
                 "delete it, add another": lambda: ((corpus / "story.txt").unlink(),
                                                    (corpus / "visit.txt").write_text(VISIT))}
        for name, change in steps.items():
            change()
            started = time.perf_counter()
            manifest = update_index(index, str(corpus), config, progress=lambda _: None)
            results[name] = _figures(manifest, time.perf_counter() - started)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
