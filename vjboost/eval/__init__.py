"""vjboost.eval."""
