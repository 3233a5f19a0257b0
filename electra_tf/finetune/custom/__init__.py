"""Custom tasks: any `DATA_DIR/finetuning_data/NAME/task.json` (`spec.py`) is a task named NAME,
built on the classification / regression / tagging kinds (`task.py`); the registry looks for it
when NAME is not built in."""
