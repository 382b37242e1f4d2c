"""The base class of vjboost's estimators: parameters, fitted checks and a readable repr.

Every estimator stores its constructor arguments unchanged under their own names (validation
happens in ``fit``), so :meth:`Estimator.get_params` can read them back from the signature of
``__init__``, as scikit-learn does; ``self._store(locals())`` at the top of ``__init__`` does the
storing. Fitted attributes end in ``_``; :meth:`Estimator.check_fitted`
raises :class:`NotFittedError` (a ``ValueError``) naming the estimator and the call to make first.

This is a bottom module: it imports nothing of vjboost above :mod:`vjboost._errors`.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import numpy as np

from vjboost._errors import InputError

__all__ = ["Estimator", "NotFittedError"]


class NotFittedError(InputError):
    """An estimator was used before ``fit`` (or without the state the call needs)."""


class Estimator:
    """Base class: ``get_params``/``set_params`` from the constructor, fitted check, repr.

    Subclasses store every constructor argument as an attribute of the same name and set at
    least the attribute named by ``_fitted_attribute`` in ``fit``.

    Examples
    --------
    >>> class Scaler(Estimator):
    ...     def __init__(self, factor=1.0, *, offset=0.0):
    ...         self._store(locals())
    >>> s = Scaler(2.0)
    >>> s.get_params()
    {'factor': 2.0, 'offset': 0.0}
    >>> s.set_params(offset=1.5)
    Scaler(factor=2.0, offset=1.5)
    >>> s.check_fitted()
    Traceback (most recent call last):
    ...
    vjboost._estimator.NotFittedError: this Scaler is not fitted yet; call fit first
    """

    #: the attribute whose presence means "fitted"
    _fitted_attribute: ClassVar[str] = "estimators_"

    def _store(self, arguments: dict[str, Any]) -> None:
        """Store the constructor's arguments (its ``locals()``) as attributes of the same name."""
        for name in self._param_names():
            setattr(self, name, arguments[name])

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments, by name.

        Parameters
        ----------
        deep : bool, default=True
            Also list the parameters of nested estimators as ``name__param``.

        Returns
        -------
        dict
        """
        out: dict[str, Any] = {}
        for name in self._param_names():
            value = getattr(self, name)
            out[name] = value
            if deep and isinstance(value, Estimator):
                out.update({f"{name}__{k}": v for k, v in value.get_params().items()})
        return out

    def set_params(self, **params: Any) -> Estimator:
        """Set constructor arguments (``name__param`` reaches into a nested estimator).

        Returns
        -------
        self
        """
        valid = self._param_names()
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise InputError(f"{key}: not a parameter of {type(self).__name__} "
                                 f"(parameters: {', '.join(valid)})")
            if sub:
                inner = getattr(self, name)
                if not isinstance(inner, Estimator):
                    raise InputError(f"{key}: {name} is not an estimator")
                inner.set_params(**{sub: value})
            else:
                setattr(self, name, value)
        return self

    def is_fitted(self) -> bool:
        """Whether ``fit`` has run."""
        return hasattr(self, self._fitted_attribute)

    def check_fitted(self) -> None:
        """Raise :class:`NotFittedError` unless ``fit`` has run."""
        if not self.is_fitted():
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's description of the estimator, for its model selection tools.

        scikit-learn (1.6 and later) asks every estimator it clones, cross-validates or searches
        for its tags; scikit-learn is imported here only, when it asks, so vjboost does not
        depend on it. Subclasses that are classifiers say so (:class:`ClassifierMixin`).

        Returns
        -------
        sklearn.utils.Tags
        """
        from sklearn.utils import Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False))

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        parts = []
        for name in self._param_names():
            value = getattr(self, name, None)
            default = sig.parameters[name].default
            shown = default is inspect.Parameter.empty
            if not shown:
                try:
                    shown = bool(value != default)
                except (TypeError, ValueError):  # arrays and other non-scalar comparisons
                    shown = value is not default
            if shown:
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


class ClassifierMixin:
    """``score``: the accuracy of ``predict``, for estimators whose ``predict`` gives labels;
    scikit-learn's tools see a classifier (stratified folds, accuracy as the default score)."""

    #: how scikit-learn before 1.6 tells a classifier
    _estimator_type: ClassVar[str] = "classifier"

    def __sklearn_tags__(self) -> Any:
        """:meth:`Estimator.__sklearn_tags__`, as a classifier's (labels required).

        Returns
        -------
        sklearn.utils.Tags
        """
        from sklearn.utils import ClassifierTags

        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags()
        tags.target_tags.required = True
        return tags

    def score(self, X: Any, y: Any) -> float:
        """Accuracy: the fraction of examples whose predicted label equals ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Feature values, as ``predict`` takes them.
        y : array-like of shape (n_samples,)
            True labels.

        Returns
        -------
        float
            In [0, 1].
        """
        return float(np.mean(self.predict(X) == np.asarray(y)))
