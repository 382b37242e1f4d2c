"""Names for ready-made cascades: the ones vjboost ships and OpenCV's own.

``vjboost:NAME`` is ``NAME.json`` (or ``.xml``) of the package's ``models`` folder
(``vjboost/models/``, package data: a wheel has it), ``opencv:NAME`` a cascade of
``cv2.data.haarcascades`` (OpenCV builds without cascades in that folder, such as OpenCV 5's
wheels, get a one-line error); anything else is a file path. Names are resolved here only:
:func:`vjboost.cascade.model_io.load_model` accepts them, and so do ``vjdetect``, ``vjeval`` and
``vjadapt``. The default detector model is ``vjboost:frontalface`` (trained by ``vjtrain`` on
public data, see ``vjboost/models/README.md``); OpenCV's ``haarcascade_frontalface_default``
only stands in when the models folder is missing (a broken install).
"""

from __future__ import annotations

import os
from pathlib import Path

import cv2

from .opencv_xml import CascadeFormatError

__all__ = ["DEFAULT_MODEL", "MODELS_DIR", "ModelNotFound", "default_model", "resolve_model"]

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
DEFAULT_MODEL = "vjboost:frontalface"
_OPENCV_FALLBACK = "opencv:haarcascade_frontalface_default"


class ModelNotFound(CascadeFormatError):
    """A ``vjboost:``/``opencv:`` name that this installation does not have."""


def _opencv_dir() -> Path | None:
    base = getattr(getattr(cv2, "data", None), "haarcascades", None)
    # OpenCV 5's wheels keep cv2.data.haarcascades but ship the folder without cascades: such a
    # build has none to name, as one without the attribute
    if not base or not any(Path(base).glob("*.xml")):
        return None
    return Path(base)


def resolve_model(spec: str | os.PathLike[str]) -> str:
    """The file behind a model name.

    Parameters
    ----------
    spec : str or path-like
        ``vjboost:NAME``, ``opencv:NAME`` (``.xml`` optional) or a path (returned unchanged).

    Returns
    -------
    str
        A path for :func:`vjboost.cascade.model_io.load_model`.

    Raises
    ------
    ModelNotFound
        The name is not shipped here; the message lists what is.

    Examples
    --------
    >>> import pathlib
    >>> pathlib.Path(resolve_model("vjboost:frontalface_haar")).name
    'frontalface_haar.json'
    >>> resolve_model("models/my_cascade.xml")      # a path is returned unchanged
    'models/my_cascade.xml'
    >>> resolve_model("vjboost:no_such_model")
    Traceback (most recent call last):
    ...
    vjboost.cascade.shipped.ModelNotFound: vjboost:no_such_model: no such shipped model in ...
    """
    spec = os.fspath(spec)
    if spec.startswith("vjboost:"):
        name = spec.split(":", 1)[1]
        for suffix in ("", ".json", ".xml"):
            p = MODELS_DIR / (name + suffix)
            if p.is_file():
                return str(p)
        # a model's training report (NAME.report.json) lies beside it and is not a model
        have = sorted({p.stem for p in MODELS_DIR.glob("*.json")
                       if not p.name.endswith(".report.json")} | {
            p.stem for p in MODELS_DIR.glob("*.xml")}) if MODELS_DIR.is_dir() else []
        raise ModelNotFound(f"{spec}: no such shipped model in {MODELS_DIR} (have: "
                            f"{', '.join('vjboost:' + h for h in have) or 'none'})")
    if spec.startswith("opencv:"):
        name = spec.split(":", 1)[1]
        name = name if name.endswith(".xml") else name + ".xml"
        base = _opencv_dir()
        if base is None:
            raise ModelNotFound(f"{spec}: this OpenCV build (cv2 {cv2.__version__}) ships no "
                                "cascades (no cv2.data.haarcascades, or an empty one); give the "
                                "cascade's file path instead")
        if not (base / name).is_file():
            have = sorted(p.stem for p in base.glob("*.xml"))
            raise ModelNotFound(f"{spec}: this OpenCV build ships no {name} (have: "
                                f"{', '.join('opencv:' + h for h in have)})")
        return str(base / name)
    return spec


def default_model() -> str | None:
    """Path of the default face model: vjboost's own, else OpenCV's; None when neither exists."""
    for spec in (DEFAULT_MODEL, _OPENCV_FALLBACK):
        try:
            return resolve_model(spec)
        except ModelNotFound:
            continue
    return None
