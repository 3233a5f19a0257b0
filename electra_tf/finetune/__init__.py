"""Fine-tuning: the config, the task registry, the multi-task model and the runner, and one
subpackage per kind of task (`classification/`, `tagging/`, `qa/`).

`config.FinetuningConfig` holds the hyperparameters, `registry.TASKS` the tasks,
`runner.run_finetuning(config)` trains, scores and writes `results/<task>.json`; `kept` writes and
reads back the fine-tuned models that `keep_all_models` keeps (for `electra_tf.export`).
"""
