"""What the readers made of the corpus, told to the user once extraction has read it: the
files skipped and why, the decoding warnings, the files mostly kept out as boilerplate; and
the files' fingerprints kept with the version (what the next update compares the corpus
with), so no one reads the corpus twice."""

from __future__ import annotations

import pyarrow as pa

from graphrag_ray.errors import InputError
from graphrag_ray.index.chunks.read_and_chunk import input_reports
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.previous_version import INPUT_FILES, INPUT_FILES_SCHEMA


def report_inputs(ctx: BuildContext, input_url: str, extraction: pa.Table,
                  ignored: list[dict], fingerprints: pa.Table | None = None
                  ) -> tuple[list[dict], list[str]]:
    """What the listing left out (`ignored`: files of other types) and what the readers
    skipped or warned of; stops when nothing was read. Returns (skipped, warnings).
    `fingerprints`: an update's (`previous_version.input_fingerprints`), whose times complete
    the records of files carried over from a version that kept none."""
    reports = input_reports(ctx.work_url)
    files = reports.files
    if fingerprints is not None:
        times = {(path, digest): modified for path, digest, modified in zip(*(
            fingerprints.column(c).to_pylist() for c in ("path", "sha256", "modified")))
            if modified is not None}
        files = [record if record.get("modified") is not None else
                 {**record, "modified": times.get((record["path"], record["sha256"]))}
                 for record in files]
    ctx.staged.write_table(INPUT_FILES, pa.Table.from_pylist(files, schema=INPUT_FILES_SCHEMA))
    skipped, warnings = ignored + reports.skipped, reports.warnings
    if reports.kept_out_warning():
        warnings = warnings + [reports.kept_out_warning()]
    read = len(reports.files) - len(reports.skipped)
    ctx.figures.input_files = {"read": read, "skipped": len(skipped)}
    for warning in warnings:
        ctx.progress(f"warning: {warning}")
    for item in skipped:
        ctx.progress(f"skipped {item['path']}: {item['reason']}")
    if not extraction.num_rows:
        reasons = "; ".join(f"{s['path']}: {s['reason']}" for s in skipped[:10])
        raise InputError(f"no readable documents under {input_url} ({reasons})")
    ctx.progress(f"{extraction.num_rows} chunks "
                 f"({sum(extraction.column('n_tokens').to_pylist())} tokens)")
    return skipped, warnings
