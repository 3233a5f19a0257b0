"""Fine-tuning: tasks (readers, featurisation, heads, scorers), the multi-task model and runner.

`config.FinetuningConfig` holds the hyperparameters, `tasks.TASKS` the task registry,
`runner.run_finetuning(config)` trains, scores and writes `results/<task>.json`.
"""
