"""Hugging Face interoperability: `config` (ElectraConfig <-> ModelConfig), `names` (the tensor
name and layout table), `checkpoint` (reading a Hugging Face directory as a name-based
checkpoint). Writing one is `electra_tf.export.huggingface`; finding one is
`electra_tf.foreign_dirs.huggingface_dirs`. No torch: safetensors' numpy API only."""
