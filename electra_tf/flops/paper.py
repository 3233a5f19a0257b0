"""The paper's named pretraining configurations (the original `flops_computation.py`'s table),
counted with the analytic conventions of `electra_tf.flops.analytic`."""

import dataclasses

from electra_tf.flops.analytic import TransformerFlops, electra_train_flops


@dataclasses.dataclass(frozen=True)
class PaperModel:
    """One named pretraining run: total FLOPs (backward = 1× forward) and its shape."""

    total_flops: float
    train_steps: float
    batch_size: int
    seq_len: int
    note: str = ""

    @property
    def flops_per_step(self) -> float:
        return self.total_flops / self.train_steps

    def to_dict(self) -> dict[str, float]:
        steps = self.train_steps
        return {
            "total_flops": self.total_flops,
            "flops_per_step": self.flops_per_step,
            "train_steps": int(steps) if float(steps).is_integer() else steps,
            "batch_size": self.batch_size,
            "seq_len": self.seq_len,
        }


def _paper_models() -> dict[str, PaperModel]:
    models = {}

    # ELMo and XLNet were counted with TensorFlow's profiler; the original gives raw products.
    # ELMo: 10 epochs over the 768,648,884-token LM1B corpus, batch 20 × 128 tokens, and
    # 568,093,262,680 forward FLOPs per batch. Steps = epochs · tokens / (batch · seq_len),
    # a fractional 3,002,534.7; FLOPs per step = 2 × the forward figure.
    elmo_steps = 10 * 768648884 / (20.0 * 128)
    models["elmo"] = PaperModel(
        2 * 10 * 768648884 * 568093262680 / (20.0 * 128),
        elmo_steps,
        20,
        128,
        "profiler count; steps = 10 epochs of 768,648,884 tokens at 20 x 128 tokens/step",
    )
    # XLNet: 500k steps at batch 8192 (length 512); 15,064,773,691,518 forward FLOPs per 32 examples.
    models["xlnet"] = PaperModel(
        2 * 500000 * 8192 * 15064773691518 / 32.0,
        500000,
        8192,
        512,
        "profiler count: 15,064,773,691,518 forward FLOPs per 32 examples",
    )

    def single(name, tf_model, batch, steps, note=""):
        models[name] = PaperModel(
            tf_model.train_flops(batch, steps), steps, batch, tf_model.s, note
        )

    single("gpt", TransformerFlops(768, 12, v=40000, output_frac=1.0), 128, 960800)
    single("bert_small", TransformerFlops(256, 12, e=128, s=128), 128, 1.45e6)
    single("bert_base", TransformerFlops(768, 12), 256, 1e6)
    single("bert_large", TransformerFlops(1024, 24), 256, 1e6)

    def electra(name, h_d, l_d, h_g, l_g, batch, steps, s=512, e=None):
        total = electra_train_flops(h_d, l_d, h_g, l_g, batch, steps, True, s=s, e=e)
        models[name] = PaperModel(total, steps, batch, s, f"generator hidden {h_g}")

    electra("electra_small", 256, 12, 64, 12, 128, 1e6, s=128, e=128)
    electra("electra_base", 768, 12, 256, 12, 256, 766000)
    electra("electra_400k", 1024, 24, 256, 24, 2048, 400000)
    electra("electra_1.75M", 1024, 24, 256, 24, 2048, 1750000)

    # RoBERTa, ALBERT and T5 differ a little from BERT; the original counts them with the same
    # formulas. T5-11B: an encoder without an output softmax plus a decoder (double attention)
    # with a softmax at every position.
    single("roberta", TransformerFlops(1024, 24, v=50265), 8000, 500000)
    single("albert", TransformerFlops(4096, 12, v=30000, e=128), 4096, 1.5e6)
    t5_sizes = {"v": 32000, "i": 65536, "heads": 128, "head_size": 128}
    t5_encoder = TransformerFlops(1024, 24, output_frac=0.0, **t5_sizes)
    t5_decoder = TransformerFlops(1024, 24, output_frac=1.0, decoder=True, **t5_sizes)
    models["t5_11b"] = PaperModel(
        t5_encoder.train_flops(2048, 1e6) + t5_decoder.train_flops(2048, 1e6),
        1e6,
        2048,
        512,
        "encoder + decoder",
    )
    return models


PAPER_MODELS: dict[str, PaperModel] = _paper_models()
