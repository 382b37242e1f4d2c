"""One conformance suite over every estimator of the public API.

Each estimator must: take keyword-only arguments after the first, round-trip its parameters
(``get_params`` / ``set_params`` / a new instance from them), refuse to predict before ``fit``
with :class:`~vjboost._estimator.NotFittedError`, learn a problem a single threshold solves,
give the same model for the same ``random_state``, and expose its fitted state in attributes
that end with ``_``.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import vjboost
from vjboost._estimator import Estimator, NotFittedError
from vjboost.boost.streams import ArrayStream


def _data(seed: int = 0, n: int = 400, d: int = 6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    # two informative coordinates, a margin around the boundary: any booster must learn it
    s = X[:, 1] + 0.5 * X[:, 3]
    keep = np.abs(s) > 0.3
    return X[keep], (s[keep] > 0).astype(np.int64)


def _fit_matrix(est, X, y):
    return est.fit(X, y)


def _fit_stream(est, X, y):
    return est.fit(ArrayStream(X, y, seed=1))


#: name -> (factory(random_state), fit(est, X, y))
CASES = {
    "BoostedClassifier": (lambda rs: vjboost.BoostedClassifier(n_estimators=20, random_state=rs),
                          _fit_matrix),
    "BoostedClassifier-tree": (lambda rs: vjboost.BoostedClassifier(
        weak_learner="tree", max_depth=2, n_estimators=10, max_features=0.5, random_state=rs),
        _fit_matrix),
    "AdaBoostMH": (lambda rs: vjboost.AdaBoostMH(n_estimators=20, random_state=rs), _fit_matrix),
    "LogitBoostClassifier": (lambda rs: vjboost.LogitBoostClassifier(
        n_estimators=20, random_state=rs), _fit_matrix),
    "SampledBoostedClassifier": (lambda rs: vjboost.SampledBoostedClassifier(
        n_estimators=20, budget=3, random_state=rs), _fit_matrix),
    "ReservoirBooster": (lambda rs: vjboost.ReservoirBooster(
        20, reservoir_size=40, n_fresh=25, random_state=rs), _fit_stream),
    "SubsampleBooster": (lambda rs: vjboost.SubsampleBooster(
        "wss", n_estimators=20, sample_size=60, random_state=rs), _fit_matrix),
}


def test_every_public_estimator_is_covered():
    # samplers are estimators too; their own suite is parametrised over SAMPLERS
    # (tests/test_sampling.py)
    public = {name for name in vjboost.__all__
              if inspect.isclass(getattr(vjboost, name))
              and issubclass(getattr(vjboost, name), Estimator)
              and not issubclass(getattr(vjboost, name), vjboost.Sampler)}
    covered = {name.split("-")[0] for name in CASES} | {"OnlineCoordinateBoost"}
    assert public <= covered, sorted(public - covered)


@pytest.mark.parametrize("name", sorted({*CASES, "OnlineCoordinateBoost"}))
def test_keyword_only_after_the_first_argument(name):
    cls = getattr(vjboost, name.split("-")[0])
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert len(positional) <= 1, positional


@pytest.mark.parametrize("name", sorted({*CASES, "OnlineCoordinateBoost"}))
def test_params_round_trip(name):
    if name == "OnlineCoordinateBoost":
        est = vjboost.OnlineCoordinateBoost(n_hypotheses=4, order=1, smoothing=0.3)
    else:
        est = CASES[name][0](3)
    params = est.get_params()
    assert set(params) == set(inspect.signature(type(est).__init__).parameters) - {"self"}
    again = type(est)(**params)
    assert again.get_params() == params
    key = "random_state" if "random_state" in params else "smoothing"
    assert est.set_params(**{key: 7 if key == "random_state" else 0.25}) is est
    assert est.get_params()[key] == (7 if key == "random_state" else 0.25)
    with pytest.raises(ValueError, match="not_a_parameter"):
        est.set_params(not_a_parameter=1)


@pytest.mark.parametrize("name", sorted(CASES))
def test_not_fitted_is_refused(name):
    X, _ = _data()
    with pytest.raises(NotFittedError, match="fit"):
        CASES[name][0](0).decision_function(X)


@pytest.mark.parametrize("name", sorted(CASES))
def test_learns_deterministically(name):
    factory, fit = CASES[name]
    X, y = _data(0)
    Xt, yt = _data(1)
    a = fit(factory(5), X, y)
    b = fit(factory(5), X, y)
    fa, fb = a.decision_function(Xt), b.decision_function(Xt)
    np.testing.assert_array_equal(fa, fb)
    score = np.asarray(fa, dtype=float)
    if score.ndim == 2:  # one column per class
        score = score[:, 1] - score[:, 0]
    accuracy = float(np.mean((score > 0) == (yt == 1)))
    assert accuracy >= 0.85, accuracy
    fitted = [k for k in vars(a) if k.endswith("_") and not k.startswith("_")]
    assert fitted, "no fitted attribute ending with '_'"
    assert a.is_fitted()
