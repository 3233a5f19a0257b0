"""Which part of the ELECTRA pretraining step an op belongs to, for TensorFlow's ops (ours) and
torch's (the Hugging Face peer): the one table of rules bench/profile_step.py groups a step's
time by. Needs neither framework (tests/test_profile_categories.py checks it on real op names).

An op is described by four strings, each rule's patterns are regular expressions searched in
them (`re.search`; a rule without a pattern for a field accepts any value), and the first rule
that matches gives the category:

  TensorFlow: name   the op's name in the graph (`electra_1/layer_4_1/query_1/Tensordot/MatMul`)
              type   its type as the profiler shows it (`_MklMatMul`, `Erf`, `UnsortedSegmentSum`)
              where  `file:function` of the innermost electra_tf frame that created it, from the
                     step's graph (`masking.py:categorical_sample`); a gradient op (`gradient_tape/X/...`)
                     takes the `where` of its forward op X (TF names gradient ops after it); empty
                     when unknown (ops grappler made, TF's own gradient helpers)
  torch:      name   the aten op (`aten::mm`)
              type   the autograd node it ran under in the backward pass (`AddmmBackward0`), else ""
              where  the peer's record_function region it ran in (bench/peer_hf_step.py), for a
                     backward op the region of the forward op that made its node
              shapes its input shapes (record_shapes), shown with the top ops
"""

import re
from typing import NamedTuple

ENCODER_MATMULS = "encoder matmuls"
ATTENTION = "attention"
ELEMENTWISE = "layer norm / GELU / dropout"
EMBEDDING = "embedding gather + gradient"
GENERATOR_OUTPUT = "generator output layer"
SAMPLING = "sampling"
OPTIMIZER = "optimizer"
OTHER = "other"
CATEGORIES = (
    ENCODER_MATMULS,
    ATTENTION,
    ELEMENTWISE,
    EMBEDDING,
    GENERATOR_OUTPUT,
    SAMPLING,
    OPTIMIZER,
    OTHER,
)


class Rule(NamedTuple):
    category: str
    framework: str  # "tf" | "torch"
    why: str
    name: str = ""
    type: str = ""
    where: str = ""


GRAD = r"^(gradient_tape/)?"
MODEL = GRAD + r"(electra|generator)(_\d+)?/"  # the two encoders' scopes (not the heads')
LAYER = MODEL + r"layer_\d+(_\d+)?/"

