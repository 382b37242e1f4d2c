"""vjboost.features."""
