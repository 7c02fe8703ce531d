"""`tune --executor ray`: candidates evaluated by actors on a Ray cluster, how sources reach them, several
targets at once, the GPU share."""
