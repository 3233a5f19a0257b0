"""The estimator-style pretraining loop: strategy, model, optimizer, checkpoints, eval, summaries.

One `PretrainingRunner` owns a run directory (`model_dir`). Re-running the same command resumes
from the latest checkpoint, which holds the model, the optimizer slots, the step, the data
iterator's position and the loss scale; the step's randomness is a pure function of (seed, step,
data), so a resumed run continues exactly as an uninterrupted one would.
"""

import json
import os
import signal
import time
from typing import Dict, Optional

import keras
import numpy as np
import tensorflow as tf

from electra_tf import flops as flops_lib
from electra_tf import masking
from electra_tf.configs import PretrainingConfig, write_json
from electra_tf.errors import UserError
from electra_tf.modeling.encoder import TransformerEncoder
from electra_tf.modeling.pretraining_model import ElectraPretrainer, metrics_from_sums
from electra_tf.optimization import ElectraAdamW, ElectraSchedule
from electra_tf.tokenization import load_vocab

# A default peak for MFU on a machine we cannot query: float32 matmul throughput measured on the
# project's 2-core AVX2 CPU with numpy (see README). Override with the `peak_flops` hparam.
DEFAULT_PEAK_FLOPS = 160e9


def log(msg: str) -> None:
    print(msg, flush=True)


def build_strategy(name: str) -> tf.distribute.Strategy:
    """`distribution` hparam -> a tf.distribute strategy."""
    if name == "auto":
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
            if resolver.master():
                name = "tpu"
        except (ValueError, RuntimeError, tf.errors.NotFoundError):
            pass
        if name == "auto":
            gpus = tf.config.list_logical_devices("GPU")
            name = "mirrored" if len(gpus) > 1 else "one_device"
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
    if name == "mirrored":
        devices = [d.name for d in tf.config.list_logical_devices("GPU")]
        if not devices:
            devices = [d.name for d in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices)
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise UserError("distribution multi_worker needs the TF_CONFIG environment variable")
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise UserError(f"unknown distribution {name!r}")


def special_token_ids(vocab: Dict[str, int], vocab_file: str) -> Dict[str, int]:
    ids = {}
    for key, token in (("mask", "[MASK]"), ("cls", "[CLS]"), ("sep", "[SEP]"), ("pad", "[PAD]")):
        if token not in vocab:
            raise UserError(f"{vocab_file}: the vocab has no {token} token")
        ids[key] = vocab[token]
    return ids


def build_pretrainer(config: PretrainingConfig, vocab_size: int, special_ids) -> ElectraPretrainer:
    """The generator and discriminator encoders wired as the original (tied embeddings), or as
    the objective / generator variants of the hparams ask."""
    from electra_tf.modeling.pretraining_model import load_unigram_counts

    disc_config, gen_config = config.model_configs(vocab_size)
    policy = keras.mixed_precision.DTypePolicy(config.precision)
    discriminator = TransformerEncoder(disc_config, name="electra", dtype=policy)
    samples = config.electra_objective and config.objective != "mlm"
    if samples and config.uniform_generator:
        generator = None  # uniform / unigram sampling, no generator network
    elif gen_config is None:  # masked LM objective, or generator == discriminator
        generator = discriminator
    else:
        shared = None if config.untied_generator_embeddings else discriminator.embeddings
        generator = TransformerEncoder(
            gen_config, embeddings=shared, name="generator", dtype=policy
        )
    counts = None
    if samples and config.uniform_generator == "unigram":
        counts = load_unigram_counts(
            config.token_counts_file or config.pretrain_tfrecords, vocab_size, special_ids
        )
    model = ElectraPretrainer(
        discriminator,
        generator,
        special_ids,
        electra_objective=config.electra_objective,
        gen_weight=config.gen_weight,
        disc_weight=config.disc_weight,
        mask_prob=config.mask_prob,
        max_predictions=config.max_predictions_per_seq,
        temperature=config.temperature,
        disallow_correct=config.disallow_correct,
        uniform_generator=config.uniform_generator if samples else False,
        objective=config.objective,
        unigram_counts=counts,
        adversarial_generator=config.adversarial_generator,
        dtype=policy,
        name="electra_pretrainer",
    )
    model.build()
    return model


