"""The vocabulary every layer shares: the search-space language, PARAMS, evaluations and Pareto dominance, the rule book."""
