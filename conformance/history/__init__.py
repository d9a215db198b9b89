"""The history phase: random histories against the target, each answer judged by the model."""