def count_params(variables) -> int:
    """Parameters of distinct variables (shared ones, like tied embeddings, count once)."""
    unique = {id(v): v for v in variables}
    return int(sum(np.prod(v.shape) for v in unique.values()))


def write_scalars(writer, values: Dict[str, float], step: int) -> None:
    """TensorBoard scalar summaries with core TF ops (no `tensorboard` package needed)."""
    metadata = tf.compat.v1.SummaryMetadata()
    metadata.plugin_data.plugin_name = "scalars"
    with writer.as_default(step=step):
        for name, value in values.items():
            tf.summary.write(name, tf.constant(float(value), tf.float32), metadata=metadata)
    writer.flush()


def describe(model: ElectraPretrainer) -> Dict[str, int]:
    """Parameter counts: whole networks with their heads, and the bare discriminator encoder."""
    disc = list(model.discriminator.weights)
    if model.discriminator_predictions is not None:
        disc += model.discriminator_predictions.weights
    gen = []
    if model.generator is not None:
        gen = list(model.generator.weights) + list(model.generator_predictions.weights)
    return {
        "discriminator": count_params(disc),
        "generator": count_params(gen),
        "discriminator_backbone": count_params(model.discriminator.weights),
        "total": count_params(model.trainable_weights),
    }


def config_flops_per_step(
    config: PretrainingConfig, disc_config, gen_config, sparse_embed_lookup: bool = False
) -> float:
    """Training FLOPs of one step of `config`'s objective with these networks (paper convention:
    backward = forward). `gen_config` None: no generator network (uniform / unigram sampling, or
    masked LM on the discriminator itself). `sparse_embed_lookup`: lookups counted as gathers."""
    return float(
        flops_lib.pretraining_flops_per_step(
            disc_config,
            gen_config,
            batch_size=config.train_batch_size,
            seq_len=config.max_seq_length,
            objective=config.objective if config.electra_objective else "mlm",
            mask_prob=config.mask_prob,
            sparse_embed_lookup=sparse_embed_lookup,
        )
    )


def flops_per_step(config: PretrainingConfig, model: ElectraPretrainer) -> float:
    """Training FLOPs of one step of a built model (paper convention)."""
    gen = model.generator.config if model.generator is not None else None
    masked_lm_only = not config.electra_objective or config.objective == "mlm"
    if model.generator is model.discriminator and masked_lm_only:
        gen = None  # one network with an MLM head
    return config_flops_per_step(config, model.discriminator.config, gen)


