"""An ONNX graph of a pretrained network and its head, written op by op from the Keras weights
with `onnx.helper` (no converter: tf2onnx's TF 2.x support lags, and a hand-written graph is
the same few dozen ops per layer as the Keras code, readable side by side with it).

Inputs `input_ids`, `input_mask`, `segment_ids` (int32 [batch, length], both dimensions
dynamic, length at most max_position_embeddings); outputs as the SavedModel's
`serving_default`: `sequence_output` [batch, length, hidden] and, per head,
`discriminator_logits`/`discriminator_probabilities` [batch, length] or `mlm_logits`
[batch, length, vocab]. Opset 17 (LayerNormalization); the exact GELU is written as
x * (1 + erf(x / sqrt 2)) / 2, which ONNX Runtime's graph optimiser fuses with the bias before
it (`BiasGelu`).
"""

import os
import shutil
from typing import Optional

import numpy as np

from electra_tf import run_dir
from electra_tf.errors import UserError
from electra_tf.export.common import check_export_dir, require_optional
from electra_tf.export.pretrained import network_and_head
from electra_tf.io_utils import write_json
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.modeling.heads import DiscriminatorHead, MaskedLMHead

OPSET = 17
MASK_VALUE = -10000.0  # the original's additive attention mask (not -inf)


class OnnxGraphBuilder:
    """Accumulates nodes and initializers; each method returns the name of its output.

    Args:
        onnx: the imported `onnx` module.
    """

    def __init__(self, onnx):
        self.onnx = onnx
        self.helper = onnx.helper
        self.nodes: list = []
        self.initializers: list = []
        self._count = 0

    def _name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, value, hint: str = "const", dtype=np.float32) -> str:
        name = self._name(hint)
        array = np.asarray(value, dtype=dtype)
        self.initializers.append(self.onnx.numpy_helper.from_array(array, name))
        return name

    def weight(self, variable, hint: str) -> str:
        return self.const(np.asarray(variable.numpy(), np.float32), hint.replace("/", "."))

    def op(self, op_type: str, *inputs: str, output: Optional[str] = None, **attrs) -> str:
        out = output or self._name(op_type.lower())
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def dense(self, x: str, layer, activation: Optional[str] = None) -> str:
        y = self.op("MatMul", x, self.weight(layer.kernel, layer.kernel.path))
        if layer.use_bias:
            y = self.op("Add", y, self.weight(layer.bias, layer.bias.path))
        return self.activation(y, activation) if activation else y

    def layer_norm(self, x: str, norm, output: Optional[str] = None) -> str:
        gamma = self.weight(norm.gamma, norm.gamma.path)
        beta = self.weight(norm.beta, norm.beta.path)
        return self.op(
            "LayerNormalization", x, gamma, beta, output=output, axis=-1, epsilon=norm.epsilon
        )

    def activation(self, x: str, name: str) -> str:
        if name == "relu":
            return self.op("Relu", x)
        if name == "gelu":  # 0.5 * x * (1 + erf(x / sqrt(2))), as layers.gelu
            erf = self.op("Erf", self.op("Div", x, self.const(np.sqrt(2.0), "sqrt2")))
            half_x = self.op("Mul", x, self.const(0.5, "half"))
            return self.op("Mul", half_x, self.op("Add", erf, self.const(1.0, "one")))
        if name == "gelu_approximate":  # tf.nn.gelu(approximate=True)
            cube = self.op("Mul", self.op("Mul", x, x), x)
            inner = self.op("Add", x, self.op("Mul", cube, self.const(0.044715, "c")))
            scaled = self.op("Mul", inner, self.const(np.sqrt(2.0 / np.pi), "s"))
            one_plus = self.op("Add", self.op("Tanh", scaled), self.const(1.0, "one"))
            return self.op("Mul", self.op("Mul", x, self.const(0.5, "half")), one_plus)
        raise UserError(f"hidden_act {name!r} has no ONNX form here")

    def embeddings(self, encoder: TransformerEncoder) -> str:
        emb = encoder.embeddings
        x = self.op("Gather", self.weight(emb.word_embeddings, "word_embeddings"), "input_ids")
        types = self.weight(emb.token_type_embeddings, "token_type_embeddings")
        x = self.op("Add", x, self.op("Gather", types, "segment_ids"))
        length = self.op(
            "Slice",
            self.op("Shape", "input_ids"),
            self.const([1], "one_i", np.int64),
            self.const([2], "two_i", np.int64),
        )
        positions = self.op(
            "Slice",
            self.weight(emb.position_embeddings, "position_embeddings"),
            self.const([0], "zero_i", np.int64),
            length,
            self.const([0], "axis0", np.int64),
        )
        x = self.layer_norm(self.op("Add", x, positions), emb.layer_norm)
        if encoder.embeddings_project is not None:
            x = self.dense(x, encoder.embeddings_project)
        return x

    def attention_bias(self) -> str:
        """(1 - mask) * -10000 as [batch, 1, 1, length], added to every layer's scores."""
        mask = self.op("Cast", "input_mask", to=self.onnx.TensorProto.FLOAT)
        mask = self.op("Unsqueeze", mask, self.const([1, 2], "axes12", np.int64))
        inverted = self.op("Sub", self.const(1.0, "one"), mask)
        return self.op("Mul", inverted, self.const(MASK_VALUE, "mask_value"))

    def transformer_layer(self, x: str, layer, bias: str) -> str:
        c = layer.config
        heads, size = c.num_attention_heads, c.hidden_size // c.num_attention_heads
        split = self.const([0, 0, heads, size], "split_shape", np.int64)

        def heads_of(t: str, perm) -> str:
            return self.op("Transpose", self.op("Reshape", t, split), perm=perm)

        q = heads_of(self.dense(x, layer.query), [0, 2, 1, 3])
        k_t = heads_of(self.dense(x, layer.key), [0, 2, 3, 1])
        v = heads_of(self.dense(x, layer.value), [0, 2, 1, 3])
        scores = self.op("Mul", self.op("MatMul", q, k_t), self.const(size**-0.5, "scale"))
        probs = self.op("Softmax", self.op("Add", scores, bias), axis=-1)
        context = self.op("Transpose", self.op("MatMul", probs, v), perm=[0, 2, 1, 3])
        context = self.op("Reshape", context, self.const([0, 0, c.hidden_size], "merge", np.int64))
        attn = self.op("Add", self.dense(context, layer.attention_output), x)
        attn = self.layer_norm(attn, layer.attention_layer_norm)
        y = self.dense(attn, layer.intermediate, c.hidden_act)
        y = self.op("Add", self.dense(y, layer.output_dense), attn)
        return self.layer_norm(y, layer.output_layer_norm)


