"""Training: the compute on offer, plans checked before launch, jobs, and Trained models."""
