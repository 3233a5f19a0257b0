"""Two-stage training (paper §3.2): stage 1 trains the generator alone by masked LM, the
discriminator then starts as a copy of it and stage 2 trains it with the generator frozen;
calls stop at the boundary and the schedule restarts there."""

import json
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf
from harness import SPECIAL, TINY, TINY_RUN, VOCAB, make_synthetic_batch, run_script

from electra_tf.errors import UserError
from electra_tf.optimization import ElectraSchedule, StagedSchedule, make_optimizer
from electra_tf.pretraining_config import PretrainingConfig
from electra_tf.pretraining_networks import build_pretrainer
from electra_tf.train.loss_scale import DynamicLossScale
from electra_tf.train.step import TrainStep, steps_in_call
from electra_tf.train.strategy import ReplicaLayout
from electra_tf.train.two_stage import TwoStage

# the generator the discriminator's size: hidden 32, 2 layers, 2 heads, FFN 64
SAME_SIZE = dict(
    generator_hidden_size=1.0, generator_config={"intermediate_size": 64, "num_attention_heads": 2}
)


def _model(**hp):
    config = PretrainingConfig.from_flat(
        "t",
        "/nonexistent",
        {**TINY, **SAME_SIZE, "num_train_steps": 10, "two_stage_steps": 3, **hp},
    )
    return config, build_pretrainer(config, VOCAB, SPECIAL)


def _values(variables):
    return [v.numpy().copy() for v in variables]


def test_the_discriminator_starts_as_the_generator():
    config, model = _model()
    stages = TwoStage(model, 3)
    gen_side, disc_side = stages.variables("generator"), stages.variables("discriminator")
    ids = {id(v) for v in model.trainable_weights}
    assert {id(v) for v in gen_side} | {id(v) for v in disc_side} == ids
    assert not {id(v) for v in gen_side} & {id(v) for v in disc_side}
    paths = {v.path for v in gen_side}
    assert "electra/embeddings/word_embeddings" in paths  # tied: the generator's tables too
    assert "generator_predictions/output_bias" in paths
    assert all(p.startswith(("electra/", "discriminator_predictions/")) for p in
               (v.path for v in disc_side))  # fmt: skip
    batch = make_synthetic_batch(1)
    args = (batch["input_ids"], batch["input_mask"], batch["segment_ids"])
    assert not np.allclose(model.discriminator(*args), model.generator(*args))
    assert stages.initialize_discriminator() == 34  # 2 layers x 16, embeddings_project (2)
    # a second method: the two encoders now compute the same function
    np.testing.assert_array_equal(model.discriminator(*args), model.generator(*args))
    assert (stages.stage_at(2), stages.stage_at(3)) == ("generator", "discriminator")


def test_untied_embeddings_are_copied_too():
    _, model = _model(untied_generator_embeddings=True, embedding_size=32)
    stages = TwoStage(model, 3)
    disc_paths = {v.path for v in stages.variables("discriminator")}
    assert "electra/embeddings/word_embeddings" in disc_paths  # its own: trained in stage 2
    # 2 layers x 16 and the 5 embedding variables (no embeddings_project: E = H)
    assert stages.initialize_discriminator() == 37
    batch = make_synthetic_batch(1)
    args = (batch["input_ids"], batch["input_mask"], batch["segment_ids"])
    np.testing.assert_array_equal(model.discriminator(*args), model.generator(*args))


def _step_fn(model, optimizer, stages, stage, step_var):
    strategy = tf.distribute.get_strategy()
    return TrainStep(
        model, optimizer, DynamicLossScale(False), step_var, strategy,
        ReplicaLayout(1, 1, 0), seed=0, stage=stage, variables=stages.variables(stage),
    ).function()  # fmt: skip


def test_each_stage_updates_only_its_side():
    config, model = _model()
    stages = TwoStage(model, 3)
    schedule = StagedSchedule(ElectraSchedule(1e-2, 3, 1), ElectraSchedule(1e-2, 7, 1), 3)
    opt = make_optimizer("adamw", schedule, model.trainable_weights, weight_decay_rate=0.01)
    step = tf.Variable(0, dtype=tf.int64)
    data = tf.data.Dataset.from_tensors(make_synthetic_batch(2)).repeat()
    it = [iter(data)]
    gen_side, disc_side = stages.variables("generator"), stages.variables("discriminator")
    slots = {id(v): (m, s) for v, m, s in zip(opt._vars, opt.m, opt.v)}
    disc0, gen0 = _values(disc_side), _values(gen_side)
    out, losses = _step_fn(model, opt, stages, "generator", step)(it, tf.constant(3))
    # stage 1: the loss is the masked LM's alone; the discriminator side is never touched
    # (weight decay would move it), nor its slots
    np.testing.assert_allclose(out["loss"], out["mlm_loss_sum"] / (out["mlm_weight_sum"] + 1e-6))
    assert "disc_loss_sum" not in out
    for v, before in zip(disc_side, disc0):
        np.testing.assert_array_equal(v.numpy(), before)
        assert not np.any(slots[id(v)][0].numpy()) and not np.any(slots[id(v)][1].numpy())
    assert all(not np.array_equal(v.numpy(), b) for v, b in zip(gen_side, gen0))
    stages.initialize_discriminator()
    gen3 = _values(gen_side)
    out, _ = _step_fn(model, opt, stages, "discriminator", step)(it, tf.constant(3))
    # stage 2: the generator (its encoder, head and the tied embeddings) is frozen
    for v, before in zip(gen_side, gen3):
        np.testing.assert_array_equal(v.numpy(), before)
    np.testing.assert_allclose(
        out["loss"], 50 * out["disc_loss_sum"] / (out["disc_weight_sum"] + 1e-6), rtol=1e-6
    )
    changed = [not np.array_equal(v.numpy(), b) for v, b in zip(disc_side, disc0)]
    assert all(changed)
    assert int(step.numpy()) == 6 and int(opt.iterations.numpy()) == 6


