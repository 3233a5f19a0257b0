"""bench/op_categories.py on real op names: TensorFlow's from a tf.profiler trace of the default
ELECTRA-small step (graph path, `where` as bench/profile_step.py finds it in the step's graph),
torch's from bench/peer_hf_step.py under torch.profiler (ELECTRA recipe model, batch 4 x 32). The
expected category of each is stated by hand."""

import os
import sys

import pytest

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
)
import op_categories as oc  # noqa: E402

TF_OPS = [  # (name, type, where of the forward op), category
    (("electra_1/layer_4_1/query_1/Tensordot/MatMul", "_MklMatMul", "modeling/encoder.py:call"), oc.ENCODER_MATMULS),
    (("gradient_tape/electra_1/layer_2_1/dense_3/Tensordot/MatMul/MatMul", "_MklMatMul", "modeling/encoder.py:call"), oc.ENCODER_MATMULS),
    (("gradient_tape/electra_1/layer_2_1/key_1/BiasAdd/BiasAddGrad", "BiasAddGrad", "modeling/encoder.py:call"), oc.ENCODER_MATMULS),
    (("electra_1/embeddings_project_1/Tensordot/MatMul", "_MklMatMul", "modeling/encoder.py:call"), oc.ENCODER_MATMULS),
    (("generator_1/layer_0_1/MatMul_1", "_MklBatchMatMulV2", "modeling/encoder.py:call"), oc.ATTENTION),
    (("electra_1/layer_0_1/add", "_MklFusedBatchMatMulV2", "modeling/encoder.py:call"), oc.ATTENTION),
    (("electra_1/layer_3_1/Softmax", "_MklSoftmax", "modeling/encoder.py:call"), oc.ATTENTION),
    (("gradient_tape/electra_1/layer_1_1/transpose_3/transpose", "_MklTranspose", "modeling/encoder.py:split_heads"), oc.ATTENTION),
    (("electra_1/layer_5_1/LayerNorm_1/moments/SquaredDifference", "SquaredDifference", "modeling/layers.py:call"), oc.ELEMENTWISE),
    (("electra_1/layer_5_1/stateless_random_uniform", "StatelessRandomUniformFullIntV2", "modeling/layers.py:dropout"), oc.ELEMENTWISE),
    (("electra_1/layer_5_1/Erf", "Erf", "modeling/layers.py:gelu"), oc.ELEMENTWISE),
    (("gradient_tape/electra_1/layer_0_1/Exp/unary_ops_composition", "_UnaryOpsComposition", ""), oc.ELEMENTWISE),
    (("gradient_tape/UnsortedSegmentSum", "UnsortedSegmentSum", "optimization.py:dense_gradients"), oc.EMBEDDING),
    (("AddN_127/inputs_1", "UnsortedSegmentSum", ""), oc.EMBEDDING),
    (("electra_1/embeddings_1/GatherV2", "GatherV2", "modeling/encoder.py:call"), oc.EMBEDDING),
    (("gradient_tape/generator_predictions_1/einsum/Einsum", "_MklEinsum", "modeling/heads.py:call"), oc.GENERATOR_OUTPUT),
    (("generator_predictions_1/LayerNorm_1/mul", "Mul", "modeling/layers.py:call"), oc.GENERATOR_OUTPUT),
    (("ReduceLogSumExp/Sub", "Sub", "objectives/base.py:generator_loss"), oc.GENERATOR_OUTPUT),
    (("Cumsum_1", "Cumsum", "masking.py:_inverse_cdf"), oc.SAMPLING),
    (("Pad", "Pad", "masking.py:categorical_sample"), oc.SAMPLING),
    (("one_hot_1", "OneHot", "masking.py:scatter_update"), oc.SAMPLING),
    (("Square_153", "Square", "optimization.py:update_replicas"), oc.OPTIMIZER),
    (("global_norm/L2Loss_3", "L2Loss", "optimization.py:clip"), oc.OPTIMIZER),
    (("AssignSubVariableOp_136", "AssignSubVariableOp", "optimization.py:update_replicas"), oc.OPTIMIZER),
    (("logistic_loss/Log1p", "Log1p", "objectives/replaced_token_detection.py:detection_losses"), oc.OTHER),
]  # fmt: skip

