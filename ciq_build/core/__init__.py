"""The vocabulary every layer shares: the search-space language, PARAMS, failure causes and Pareto dominance, the rule book."""
