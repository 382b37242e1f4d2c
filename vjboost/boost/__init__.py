"""vjboost.boost."""