class PretrainingRunner:
    """Builds everything for a run and trains / evaluates it."""

    def __init__(
        self, config: PretrainingConfig, strategy: Optional[tf.distribute.Strategy] = None
    ):
        self.config = config
        if config.deterministic:
            tf.config.experimental.enable_op_determinism()
            keras.utils.set_random_seed(int(config.seed))
        if not os.path.exists(config.vocab_file):
            raise UserError(f"vocab file {config.vocab_file} does not exist")
        self.vocab = load_vocab(config.vocab_file)
        vocab_size = config.vocab_size or len(self.vocab)
        if vocab_size != len(self.vocab):
            raise UserError(
                f"vocab_size {vocab_size} does not match {config.vocab_file} "
                f"({len(self.vocab)} entries)"
            )
        self.special_ids = special_token_ids(self.vocab, config.vocab_file)
        self.strategy = strategy or build_strategy(config.distribution)
        self.num_replicas = self.strategy.num_replicas_in_sync
        if config.train_batch_size % (self.num_replicas * config.gradient_accumulation_steps):
            raise UserError(
                f"train_batch_size {config.train_batch_size} is not divisible by "
                f"{self.num_replicas} replicas x {config.gradient_accumulation_steps} "
                "accumulation steps"
            )
        keras.utils.set_random_seed(int(config.seed))  # same initial weights for a given seed
        with self.strategy.scope():
            self.model = build_pretrainer(config, vocab_size, self.special_ids)
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
            self.optimizer = ElectraAdamW(
                ElectraSchedule(
                    config.learning_rate,
                    config.num_train_steps,
                    config.num_warmup_steps,
                    config.lr_decay_power,
                ),
                self.model.trainable_weights,
                weight_decay_rate=config.weight_decay_rate,
                clip_norm=config.clip_norm,
            )
            self.loss_scale = tf.Variable(
                2.0**15 if config.precision == "mixed_float16" else 1.0,
                trainable=False,
                name="loss_scale",
            )
            self.good_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="good_steps")
        self.flops_per_step = flops_per_step(config, self.model)
        self.peak_flops = float(config.peak_flops or DEFAULT_PEAK_FLOPS)

    # ---------------------------------------------------------------- data
    def _iterators(self, is_training: bool):
        """One plain tf.data iterator per local replica (checkpointable, unlike tf.distribute's
        distributed iterators), each reading its own shard of the data."""
        from electra_tf import pretraining_data

        c = self.config
        files = pretraining_data.check_tfrecords(c.pretrain_tfrecords, c.max_seq_length)
        pretraining_data.check_dataset_info(
            os.path.dirname(files[0]), c.vocab_file, c.max_seq_length, c.do_lower_case
        )
        batch = c.train_batch_size if is_training else c.eval_batch_size
        if batch % self.num_replicas:
            raise UserError(f"batch size {batch} is not divisible by {self.num_replicas} replicas")
        local = len(self.strategy.extended.worker_devices)
        resolver = getattr(self.strategy, "cluster_resolver", None)
        worker = resolver.task_id if resolver is not None and resolver.task_type else 0
        self.first_local_replica = (worker or 0) * local
        iterators = []
        for i in range(local):
            ctx = tf.distribute.InputContext(
                num_input_pipelines=self.num_replicas,
                input_pipeline_id=self.first_local_replica + i,
                num_replicas_in_sync=self.num_replicas,
            )
            with tf.device("/cpu:0"):
                ds = pretraining_data.pretraining_dataset(
                    files,
                    c.max_seq_length,
                    batch // self.num_replicas,
                    is_training=is_training,
                    input_context=ctx if self.num_replicas > 1 else None,
                    seed=int(c.seed),
                    shuffle_buffer_size=c.shuffle_buffer_size,
                )
                iterators.append(iter(ds))
        return iterators

    def _run_on_replicas(self, fn, iterators):
        """Calls fn on each replica with the next batch of that replica's iterator."""
        batches = [next(it) for it in iterators]
        if len(batches) == 1 and self.num_replicas == 1:
            return self.strategy.run(fn, args=(batches[0],))
        first = self.first_local_replica
        values = self.strategy.experimental_distribute_values_from_function(
            lambda ctx: batches[ctx.replica_id_in_sync_group - first]
        )
        return self.strategy.run(fn, args=(values,))

    # ---------------------------------------------------------------- steps
    def _replica_train_step(self, batch):
        c = self.config
        ctx = tf.distribute.get_replica_context()
        dens = ctx.all_reduce(tf.distribute.ReduceOp.SUM, self.model.denominators(batch))
        step = self.step
        replica = ctx.replica_id_in_sync_group
        if not isinstance(replica, tf.Tensor):
            replica = tf.constant(replica)
        variables = self.model.trainable_weights
        accum = int(c.gradient_accumulation_steps)
        scale = self.loss_scale

        def micro_grads(micro, index):
            dropout_seed = tf.stack(
                [
                    tf.cast(c.seed, tf.int32),
                    tf.cast(step, tf.int32) * 4099 + tf.cast(replica, tf.int32) * 131 + index,
                ]
            )
            with tf.GradientTape() as tape:
                out = self.model.compute(
                    micro,
                    step=step,
                    seed=c.seed,
                    training=True,
                    dropout_seed=dropout_seed,
                    global_denominators=dens,
                )
                scaled = out["loss"] * scale
            grads = tape.gradient(scaled, variables)
            grads = [
                tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                for g, v in zip(grads, variables)
            ]
            return grads, out

        if accum == 1:
            grads, out = micro_grads(batch, 0)
        else:
            micro_batches = {
                k: tf.reshape(v, [accum, -1] + v.shape[1:].as_list()) for k, v in batch.items()
            }
            grads, out = micro_grads({k: v[0] for k, v in micro_batches.items()}, 0)
            for i in range(1, accum):
                g_i, out_i = micro_grads({k: v[i] for k, v in micro_batches.items()}, i)
                grads = [a + b for a, b in zip(grads, g_i)]
                out = {k: out[k] + out_i[k] for k in out}
        grads = [tf.cast(g, tf.float32) / scale for g in grads]
        grads = ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)
        out = ctx.all_reduce(tf.distribute.ReduceOp.SUM, out)
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
        grads, grad_norm = self.optimizer.clip(grads)
        lr = self.optimizer.current_learning_rate()
        if c.precision == "mixed_float16":
            self._apply_with_loss_scale(grads, finite)
        else:
            self.optimizer.apply_gradients(grads)
        out["grad_norm"] = grad_norm
        out["learning_rate"] = lr
        return out

    def _apply_with_loss_scale(self, grads, finite):
        """Dynamic loss scaling for float16: skip non-finite steps, halve / double the scale."""
        ctx = tf.distribute.get_replica_context()

        def apply_in_cross_replica(strategy, grads, finite):
            def apply():
                self.optimizer._update_all(strategy, grads)
                self.good_steps.assign_add(1)
                return tf.constant(True)

            def skip():
                self.loss_scale.assign(tf.maximum(self.loss_scale / 2.0, 1.0))
                self.good_steps.assign(0)
                return tf.constant(False)

            tf.cond(finite, apply, skip)
            grow = self.good_steps >= 2000
            self.loss_scale.assign(tf.where(grow, self.loss_scale * 2.0, self.loss_scale))
            self.good_steps.assign(tf.where(grow, tf.zeros_like(self.good_steps), self.good_steps))

        if self.num_replicas == 1 and ctx is not None:
            apply_in_cross_replica(tf.distribute.get_strategy(), grads, finite)
        else:
            ctx.merge_call(apply_in_cross_replica, args=(grads, finite))

    def _make_train_fn(self):
        compute = self._replica_train_step

        if self.config.jit_compile and self.num_replicas == 1:
            compute = _jit(compute)

        @tf.function
        def train_fn(iterators):
            out = self._run_on_replicas(compute, iterators)
            self.step.assign_add(1)
            return self.strategy.experimental_local_results(out)[0]

        return train_fn

    def _make_eval_fn(self):
        def replica_eval(batch):
            ctx = tf.distribute.get_replica_context()
            out = self.model.compute(
                batch, step=self.step, seed=self.config.seed, training=False, with_eval_stats=True
            )
            return ctx.all_reduce(tf.distribute.ReduceOp.SUM, out)

        fn = _jit(replica_eval) if self.config.jit_compile and self.num_replicas == 1 else None

        @tf.function
        def eval_fn(iterators):
            out = self._run_on_replicas(fn or replica_eval, iterators)
            return self.strategy.experimental_local_results(out)[0]

        return eval_fn

    # ---------------------------------------------------------------- checkpoints
    def _checkpoint(self, iterators=()):
        items = dict(
            model=self.model,
            optimizer=self.optimizer,
            step=self.step,
            loss_scale=self.loss_scale,
            good_steps=self.good_steps,
        )
        for i, it in enumerate(iterators):  # this worker's data positions
            items[f"iterator_{i}"] = it
        return tf.train.Checkpoint(**items)

    def _is_chief(self) -> bool:
        resolver = getattr(self.strategy, "cluster_resolver", None)
        if resolver is None or not resolver.task_type:
            return True
        return resolver.task_type == "chief" or (
            resolver.task_type == "worker" and resolver.task_id == 0
        )

    def _manager_dir(self) -> str:
        # MultiWorkerMirroredStrategy: every worker saves (collective ops), non-chiefs to scratch
        if self._is_chief():
            return self.config.model_dir
        resolver = self.strategy.cluster_resolver
        return os.path.join(self.config.model_dir, f"worker_tmp_{resolver.task_id}")

    def write_run_config(self) -> None:
        c = self.config
        disc, gen = c.model_configs(len(self.vocab))
        d = c.to_dict()
        d["model_config"] = disc.to_dict()
        d["generator_config"] = gen.to_dict() if gen is not None else None
        d["num_replicas"] = self.num_replicas
        d["flops_per_step"] = self.flops_per_step
        if self._is_chief():
            write_json(os.path.join(c.model_dir, "config.json"), d)
            vocab_copy = os.path.join(c.model_dir, "vocab.txt")
            if not os.path.exists(vocab_copy):
                with open(c.vocab_file, "rb") as src, open(vocab_copy + ".tmp", "wb") as dst:
                    dst.write(src.read())
                os.replace(vocab_copy + ".tmp", vocab_copy)

    def warm_start(self, path: str) -> None:
        """Restores what matches from another checkpoint (e.g. a released model) and reports
        what it did not restore."""
        from electra_tf import checkpoints

        restored, missing = checkpoints.warm_start(self.model, path)
        log(f"warm start from {path}: restored {restored} variables")
        if missing:
            log(f"  not restored ({len(missing)}): {', '.join(missing[:20])}")

    # ---------------------------------------------------------------- train
    def train(self) -> Dict[str, float]:
        c = self.config
        os.makedirs(c.model_dir, exist_ok=True)
        self.write_run_config()
        iterators = self._iterators(is_training=True)
        ckpt = self._checkpoint(iterators)
        manager = tf.train.CheckpointManager(
            ckpt,
            self._manager_dir(),
            max_to_keep=c.keep_checkpoint_max or None,
        )
        if manager.latest_checkpoint:
            ckpt.restore(manager.latest_checkpoint).assert_existing_objects_matched()
            log(f"resumed from {manager.latest_checkpoint} at step {int(self.step.numpy())}")
        elif c.init_checkpoint:
            self.warm_start(c.init_checkpoint)
        start_step = int(self.step.numpy())
        if start_step >= c.num_train_steps:
            log(f"training already finished ({start_step} steps)")
            return {}
        train_fn = self._make_train_fn()
        stop = {"signal": None}
        previous = signal.getsignal(signal.SIGTERM)

        def on_sigterm(signum, frame):
            stop["signal"] = signum

        if _in_main_thread():
            signal.signal(signal.SIGTERM, on_sigterm)
        summary_writer = (
            tf.summary.create_file_writer(os.path.join(c.model_dir, "train"))
            if self._is_chief()
            else tf.summary.create_noop_writer()
        )
        log(
            f"training {c.model_name}: steps {start_step} -> {c.num_train_steps}, global batch "
            f"{c.train_batch_size} on {self.num_replicas} replica(s), "
            f"{self.flops_per_step:.3e} FLOPs/step"
        )
        history = []
        t0 = time.time()
        window_t, window_steps = t0, 0
        total_flops = start_step * self.flops_per_step
        first = True
        try:
            while int(self.step.numpy()) < c.num_train_steps:
                out = train_fn(iterators)
                step = int(self.step.numpy())
                loss = float(out["loss"])
                if first:  # the first step includes tracing and XLA compilation
                    log(f"step {step}: compiled and ran the first step in {time.time() - t0:.1f}s")
                    t0 = window_t = time.time()
                    first = False
                    window_steps = 0
                else:
                    window_steps += 1
                if not np.isfinite(loss):
                    last = manager.latest_checkpoint or "none"
                    raise UserError(
                        f"non-finite loss ({loss}) at step {step}; the last good checkpoint is "
                        f"{last} (kept)"
                    )
                total_flops += self.flops_per_step
                history.append((step, loss))
                if step % c.save_checkpoints_steps == 0:  # as the original: at multiples
                    manager.save(checkpoint_number=step, check_interval=False)
                if step % c.log_every_steps == 0 or step == c.num_train_steps:
                    now = time.time()
                    head = (
                        f"step {step}/{c.num_train_steps} loss {loss:.4f} "
                        f"mlm {float(out['mlm_loss_sum'] / out['mlm_weight_sum']):.4f} "
                        f"lr {float(out['learning_rate']):.2e}"
                    )
                    scalars = {
                        "loss": loss,
                        "learning_rate": float(out["learning_rate"]),
                        "train_flops": total_flops,
                    }
                    if window_steps:  # speed over the steps since the last line (not compilation)
                        rate = window_steps / max(now - window_t, 1e-9)
                        seq_s = rate * c.train_batch_size
                        flops_s = rate * self.flops_per_step
                        eta = (c.num_train_steps - step) / rate
                        log(
                            f"{head} | {rate:.2f} steps/s {seq_s:.1f} seq/s "
                            f"{flops_s / 1e9:.1f} GFLOP/s MFU {flops_s / self.peak_flops:.1%} "
                            f"| ETA {_fmt_time(eta)}"
                        )
                        scalars.update(
                            sequences_per_second=seq_s,
                            flops_per_second=flops_s,
                            mfu=flops_s / self.peak_flops,
                        )
                    else:
                        log(head)
                    window_t, window_steps = now, 0
                    write_scalars(summary_writer, scalars, step)
                if stop["signal"] is not None:
                    manager.save(checkpoint_number=step, check_interval=False)
                    log(f"received signal {stop['signal']}: saved a checkpoint at step {step}")
                    raise SystemExit(143)
        finally:
            if _in_main_thread():
                signal.signal(signal.SIGTERM, previous)
        step = int(self.step.numpy())
        manager.save(checkpoint_number=step, check_interval=False)
        elapsed = time.time() - t0
        measured_steps = max(step - start_step - 1, 1)
        summary = {
            "global_step": step,
            "train_flops": total_flops,
            "flops_per_step": self.flops_per_step,
            "train_flops_per_second": measured_steps * self.flops_per_step / max(elapsed, 1e-9),
        }
        summary["train_mfu"] = summary["train_flops_per_second"] / self.peak_flops
        summary["peak_flops"] = self.peak_flops
        self.train_summary = summary
        log(f"saved {manager.latest_checkpoint}")
        return summary

    # ---------------------------------------------------------------- eval
    def evaluate(self) -> Dict[str, float]:
        c = self.config
        ckpt = self._checkpoint()
        latest = tf.train.latest_checkpoint(c.model_dir)
        if latest is None:
            raise UserError(f"no checkpoint to evaluate in {c.model_dir}")
        ckpt.restore(latest).expect_partial()
        iterators = self._iterators(is_training=False)
        eval_fn = self._make_eval_fn()
        sums: Dict[str, np.ndarray] = {}
        steps = 0
        for _ in range(c.num_eval_steps):
            try:
                out = eval_fn(iterators)
            except (StopIteration, tf.errors.OutOfRangeError):
                break
            for k, v in out.items():
                sums[k] = sums.get(k, 0) + v.numpy().astype(np.float64)
            steps += 1
        if not steps:
            raise UserError(f"no eval data in {c.pretrain_tfrecords} (eval_batch_size too big?)")
        metrics = metrics_from_sums(sums)
        # the total loss the run minimises (whatever the objective), averaged over eval batches
        # (each replica's batch loss is summed by the all-reduce)
        metrics["loss"] = float(sums["loss"] / (steps * self.num_replicas))
        metrics["global_step"] = int(self.step.numpy())
        metrics["eval_steps"] = steps
        metrics["train_flops"] = metrics["global_step"] * self.flops_per_step
        if getattr(self, "train_summary", None):
            metrics.update(self.train_summary)
        if self._is_chief():
            write_json(os.path.join(c.model_dir, "eval_results.json"), metrics)
            writer = tf.summary.create_file_writer(os.path.join(c.model_dir, "eval"))
            write_scalars(writer, metrics, metrics["global_step"])
        return metrics


def _jit(fn):
    return tf.function(fn, jit_compile=True)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _fmt_time(seconds: float) -> str:
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def describe_json(config: PretrainingConfig) -> str:
    """`--describe`: resolved hparams, parameter counts and FLOPs per step, without training."""
    vocab = load_vocab(config.vocab_file) if os.path.exists(config.vocab_file) else None
    vocab_size = config.vocab_size or (len(vocab) if vocab else 30522)
    special = special_token_ids(vocab, config.vocab_file) if vocab else _bert_special_ids()
    model = build_pretrainer(config, vocab_size, special)
    d = config.to_dict()
    disc, gen = config.model_configs(vocab_size)
    d["model_config"] = disc.to_dict()
    d["generator_config"] = gen.to_dict() if gen is not None else None
    d["parameters"] = describe(model)
    d["flops_per_step"] = flops_per_step(config, model)
    return json.dumps(d, indent=2, sort_keys=True)


def _bert_special_ids():
    return {"pad": 0, "cls": 101, "sep": 102, "mask": 103}


__all__ = ["PretrainingRunner", "build_pretrainer", "describe", "describe_json", "masking"]
