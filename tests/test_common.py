"""Validation, atomic writes and memory budgets shared by all modules."""

from __future__ import annotations

import numpy as np
import pytest

from vjboost._io import atomic_open, atomic_write
from vjboost._memory import MemoryBudgetError, check_memory
from vjboost._validation import (
    check_array,
    check_binary_labels,
    check_in_range,
    check_random_state,
    check_sample_weight,
)


def test_check_array_errors_name_argument():
    with pytest.raises(ValueError, match="X: contains 1 NaN"):
        check_array([[1.0, np.nan]], "X", ndim=2)
    with pytest.raises(ValueError, match="X: expected a 2-D array"):
        check_array([1.0, 2.0], "X", ndim=2)
    with pytest.raises(ValueError, match="X: empty array"):
        check_array(np.zeros((0, 3)), "X", ndim=2)
    with pytest.raises(TypeError, match="X: expected a numeric array"):
        check_array(["a", "b"], "X")


def test_binary_labels():
    y_pm, classes = check_binary_labels(np.array([3, 5, 5, 3]))
    np.testing.assert_array_equal(y_pm, [-1, 1, 1, -1])
    np.testing.assert_array_equal(classes, [3, 5])
    with pytest.raises(ValueError, match="only one class"):
        check_binary_labels([1, 1, 1])
    with pytest.raises(ValueError, match="expected two classes"):
        check_binary_labels([0, 1, 2])


def test_sample_weight():
    np.testing.assert_allclose(check_sample_weight(None, 4), 0.25)
    np.testing.assert_allclose(check_sample_weight([1, 3], 2), [0.25, 0.75])
    with pytest.raises(ValueError, match="negative"):
        check_sample_weight([1, -1], 2)
    with pytest.raises(ValueError, match="all weights are zero"):
        check_sample_weight([0, 0], 2)
    with pytest.raises(ValueError, match="has 3 entries"):
        check_sample_weight([1, 1, 1], 2)


def test_in_range_and_seed():
    assert check_in_range(3, "n", low=1, integer=True) == 3
    with pytest.raises(ValueError, match=r"n: must be in the range \[1, inf\)"):
        check_in_range(0, "n", low=1, integer=True)
    with pytest.raises(TypeError, match="n: expected an integer"):
        check_in_range(1.5, "n", low=1, integer=True)
    a = check_random_state(7).integers(1 << 30, size=4)
    b = check_random_state(7).integers(1 << 30, size=4)
    np.testing.assert_array_equal(a, b)


def test_atomic_write_keeps_old_file_on_error(tmp_path):
    target = tmp_path / "sub" / "model.bin"
    atomic_write(target, b"old")
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write(b"partial")
        raise RuntimeError("crash mid-write")
    assert target.read_bytes() == b"old"
    assert [p.name for p in target.parent.iterdir()] == ["model.bin"]


def test_atomic_write_gives_the_permissions_of_a_plain_open(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "model.json", "{}")
        (tmp_path / "plain.json").write_text("{}")
    finally:
        os.umask(old)
    mode = stat.S_IMODE((tmp_path / "model.json").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "plain.json").stat().st_mode) == 0o644


def test_memory_budget_message():
    with pytest.raises(MemoryBudgetError, match=r"feature matrix needs 2\.0 KiB.*use fewer"):
        check_memory(2048, "feature matrix", budget=1024, advice="use fewer features")
    check_memory(10, "small", budget=1024)
