"""Content-addressed response cache on any fsspec URL (local folder, s3://, gs://...).

The key covers the model, the messages, the sampling parameters and the prompt template's
version, never the API key or the endpoint, so the same request to a mirror hits the cache.
One object per key, written whole (local: temp file + rename; object stores: one PUT), so any
number of concurrent writers is safe: they can only write the same content for the same key.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import fsspec

from graphrag_ray.storage.atomic import write_atomically


def cache_key(model: str, messages: list[dict], params: dict[str, Any], template_version: str) -> str:
    payload = json.dumps({"model": model, "messages": messages, "params": params,
                          "template": template_version}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, url: str, **storage_options):
        self.url = url
        self.fs, root = fsspec.core.url_to_fs(url, **storage_options)
        self.root = root.rstrip("/")

    def __getstate__(self) -> dict:
        # Filesystems re-open in each Ray worker; only the URL travels.
        return {"url": self.url}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["url"])

    def _path(self, key: str) -> str:
        return f"{self.root}/{key[:2]}/{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            with self.fs.open(self._path(key), "rb") as handle:
                return json.loads(handle.read())
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None  # A torn or foreign file: treat as a miss, it gets rewritten.

    def put(self, key: str, value: dict) -> None:
        data = json.dumps(value, ensure_ascii=False).encode("utf-8")
        path = self._path(key)
        write_atomically(self.fs, path, data)
