"""The runtime: the monitor and its private parts, earlier traces, the XLA watch and prevention."""