def build_onnx_model(encoder, head, opset: int = OPSET):
    """The `onnx.ModelProto` of `encoder` (a bidirectional `TransformerEncoder`) and `head`
    (`DiscriminatorHead`, `MaskedLMHead` or None)."""
    onnx = require_optional("onnx", "--format=onnx")
    if not isinstance(encoder, TransformerEncoder) or encoder.causal is not None:
        raise UserError(
            "--format=onnx: only a bidirectional TransformerEncoder exports (not Electric's "
            "two-tower generator)"
        )
    g = OnnxGraphBuilder(onnx)
    x = g.embeddings(encoder)
    bias = g.attention_bias()
    for layer in encoder.transformer_layers:
        x = g.transformer_layer(x, layer, bias)
    g.op("Identity", x, output="sequence_output")
    outputs = {"sequence_output": ["batch", "length", encoder.config.hidden_size]}
    if isinstance(head, DiscriminatorHead):
        h = g.dense(x, head.dense, head.hidden_act)
        logits = g.dense(h, head.dense_1)
        g.op(
            "Squeeze",
            logits,
            g.const([-1], "last", np.int64),
            output="discriminator_logits",
        )
        g.op("Sigmoid", "discriminator_logits", output="discriminator_probabilities")
        outputs["discriminator_logits"] = ["batch", "length"]
        outputs["discriminator_probabilities"] = ["batch", "length"]
    elif isinstance(head, MaskedLMHead):
        h = g.layer_norm(g.dense(x, head.dense, head.hidden_act), head.layer_norm)
        table = head.embeddings.word_embeddings if head.tied_output else head.output_weights
        table_t = g.const(np.asarray(table.numpy(), np.float32).T, "output_table_t")
        logits = g.op("MatMul", h, table_t)
        g.op("Add", logits, g.weight(head.output_bias, "output_bias"), output="mlm_logits")
        outputs["mlm_logits"] = ["batch", "length", head.embeddings.config.vocab_size]
    elif head is not None:
        raise UserError(f"--format=onnx: no ONNX form for the head {type(head).__name__}")
    helper = onnx.helper
    int32 = onnx.TensorProto.INT32
    inputs = [
        helper.make_tensor_value_info(n, int32, ["batch", "length"])
        for n in ("input_ids", "input_mask", "segment_ids")
    ]
    outs = [
        helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, shape)
        for n, shape in outputs.items()
    ]
    graph = helper.make_graph(g.nodes, "electra", inputs, outs, initializer=g.initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="electra_tf"
    )
    model.ir_version = 8  # what onnxruntime releases of the last two years read
    onnx.checker.check_model(model)
    return model


ONNX_FILE = "model.onnx"


def write_portable_extras(
    export_dir: str,
    loaded,
    encoder,
    head: str,
    vocab_file: Optional[str],
    do_lower_case: Optional[bool],
    info: dict,
) -> None:
    """Beside an ONNX or LiteRT file: `vocab.txt` (to tokenize with; ids are the inputs) and
    `export_config.json` (head, inputs, outputs, do_lower_case, the model config)."""
    lower = loaded.config.do_lower_case if do_lower_case is None else do_lower_case
    if vocab_file is not None:
        shutil.copyfile(vocab_file, os.path.join(export_dir, run_dir.VOCAB_FILE))
    write_json(
        os.path.join(export_dir, "export_config.json"),
        {
            "head": head,
            "inputs": ["input_ids", "input_mask", "segment_ids"],
            "do_lower_case": bool(lower),
            "max_position_embeddings": encoder.config.max_position_embeddings,
            **info,
            "model_config": encoder.config.to_dict(),
        },
    )


def export_onnx(
    loaded,
    head: str,
    export_dir: str,
    vocab_file: Optional[str],
    do_lower_case: Optional[bool] = None,
) -> str:
    """Writes `model.onnx` of `head` (discriminator | generator | encoder) and its extras
    (`write_portable_extras`); returns the model file's path."""
    check_export_dir(export_dir)
    encoder, head_layer = network_and_head(loaded, head)
    model = build_onnx_model(encoder, head_layer)
    os.makedirs(export_dir, exist_ok=True)
    path = os.path.join(export_dir, ONNX_FILE)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    outputs = [o.name for o in model.graph.output]
    info = {"format": "onnx", "file": ONNX_FILE, "opset": OPSET, "outputs": outputs}
    write_portable_extras(export_dir, loaded, encoder, head, vocab_file, do_lower_case, info)
    return path
