"""Datasets: users' training data, uploaded, checked row by row and stored normalised."""
