"""Content-addressed response cache on any fsspec URL (local folder, s3://, gs://...).

The key covers the model, the messages, the sampling parameters and the prompt template's
version, never the API key or the endpoint, so the same request to a mirror hits the cache.
One object per key, written whole (local: temp file + rename; object stores: one PUT), so any
number of concurrent writers is safe: they can only write the same content for the same key.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import fsspec


def cache_key(model: str, messages: list[dict], params: dict[str, Any], template_version: str) -> str:
    payload = json.dumps({"model": model, "messages": messages, "params": params,
                          "template": template_version}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, url: str, **storage_options):
        self.url = url
        self.fs, root = fsspec.core.url_to_fs(url, **storage_options)
        self.root = root.rstrip("/")
        self._local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple)
                                 else (self.fs.protocol,))

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
        if self._local:
            self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
            temporary = f"{path}.{uuid.uuid4().hex}.tmp"
            with self.fs.open(temporary, "wb") as handle:
                handle.write(data)
            self.fs.mv(temporary, path)
        else:
            self.fs.pipe_file(path, data)