RULES = (
    # ---- TensorFlow (ours), graph path: one profiler event per TF op ----
    Rule(OPTIMIZER, "tf", "gradient clipping: the global norm and the scaling",
         name=GRAD + r"(global_norm|clip_by_global_norm)/"),
    Rule(OPTIMIZER, "tf", "AdamW's update, the learning-rate schedule",
         where=r"^optimization\.py:(?!dense_gradients)"),
    Rule(OPTIMIZER, "tf", "unscaling and the finite check of the gradients",
         where=r"^train/step\.py:(all_reduce|replica_step)$"),
    Rule(OPTIMIZER, "tf", "variable updates (the optimizer's slots, the step counter)",
         type=r"^Assign(Add|Sub)?(Variable)?Op$"),
    Rule(EMBEDDING, "tf", "a gather's sparse gradient made dense: the embedding tables'",
         type=r"^UnsortedSegmentSum$"),
    Rule(EMBEDDING, "tf", "grappler's in-place sum of the tied word table's gradients",
         name=r"^AddN(_\d+)?(/|$)"),
    Rule(EMBEDDING, "tf", "dense_gradients: IndexedSlices to dense", where=r"dense_gradients$"),
    Rule(GENERATOR_OUTPUT, "tf", "the MLM head: transform, LayerNorm, vocab projection",
         name=GRAD + r"generator_predictions(_\d+)?/"),
    Rule(GENERATOR_OUTPUT, "tf", "the MLM loss: log-softmax over the vocab, target logits",
         name=GRAD + r"ReduceLogSumExp(/|$)"),
    Rule(GENERATOR_OUTPUT, "tf", "the MLM loss, the generator's hidden states at the masks",
         where=r"^(objectives/base\.py:generator_loss|masking\.py:gather_positions)$"),
    Rule(SAMPLING, "tf", "masking, the generator's sample, the replaced tokens and labels",
         where=r"^(masking\.py|modeling/pretrainer\.py):"),
    Rule(ELEMENTWISE, "tf", "LayerNorm, forward and backward", name=r"/LayerNorm(_\d+)?/"),
    Rule(ELEMENTWISE, "tf", "dropout and GELU", where=r"^modeling/layers\.py:(dropout|gelu)$"),
    Rule(ELEMENTWISE, "tf", "GELU's gradient (TF's erf gradient: Square, Exp)",
         name=LAYER + r"(Exp|Square|Erf)", type=r"^(_UnaryOpsComposition|Square|Exp|Erf|Mul)$"),
    Rule(EMBEDDING, "tf", "the lookups, the sum of the word / position / type embeddings",
         name=MODEL + r"embeddings(_\d+)?/"),
    Rule(ATTENTION, "tf", "scores, context (batch matmuls), softmax, head split",
         name=LAYER, type=r"BatchMatMul|Softmax|Transpose"),
    Rule(ATTENTION, "tf", "the scores' scaling and mask, the softmax gradient",
         name=LAYER + r"(add|sub|mul|mul_1|Sum|Cast(_\d+)?)(/|$)",
         where=r"^(modeling/encoder\.py:call)?$"),
    Rule(ENCODER_MATMULS, "tf", "Q/K/V/output/FFN dense (and the embedding projection and the "
         "discriminator head's dense layers): matmul and bias, forward and backward",
         type=r"MatMul$|^_MklMatMul$|^BiasAdd(Grad)?$"),
    Rule(ELEMENTWISE, "tf", "the rest of the networks: residual adds, casts, the heads' GELU",
         name=GRAD + r"(electra|generator|discriminator_predictions)(_\d+)?/"),
    # ---- torch (the peer): regions first, then op kinds inside the two encoders ----
    Rule(OTHER, "torch", "the autograd engine's own bookkeeping", name=r"^autograd::"),
    Rule(OPTIMIZER, "torch", "zero_grad, clip_grad_norm_, AdamW.step", where=r"^electra/optimizer$"),
    Rule(SAMPLING, "torch", "masking, the Gumbel-max sample, the replaced tokens and labels",
         where=r"^electra/(masking|sampling)$"),
    Rule(GENERATOR_OUTPUT, "torch", "gather at the masks, MLM head, vocab projection, loss",
         where=r"^electra/generator_head$"),
    Rule(EMBEDDING, "torch", "the lookups and their dense gradient (and its accumulation)",
         name=r"embedding|^aten::index_select$", type=r"^$|^Embedding"),
    Rule(EMBEDDING, "torch", "the embedding tables' gradient", type=r"^EmbeddingBackward"),
    Rule(ATTENTION, "torch", "scores, softmax, context (eager or SDPA), forward and backward",
         name=r"bmm|softmax|scaled_dot_product|attention"),
    Rule(ATTENTION, "torch", "the backward of the above", type=r"^(Bmm|.*Softmax|.*Attention)"),
    Rule(ENCODER_MATMULS, "torch", "nn.Linear: matmul and bias, forward and backward",
         name=r"^aten::(addmm|mm|linear|matmul)$"),
    Rule(ENCODER_MATMULS, "torch", "nn.Linear's backward (its bias gradient: a sum)",
         type=r"^(Addmm|Mm|Linear)Backward"),
    Rule(ELEMENTWISE, "torch", "LayerNorm, GELU, dropout, residual adds, the mask's arithmetic",
         where=r"^electra/(generator|discriminator)$"),
)  # fmt: skip
_COMPILED = [
    (r, {f: re.compile(getattr(r, f)) for f in ("name", "type", "where") if getattr(r, f)})
    for r in RULES
]


def classify(framework: str, name: str, type: str = "", where: str = "") -> str:
    """The category of one op (see the module docstring); OTHER when no rule matches."""
    fields = {"name": name, "type": type, "where": where or ""}
    for rule, patterns in _COMPILED:
        if rule.framework == framework and all(p.search(fields[f]) for f, p in patterns.items()):
            return rule.category
    return OTHER


def forward_where(name: str, sources: dict) -> str:
    """`where` of a TF op from {op name: file:function} of the step's graph: its own, or for a
    gradient op (gradient_tape/...) that of the longest forward op name its name starts with."""
    own = sources.get(name, "")
    if not name.startswith("gradient_tape/"):
        return own
    parts = name[len("gradient_tape/") :].split("/")
    for k in range(len(parts) - 1, 0, -1):  # the last part is the gradient op's own name
        found = sources.get("/".join(parts[:k]))
        if found:
            return found
    return ""
