"""Plan assembly above the kinds: each function's ordered, classified steps and the notes a plan adds."""