TORCH_OPS = [  # (aten op, autograd node, region), category; input shapes in the comments
    (("aten::addmm", "", "electra/discriminator"), oc.ENCODER_MATMULS),  # [128] [128,128] [128,128]
    (("aten::mm", "AddmmBackward0", "electra/generator"), oc.ENCODER_MATMULS),  # [128,32] [32,32]
    (("aten::bmm", "", "electra/generator"), oc.ATTENTION),  # [4,32,32] [4,32,32]
    (("aten::bmm", "BmmBackward0", "electra/generator"), oc.ATTENTION),
    (("aten::_safe_softmax", "", "electra/discriminator"), oc.ATTENTION),  # [4,2,32,32]
    (("aten::_scaled_dot_product_attention_math", "", "electra/generator"), oc.ATTENTION),
    (("aten::native_layer_norm_backward", "NativeLayerNormBackward0", "electra/discriminator"), oc.ELEMENTWISE),
    (("aten::gelu", "", "electra/generator"), oc.ELEMENTWISE),  # [4,32,128]
    (("aten::bernoulli_", "", "electra/discriminator"), oc.ELEMENTWISE),
    (("aten::embedding_dense_backward", "EmbeddingBackward0", ""), oc.EMBEDDING),  # [4,32,128]
    (("aten::fill_", "EmbeddingBackward0", "electra/discriminator"), oc.EMBEDDING),  # [15943,128]
    (("aten::index_select", "", "electra/generator"), oc.EMBEDDING),  # aten::embedding's lookup
    (("aten::mm", "AddmmBackward0", "electra/generator_head"), oc.GENERATOR_OUTPUT),  # [16,15943] [15943,128]
    (("aten::nll_loss_forward", "", "electra/generator_head"), oc.GENERATOR_OUTPUT),
    (("aten::gather_backward", "GatherBackward0", "electra/generator_head"), oc.GENERATOR_OUTPUT),
    (("aten::log", "", "electra/sampling"), oc.SAMPLING),  # [4,4,15943]
    (("aten::multinomial", "", "electra/masking"), oc.SAMPLING),
    (("aten::sqrt", "", "electra/optimizer"), oc.OPTIMIZER),
    (("Optimizer.step#AdamW.step", "", "electra/optimizer"), oc.OPTIMIZER),
    (("aten::linalg_vector_norm", "", "electra/optimizer"), oc.OPTIMIZER),
    (("autograd::engine::evaluate_function: ViewBackward0", "ViewBackward0", "electra/discriminator"), oc.OTHER),
    (("aten::binary_cross_entropy_with_logits", "", "electra/discriminator_loss"), oc.OTHER),
]  # fmt: skip


@pytest.mark.parametrize("op,category", TF_OPS)
def test_tf_ops(op, category):
    assert oc.classify("tf", *op) == category


@pytest.mark.parametrize("op,category", TORCH_OPS)
def test_torch_ops(op, category):
    assert oc.classify("torch", *op) == category


def test_every_rule_names_a_category():
    assert {r.category for r in oc.RULES} <= set(oc.CATEGORIES)
    assert {r.framework for r in oc.RULES} == {"tf", "torch"}


def test_gradient_ops_take_their_forward_ops_where():
    sources = {
        "electra_1/layer_2_1/mul_3": "modeling/layers.py:dropout",
        "electra_1/layer_2_1/mul": "modeling/encoder.py:call",
    }
    assert oc.forward_where("gradient_tape/electra_1/layer_2_1/mul_3/Mul", sources) == (
        "modeling/layers.py:dropout"
    )
    # a gradient helper with its own name at the layer's scope is not the forward op of that name
    assert oc.forward_where("gradient_tape/electra_1/layer_2_1/mul", sources) == ""
    assert oc.forward_where("electra_1/layer_2_1/mul", sources) == "modeling/encoder.py:call"
