"""vjboost.cascade."""
