"""vjboost.cli."""
