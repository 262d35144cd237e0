"""Adapters to other tools: IPython, TensorBoard and the pytest plugin's parts."""
