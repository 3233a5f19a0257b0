"""The `distribution` hparam -> a tf.distribute strategy, and where this process sits in it."""

import dataclasses
import os

import tensorflow as tf

from electra_tf.errors import UserError


def build_strategy(name: str) -> tf.distribute.Strategy:
    """`distribution` hparam -> a tf.distribute strategy (`auto`: a TPU if a resolver is
    configured, else all local GPUs if more than one, else one device)."""
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


@dataclasses.dataclass(frozen=True)
class ReplicaLayout:
    """This process's place among the replicas.

    Attributes:
        num_replicas: replicas in sync over all workers.
        num_local: replicas (devices) of this worker.
        first_local_replica: the global index of this worker's first replica.
        task_type, task_id: the worker's role in a multi-worker cluster (None otherwise).
    """

    num_replicas: int
    num_local: int
    first_local_replica: int
    task_type: str = None
    task_id: int = None

    @classmethod
    def of(cls, strategy: tf.distribute.Strategy) -> "ReplicaLayout":
        if not tf.distribute.has_strategy() and strategy is tf.distribute.get_strategy():
            return cls(1, 1, 0)  # the default strategy (no scope): one replica, no workers
        local = len(strategy.extended.worker_devices)
        resolver = getattr(strategy, "cluster_resolver", None)
        task_type = resolver.task_type if resolver is not None and resolver.task_type else None
        task_id = resolver.task_id if task_type else None
        return cls(strategy.num_replicas_in_sync, local, (task_id or 0) * local, task_type, task_id)

    @property
    def is_chief(self) -> bool:
        """The worker that writes the run directory (every worker saves, with collectives)."""
        if self.task_type is None:
            return True
        return self.task_type == "chief" or (self.task_type == "worker" and self.task_id == 0)
