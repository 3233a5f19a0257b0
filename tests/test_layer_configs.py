"""Every Keras layer class of the package (found by walking its modules) round-trips through
`get_config` / `from_config`: the clone is of the same class and has the same, JSON-serialisable
config."""

import importlib
import inspect
import json
import pkgutil

import keras
import pytest

import electra_tf
from electra_tf.finetune.classification.head import ClassificationHead, RegressionHead
from electra_tf.finetune.model import FinetuningModel, TaskHeads
from electra_tf.finetune.qa.head import QAHead
from electra_tf.finetune.tagging.head import TaggingHead
from electra_tf.model_config import ModelConfig
from electra_tf.modeling.encoder import Embeddings, TransformerEncoder, TransformerLayer
from electra_tf.modeling.heads import DiscriminatorHead, MaskedLMHead, ValueBaselineHead
from electra_tf.modeling.layers import LayerNorm
from electra_tf.modeling.two_tower import TwoTowerClozeGenerator

CONFIG = ModelConfig(
    vocab_size=30,
    embedding_size=6,
    hidden_size=8,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=16,
    hidden_dropout_prob=0.05,
)
# one instance per class, with arguments other than the defaults where it has any
FACTORIES = {
    ClassificationHead: lambda: ClassificationHead("sst", 3, dropout_rate=0.2, pooling="mean"),
    RegressionHead: lambda: RegressionHead("sts", dropout_rate=0.3),
    QAHead: lambda: QAHead("squad", beam_size=4, joint_prediction=False, hidden_size=8),
    TaggingHead: lambda: TaggingHead("chunk", 5),
    Embeddings: lambda: Embeddings(CONFIG, name="embeddings"),
    TransformerLayer: lambda: TransformerLayer(CONFIG, name="layer_1"),
    TransformerEncoder: lambda: TransformerEncoder(CONFIG, causal="rtl", name="electra"),
    TwoTowerClozeGenerator: lambda: TwoTowerClozeGenerator(CONFIG),
    DiscriminatorHead: lambda: DiscriminatorHead(8, hidden_act="relu", initializer_range=0.1),
    MaskedLMHead: lambda: MaskedLMHead(
        Embeddings(CONFIG), hidden_act="relu", initializer_range=0.05, tied_output=False
    ),
    ValueBaselineHead: lambda: ValueBaselineHead(initializer_range=0.1),
    LayerNorm: lambda: LayerNorm(epsilon=1e-6, name="LayerNorm"),
    TaskHeads: lambda: TaskHeads(
        [ClassificationHead("sst", 2, name="sst"), TaggingHead("chunk", 4, name="chunk")]
    ),
    FinetuningModel: lambda: FinetuningModel(
        TransformerEncoder(CONFIG),
        [RegressionHead("sts", name="sts"), QAHead("squad", hidden_size=8, name="squad")],
    ),
}
# the pretrainer takes an objective object, special ids and count tables, and shares the
# embeddings between its networks: not serialisable by config yet
NOT_SERIALISABLE = {"electra_tf.modeling.pretrainer.ElectraPretrainer"}


def layer_classes() -> dict:
    """Qualified name -> class, for every public keras.layers.Layer subclass defined in electra_tf."""
    found = {}
    for info in pkgutil.walk_packages(electra_tf.__path__, "electra_tf."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, keras.layers.Layer)
                and obj.__module__ == info.name
                and not obj.__name__.startswith("_")  # a private base: covered by its subclasses
            ):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_every_layer_class_is_covered():
    classes = layer_classes()
    assert len(classes) >= 15
    covered = {f"{c.__module__}.{c.__qualname__}" for c in FACTORIES} | NOT_SERIALISABLE
    assert set(classes) == covered, set(classes) ^ covered


@pytest.mark.parametrize("cls", list(FACTORIES), ids=lambda c: c.__name__)
def test_layer_round_trips_through_its_config(cls):
    layer = FACTORIES[cls]()
    config = layer.get_config()
    assert json.loads(json.dumps(config)) == config  # plain JSON, as a saved model holds it
    clone = cls.from_config(config)
    assert type(clone) is cls
    assert clone.get_config() == config
    assert clone.name == layer.name


def test_the_round_trip_keeps_what_the_arguments_said():
    head = MaskedLMHead.from_config(FACTORIES[MaskedLMHead]().get_config())
    assert (head.hidden_act, head.initializer_range, head.tied_output) == ("relu", 0.05, False)
    assert head.embeddings.config == CONFIG
    model = FinetuningModel.from_config(FACTORIES[FinetuningModel]().get_config())
    assert model.model_config == CONFIG and model.task_names == ["sts", "squad"]
    assert isinstance(model.task_heads.heads[1], QAHead)
    assert model.task_heads.heads[1].hidden_size == 8


def test_shared_embeddings_of_another_shape_survive_the_round_trip():
    """A generator-sized encoder (or two-tower generator) reading the discriminator's wider
    embeddings: the clone builds embeddings of that width (and the projection), not its own."""
    wide = ModelConfig(**{**CONFIG.to_dict(), "embedding_size": 12})
    for cls in (TransformerEncoder, TwoTowerClozeGenerator):
        layer = cls(CONFIG, embeddings=Embeddings(wide, name="embeddings"))
        config = layer.get_config()
        assert json.loads(json.dumps(config)) == config
        clone = cls.from_config(config)
        assert clone.embeddings.config.embedding_size == 12 and clone.get_config() == config
        assert cls.from_config(FACTORIES[cls]().get_config()).embeddings.config.embedding_size == 6
    assert FACTORIES[TransformerEncoder]().get_config()["embeddings"] is None
