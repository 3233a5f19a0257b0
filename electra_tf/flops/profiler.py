"""Profiler counts: TensorFlow's static graph profiler on a concrete function.

TensorFlow is imported lazily so that the analytic counter (and `count_flops.py`'s table) stays
light.
"""


def einsum_flops(equation: str, input_shapes: list) -> int:
    """FLOPs of an einsum, in the matmul convention.

    With two operands and a contracted (summed) index, every combination of all distinct index
    values costs one multiply and one add: 2·(product of all distinct index sizes), which is
    2·m·n·k for a matmul. Without a contracted index (outer or element-wise product) it is the
    multiplies only; with a single operand, a reduction costs one add per input value and a
    transpose costs nothing. `...` dimensions broadcast as numpy does.
    """
    equation = equation.replace(" ", "")
    if "->" in equation:
        lhs, rhs = equation.split("->")
    else:
        lhs, rhs = equation, None
    operands = lhs.split(",")
    if len(operands) != len(input_shapes):
        raise ValueError(
            f"einsum {equation!r} has {len(operands)} operands, got shapes for {len(input_shapes)}"
        )
    sizes = {}
    counts = {}
    for labels, shape in zip(operands, input_shapes):
        shape = [int(d) for d in shape]
        named = labels.replace("...", "")
        if "..." in labels:
            rank = len(shape) - len(named)
            before, after = labels.split("...")
            dims = list(zip(before, shape[: len(before)]))
            ellipsis_dims = shape[len(before) : len(before) + rank]
            # Broadcast from the right, as numpy does.
            for k, d in enumerate(reversed(ellipsis_dims)):
                key = ("...", k)
                sizes[key] = max(sizes.get(key, 1), d)
            dims += list(zip(after, shape[len(before) + rank :]))
        else:
            if len(named) != len(shape):
                raise ValueError(f"einsum operand {labels!r} does not match shape {shape}")
            dims = list(zip(named, shape))
        for label, d in dims:
            sizes[label] = max(sizes.get(label, 1), d)
            counts[label] = counts.get(label, 0) + 1
    if rhs is None:  # implicit output: the labels seen exactly once, sorted
        output = {label for label, c in counts.items() if c == 1}
    else:
        output = set(rhs.replace("...", ""))
    contracted = [label for label in counts if label not in output]
    total = 1
    for d in sizes.values():
        total *= d
    if len(operands) == 1:
        return total if contracted else 0
    return (len(operands) - 1) * total + (total if contracted else 0)


_EINSUM_REGISTERED = False


def register_einsum_flops() -> None:
    """Teaches TensorFlow's profiler the FLOPs of `Einsum` (it has no rule); idempotent."""
    global _EINSUM_REGISTERED
    if _EINSUM_REGISTERED:
        return
    from tensorflow.python.framework import graph_util, ops

    def _einsum_stats(graph, node):
        shapes = []
        for name in node.input:
            if name.startswith("^"):  # control input
                continue
            shape = graph_util.tensor_shape_from_node_def_name(graph, name)
            shape.assert_is_fully_defined()
            shapes.append(shape.as_list())
        equation = node.attr["equation"].s.decode("utf-8")
        return ops.OpStats("flops", einsum_flops(equation, shapes))

    try:
        ops.RegisterStatistics("Einsum", "flops")(_einsum_stats)
    except KeyError:  # registered already (by another copy of this module or another library)
        pass
    _EINSUM_REGISTERED = True


def profile_graph_flops(graph) -> int:
    """Total float operations of a graph (static shapes), from `tf.compat.v1.profiler`."""
    import tensorflow as tf

    register_einsum_flops()
    builder = tf.compat.v1.profiler.ProfileOptionBuilder
    from tensorflow.python.util import deprecation

    options = builder(builder.float_operation()).with_empty_output().build()
    with deprecation.silence():  # the v1 profiler's helpers warn that they are deprecated
        return int(tf.compat.v1.profiler.profile(graph, options=options).total_float_ops)


def profile_function_flops(fn, *input_specs) -> int:
    """Profiler FLOPs of `fn` traced with fully defined `tf.TensorSpec`s (nests allowed; no run).

    Traced without autograph (the model's code has no tensor-dependent Python control flow), which
    makes tracing several times faster.
    """
    import tensorflow as tf

    for spec in tf.nest.flatten(input_specs):
        if not spec.shape.is_fully_defined():
            raise ValueError(f"profiling needs static shapes, got {spec}")
    concrete = tf.function(fn, autograph=False).get_concrete_function(*input_specs)
    return profile_graph_flops(concrete.graph)
