"""The local sentence model's encoder as an ONNX graph, written from its own weights: a BERT
encoder (embeddings, then `layers` blocks of self-attention and a GELU feed-forward, each
followed by a residual layer norm) whose last hidden states the caller mean-pools.

ONNX Runtime runs it faster than the same products in numpy (its kernels fuse the bias
adds, the layer norms and the softmax), and faster again with its weight matrices quantized
to int8 per output channel, which moves the vectors little. The graph is made once per machine from
the checked weights and kept
in a cache folder (`sentence_model.model_cache`), so the exporter PyTorch would need is
never involved.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

LAYER_NORM_EPS = 1e-12


class _Graph:
    """Nodes and initializers as they are added (`onnx.helper`'s lists)."""

    def __init__(self, weights: dict[str, np.ndarray]):
        self.weights = weights
        self.nodes: list = []
        self.initializers: list = []

    def constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, kind: str, inputs: list[str], **attributes) -> str:
        from onnx import helper

        output = f"{kind.lower()}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(kind, inputs, [output], name=output, **attributes))
        return output

    def linear(self, x: str, name: str) -> str:
        weight = np.ascontiguousarray(self.weights[f"{name}.weight"].T)  # torch keeps (out, in)
        product = self.op("MatMul", [x, self.constant(f"{name}.w", weight)])
        return self.op("Add", [product, self.constant(f"{name}.b", self.weights[f"{name}.bias"])])

    def norm(self, x: str, name: str) -> str:
        return self.op("LayerNormalization",
                       [x, self.constant(f"{name}.g", self.weights[f"{name}.weight"]),
                        self.constant(f"{name}.b", self.weights[f"{name}.bias"])],
                       axis=-1, epsilon=LAYER_NORM_EPS)


def _embeddings(g: _Graph) -> str:
    """Word, position and (the one) token type embeddings, summed and normalized."""
    words = g.op("Gather", [g.constant("words", g.weights["embeddings.word_embeddings.weight"]),
                            "input_ids"])
    length = g.op("Gather", [g.op("Shape", ["input_ids"]), g.constant("axis1", np.int64(1))],
                  axis=0)
    places = g.op("Range", [g.constant("zero", np.int64(0)), length,
                            g.constant("one", np.int64(1))])
    positions = g.op("Gather", [g.constant(
        "positions", g.weights["embeddings.position_embeddings.weight"]), places])
    token_type = g.constant("token_type",
                            g.weights["embeddings.token_type_embeddings.weight"][0])
    return g.norm(g.op("Add", [g.op("Add", [words, positions]), token_type]),
                  "embeddings.LayerNorm")


def _attention_bias(g: _Graph) -> str:
    """-1e9 where the mask is 0 (padding), shaped to add to every head's scores."""
    mask = g.op("Cast", ["attention_mask"], to=1)  # FLOAT
    blocked = g.op("Sub", [g.constant("unit", np.float32(1.0)), mask])
    bias = g.op("Mul", [blocked, g.constant("blocked", np.float32(-1e9))])
    return g.op("Unsqueeze", [bias, g.constant("head_axes", np.array([1, 2], np.int64))])


def _block(g: _Graph, x: str, bias: str, i: int, heads: int, width: int) -> str:
    prefix = f"encoder.layer.{i}."
    size = width // heads
    split = g.constant(f"split{i}", np.array([0, 0, heads, size], np.int64))

    def by_head(name: str) -> str:
        projected = g.linear(x, prefix + f"attention.self.{name}")
        return g.op("Transpose", [g.op("Reshape", [projected, split])], perm=[0, 2, 1, 3])

    q, k, v = by_head("query"), by_head("key"), by_head("value")
    scores = g.op("Div", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]),
                          g.constant(f"scale{i}", np.float32(np.sqrt(size)))])
    weights = g.op("Softmax", [g.op("Add", [scores, bias])], axis=-1)
    joined = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [weights, v])],
                                   perm=[0, 2, 1, 3]),
                              g.constant(f"join{i}", np.array([0, 0, width], np.int64))])
    x = g.norm(g.op("Add", [x, g.linear(joined, prefix + "attention.output.dense")]),
               prefix + "attention.output.LayerNorm")
    up = g.linear(x, prefix + "intermediate.dense")
    gelu = g.op("Mul", [g.op("Mul", [up, g.constant(f"half{i}", np.float32(0.5))]),
                        g.op("Add", [g.constant(f"one{i}", np.float32(1.0)), g.op("Erf", [
                            g.op("Div", [up, g.constant(f"root2_{i}", np.float32(np.sqrt(2)))])
                        ])])])
    return g.norm(g.op("Add", [x, g.linear(gelu, prefix + "output.dense")]),
                  prefix + "output.LayerNorm")


def write_encoder(weights: dict[str, np.ndarray], path: Path, layers: int, heads: int) -> None:
    """The encoder of `weights` (a BertModel's tensors) as an ONNX model at `path`: inputs
    `input_ids` and `attention_mask` (batch, tokens), output the last hidden states."""
    import onnx
    from onnx import TensorProto, helper

    g = _Graph(weights)
    width = weights["embeddings.word_embeddings.weight"].shape[1]
    x, bias = _embeddings(g), _attention_bias(g)
    for i in range(layers):
        x = _block(g, x, bias, i, heads, width)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    graph = helper.make_graph(
        g.nodes, "sentence_encoder",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
         for name in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "tokens", width])], g.initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def quantize_weights(source: Path, target: Path) -> None:
    """`source` with its weight matrices in int8 (per output channel; ONNX Runtime's dynamic
    quantization). The attention's own products (queries by keys, weights by values) stay in
    float: quantizing activations against activations moved the vectors ten times as far."""
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Its advice to pre-process the graph (shape inference for image models) is logged on
    # the root logger at every call; the graph here has nothing it would change.
    logging.getLogger().addFilter(_no_preprocessing_advice)
    model = onnx.load(str(source))
    constants = {tensor.name for tensor in model.graph.initializer}
    between_activations = [node.name for node in model.graph.node if node.op_type == "MatMul"
                           and not any(name in constants for name in node.input)]
    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul"], nodes_to_exclude=between_activations)


def _no_preprocessing_advice(record) -> bool:
    return "pre-processing before quantization" not in record.getMessage()
