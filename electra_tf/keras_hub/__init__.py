"""keras-hub interoperability: `config` (an ElectraBackbone preset's config.json and tokenizer
<-> this project's `ModelConfig`, and finding a preset), `names` (the weight name, h5 location and
layout table), `preset` (reading a preset's model.weights.h5 as a name-based checkpoint). Writing
one is `electra_tf.export.keras_hub`. Only h5py (which Keras itself needs): no keras-hub."""