def test_schedule_restarts_and_calls_stop_at_the_boundary():
    s = StagedSchedule(ElectraSchedule(1e-3, 4, 2), ElectraSchedule(2e-3, 6, 2), 4)
    # stage 1: 1e-3 (1 - t/4) min(1, t/2); stage 2 from step 4: 2e-3 (1 - u/6) min(1, u/2)
    expected = [0, 1e-3 * 0.75 / 2, 1e-3 * 0.5, 1e-3 * 0.25, 0, 2e-3 * (5 / 6) / 2, 2e-3 * 4 / 6]
    for t, lr in enumerate(expected):
        assert float(s(t)) == pytest.approx(lr, rel=1e-6, abs=1e-12), t
    step, calls = 1, []
    while step < 10:
        n = steps_in_call(step, 10, 4, 100, 100, boundary=3)
        calls.append(n)
        step += n
    assert calls == [2, 4, 3]  # 1 -> 3 (the boundary), 3 -> 7, 7 -> 10
    assert steps_in_call(0, 10, 4, 100, 100, boundary=0) == 4  # off


def test_two_stage_validation():
    for message, hp in {
        "two_stage_steps must be 0 .off. or in .0, num_train_steps 10.": dict(two_stage_steps=10),
        "differ in intermediate_size .128 vs 64., num_attention_heads .1 vs 2.": dict(
            generator_config={}
        ),
        "hidden_size .16 vs 32.": dict(generator_hidden_size=0.5, generator_config={}),
        "objective electra or electra_15": dict(objective="replace_mlm"),
        "no adversarial_generator": dict(adversarial_generator=True),
        "untied_generator=true": dict(uniform_generator=True, generator_config={}),
    }.items():
        with pytest.raises(UserError, match=message):
            _model(**hp)
    assert _model(two_stage_steps=0)[0].optimization.two_stage_steps == 0


@pytest.mark.slow
def test_run_pretraining_two_stage_freezes_each_side_in_turn(tiny_dataset, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(tiny_dataset, data)
    hp = {**TINY_RUN, **SAME_SIZE, "two_stage_steps": 3, "save_checkpoints_steps": 1}
    hp.update(keep_checkpoint_max=0, iterations_per_loop=4, log_every_steps=2)
    p = run_script(
        "run_pretraining.py", f"--data_dir={data}", "--model_name=two",
        "--hparams=" + json.dumps(hp),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    assert "step 3: stage 2, the discriminator initialised from the generator" in p.stdout
    lines = re.findall(r"^step (\d)/6 loss ([0-9.]+) mlm ([0-9.]+)", p.stdout, re.M)
    assert [step for step, _, _ in lines] == ["2", "4", "6"]
    assert lines[0][1] == lines[0][2]  # stage 1: the loss is the masked LM's alone

    def tensors(step):
        reader = tf.train.load_checkpoint(str(data / "models" / "two" / f"ckpt-{step}"))
        keys = reader.get_variable_to_shape_map()
        model = {k: reader.get_tensor(k) for k in keys if k.startswith("model/")}
        return model

    ckpt = {s: tensors(s) for s in range(1, 7)}
    gen = [k for k in ckpt[1] if k.startswith(("model/generator/", "model/generator_predictions/"))]
    own = ("model/discriminator/layer_", "model/discriminator_predictions/")
    disc = [k for k in ckpt[1] if k.startswith(own)]  # the shared embeddings are gen-side
    assert len(gen) > 30 and len(disc) > 30
    for s in (2, 3):  # stage 1: the discriminator's own variables keep their initial values
        assert all(np.array_equal(ckpt[s][k], ckpt[1][k]) for k in disc)
        assert not any(np.array_equal(ckpt[s][k], ckpt[s - 1][k]) for k in gen)
    for s in (4, 5, 6):  # stage 2: the generator (and the tied embeddings) frozen
        assert all(np.array_equal(ckpt[s][k], ckpt[3][k]) for k in gen)
        emb = "model/discriminator/embeddings/word_embeddings/.ATTRIBUTES/VARIABLE_VALUE"
        np.testing.assert_array_equal(ckpt[s][emb], ckpt[3][emb])
        # the schedule restarts at the boundary, with the original's lr(0) = 0: the step 3 -> 4
        # changes the encoder by the copy alone and leaves the new head as it was
        moved = [k for k in disc if not np.array_equal(ckpt[s][k], ckpt[s - 1][k])]
        if s == 4:
            assert sorted(set(disc) - set(moved)) == sorted(k for k in disc if "predictions/" in k)
            assert len(moved) == len(disc) - 4
        else:
            assert moved == disc
