"""Claim instances -> the covariates table, built and written by a worker. Claims carry
source text, so the driver gets only what it schedules with (ids, subjects, text units, each
claim's context row tokens); the report workers read the claims from a block."""

from __future__ import annotations

import fsspec
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.index.extract.stage import CLAIM_INSTANCE_SCHEMA
from graphrag_ray.index.extract.instance_shards import read_claims
from graphrag_ray.index.elements import Renames, element_id
from graphrag_ray.index.context_rows import CLAIM_FIELDS, row_tokens_without_id
from graphrag_ray.storage import IndexVersion


def covariates_table(claims: pa.Table) -> pa.Table:
    """Claim instances in chunk order -> Microsoft GraphRAG's covariates columns."""
    n = claims.num_rows
    columns = {name: claims.column(name) for name in claims.column_names}
    ids = [element_id("claim", *map(str, row.values())) + f"-{i}"
           for i, row in enumerate(claims.to_pylist())]
    table = pa.table({
        "id": pa.array(ids, pa.string()),
        "human_readable_id": pa.array(range(n), pa.int64()),
        "covariate_type": pa.array(["claim"] * n, pa.string()),
        **{k: columns[k] for k in ("type", "description", "subject_id", "object_id", "status",
                                   "start_date", "end_date", "source_text", "text_unit_id")},
    })
    return table.select(schema.COVARIATE_COLUMNS)


def build_covariates(job: tuple[str, str | None, int, str, Renames]
                     ) -> tuple[pa.Table, pa.Table]:
    """(work URL, the index version's URL to write the table to or None when claims are not
    kept, rows per part, tokenizer, the resolution's renames) -> the structure for the driver
    (id, subject_id, text_unit_id, row_tokens without the id) and the claims' context fields
    as a block. A claim about an alias is about its canonical entity (in the text units
    where it was resolved, for a short name resolved per document)."""
    work_url, version_url, rows_per_part, encoding, renames = job
    claims = read_claims(work_url, CLAIM_INSTANCE_SCHEMA).drop_columns(["seq"])
    if renames:
        units = claims.column("text_unit_id").to_pylist()
        for name in ("subject_id", "object_id"):
            claims = claims.set_column(
                claims.column_names.index(name), name,
                pa.array(renames.rename(claims.column(name).to_pylist(), units), pa.string()))
    covariates = covariates_table(claims)
    if version_url is not None:
        fs, root = fsspec.core.url_to_fs(version_url)
        IndexVersion(fs, root, version_url, "").write_table(schema.COVARIATES, covariates,
                                                            rows_per_part)
    context_fields = covariates.select(list(CLAIM_FIELDS))
    tokens = [row_tokens_without_id(claim, CLAIM_FIELDS, encoding) for claim in context_fields.to_pylist()]
    return (covariates.select(["id", "subject_id", "text_unit_id"]).append_column(
        "row_tokens", pa.array(tokens, pa.int64())), context_fields)
