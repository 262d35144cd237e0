"""The records tfretrace keeps and reads back: trace and XLA events, sessions, keys, the cause catalogue, errors."""
