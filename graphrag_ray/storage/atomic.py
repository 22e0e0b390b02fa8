"""Whole-object writes that a concurrent reader never sees half done."""

from __future__ import annotations

import uuid

import fsspec


def is_local(fs: fsspec.AbstractFileSystem) -> bool:
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return "file" in protocols or "local" in protocols


def write_atomically(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> None:
    """Local disks: a temporary file renamed over the target. Object stores: one PUT, which
    replaces the object whole (there is no rename to lean on there)."""
    if is_local(fs):
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        temporary = f"{path}.{uuid.uuid4().hex}.tmp"
        with fs.open(temporary, "wb") as handle:
            handle.write(data)
        fs.mv(temporary, path)
    else:
        fs.pipe_file(path, data)
