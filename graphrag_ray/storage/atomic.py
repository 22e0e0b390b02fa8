"""Whole-object writes that a concurrent reader never sees half done."""

from __future__ import annotations

import os
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


def copy_whole(fs: fsspec.AbstractFileSystem, source: str, target: str) -> None:
    """An object copied as it is, for a version that keeps a previous version's file
    unchanged: on a local disk a hard link (no bytes move, and it outlives the pruned
    version: a version's files are only ever replaced whole, never changed in place), a
    copy where links are refused (another device); on object storage the store's own copy
    (the bytes do not come through this process)."""
    if is_local(fs):
        source_path, target_path = fs._strip_protocol(source), fs._strip_protocol(target)
        for attempt in range(2):  # the folder is made only when missing (an update links
            try:                  # ~3,000 files into a few folders)
                os.link(source_path, target_path)
                return
            except FileNotFoundError:
                fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
            except OSError:
                break
    fs.copy(source, target)
