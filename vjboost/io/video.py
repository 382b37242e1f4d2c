"""Video and camera frames, read in one place (OpenCV's ``VideoCapture``) with clear errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._errors import InputError

__all__ = ["VideoFrames", "VideoReadError", "iter_frames"]


class VideoReadError(InputError):
    """A video file or camera cannot be opened or yields no frame."""


class VideoFrames:
    """The frames of a video file or a camera, as a context manager.

    Parameters
    ----------
    target : str or int
        A video file or a camera index.
    every : int, default=1
        Yield frames ``0, every, 2·every...`` (indices count every frame read).
    max_frames : int, optional
        Stop after reading this many frames (also those skipped by ``every``).
    gray : bool, default=False
        Yield (H, W) uint8 gray frames instead of OpenCV's (H, W, 3) BGR.

    Attributes
    ----------
    n_frames : int
        Frame count the container announces (0 when unknown, e.g. cameras), capped by
        ``max_frames``.
    fps : float
        Frames per second (25 when unknown).
    n_read : int
        Frames read so far.
    cut_short : bool
        After iterating: the video ended before the frames its container announces (a file cut
        short or damaged part-way; what could be read was yielded).

    Raises
    ------
    VideoReadError
        On entering, when the source cannot be opened; after iterating, when it yielded no
        frame at all.

    Examples
    --------
    >>> import tempfile, cv2, numpy as np
    >>> p = tempfile.mkdtemp() + "/clip.avi"
    >>> out = cv2.VideoWriter(p, cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (32, 24))
    >>> for k in range(5):
    ...     out.write(np.full((24, 32, 3), 40 * k, np.uint8))
    >>> out.release()
    >>> with VideoFrames(p, every=2, gray=True) as frames:
    ...     got = [(k, f.shape) for k, f in frames]
    >>> got
    [(0, (24, 32)), (2, (24, 32)), (4, (24, 32))]
    >>> frames.n_frames, frames.fps, frames.n_read, frames.cut_short
    (5, 10.0, 5, False)
    """

    def __init__(self, target: str | int, *, every: int = 1, max_frames: int | None = None,
                 gray: bool = False) -> None:
        if every < 1:
            raise ValueError(f"every: expected an integer >= 1, got {every}")
        self.target = target
        self.every = int(every)
        self.max_frames = max_frames
        self.gray = gray
        self.what = "camera" if isinstance(target, int) else "video"
        self.label = f"camera {target}" if isinstance(target, int) else str(target)
        self.n_frames = 0
        self.fps = 25.0
        self.n_read = 0
        self.cut_short = False
        self._cap: Any = None

    def __enter__(self) -> VideoFrames:
        import cv2

        try:
            cap = cv2.VideoCapture(self.target)
        except (cv2.error, OverflowError, SystemError) as exc:
            raise VideoReadError(f"{self.label}: cannot open the {self.what} ({exc})") from None
        if not cap.isOpened():
            cap.release()
            why = "no such camera" if self.what == "camera" else "unreadable or unsupported codec"
            raise VideoReadError(f"{self.label}: cannot open the {self.what} ({why})")
        self._cap = cap
        n = int(cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0) if self.what == "video" else 0
        n = max(n, 0)
        if self.max_frames:
            n = min(n, self.max_frames) if n > 0 else self.max_frames
        self.n_frames = n
        self.fps = float(cap.get(cv2.CAP_PROP_FPS) or 0.0) or 25.0
        return self

    @property
    def cut_short_note(self) -> str | None:
        """After iterating, what a tool says of a video :attr:`cut_short` (None if it was not):
        ``"clip.avi: 3 of the 228 frames it announces could be read (cut short or damaged)"``."""
        if not self.cut_short:
            return None
        return (f"{self.label}: {self.n_read} of the {self.n_frames} frames it announces could "
                "be read (cut short or damaged)")

    def __exit__(self, *exc: object) -> None:
        if self._cap is not None:
            self._cap.release()
            self._cap = None

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        import cv2

        if self._cap is None:
            raise RuntimeError("VideoFrames: iterate inside its 'with' block")
        while self.max_frames is None or self.n_read < self.max_frames:
            ok, frame = self._cap.read()
            if not ok or frame is None:
                self.cut_short = self.n_read < self.n_frames
                break
            k = self.n_read
            self.n_read += 1
            if k % self.every == 0:
                if self.gray and frame.ndim == 3:
                    frame = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
                yield k, frame
        if self.n_read == 0:
            raise VideoReadError(f"{self.label}: no frame could be read from the {self.what}")


def iter_frames(target: str | int, *, every: int = 1, max_frames: int | None = None,
                gray: bool = False) -> Iterator[tuple[int, np.ndarray]]:
    """``(index, frame)`` of a video or camera (see :class:`VideoFrames` for the arguments).

    Parameters
    ----------
    target : str or int
        A video file or a camera index.
    every : int, default 1
        Yield frames ``0, every, 2·every...`` (indices count every frame read).
    max_frames : int, optional
        Stop after reading this many frames (also those skipped by ``every``).
    gray : bool, default False
        Yield (H, W) uint8 gray frames instead of OpenCV's (H, W, 3) BGR.

    Yields
    ------
    index : int
        The frame's index in the source.
    frame : ndarray of uint8, shape (H, W) or (H, W, 3)

    Raises
    ------
    VideoReadError
        When the source cannot be opened or yields no frame at all.

    Examples
    --------
    >>> import tempfile, cv2, numpy as np
    >>> p = tempfile.mkdtemp() + "/clip.avi"
    >>> out = cv2.VideoWriter(p, cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (32, 24))
    >>> for k in range(5):
    ...     out.write(np.full((24, 32, 3), 40 * k, np.uint8))
    >>> out.release()
    >>> [(k, f.shape) for k, f in iter_frames(p, max_frames=3)]
    [(0, (24, 32, 3)), (1, (24, 32, 3)), (2, (24, 32, 3))]
    >>> list(iter_frames(tempfile.mkdtemp() + "/none.avi"))
    Traceback (most recent call last):
    ...
    vjboost.io.video.VideoReadError: .../none.avi: cannot open the video (unreadable or ...)
    """
    with VideoFrames(target, every=every, max_frames=max_frames, gray=gray) as frames:
        yield from frames
