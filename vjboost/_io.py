"""File access in one place: capped reads that fail with a one-line message naming the file,
strict JSON, atomic writes (a crash or a full disk never leaves a half-written or empty file
behind, and the previous version stays intact), output paths checked before any work, and output
folders that belong to one run at a time (:class:`OutputFolder`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import socket
import stat
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from ._errors import InputError, OutputError
from ._limits import Limits, get_limits, limit_error

__all__ = [
    "LOCK_NAME",
    "OutputFolder",
    "atomic_open",
    "atomic_path",
    "atomic_write",
    "check_output_path",
    "check_folder_apart",
    "check_outputs_apart",
    "check_regular",
    "output_error",
    "parse_json",
    "read_bytes",
    "read_json",
    "read_npy",
    "read_npz",
    "remove_stale_temps",
    "save_png",
]

#: name of the lock file an :class:`OutputFolder` holds
LOCK_NAME = ".vjboost.lock"
# temporary files of atomic_open: ".<name>.<8 random characters>.tmp" (tempfile's alphabet)
_TEMP = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp(\.[A-Za-z0-9]{1,8})?$")
# disk-level write failures: the message says what to do about them
_WRITE_ERRNOS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
                 errno.EROFS: "the file system is read-only", errno.EFBIG: "file too large",
                 errno.EACCES: "permission denied", errno.EPERM: "permission denied",
                 errno.EISDIR: "it is a folder", errno.EIO: "input/output error"}
# those a write to an open file can meet (other errors of a body are not about the file)
_BODY_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EIO}


# ------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------


def check_regular(path: str | os.PathLike[str], *, what: str,
                  error: type[Exception]) -> None:
    """Refuse an input that exists but is neither a regular file nor a folder: reading a named
    FIFO, a socket or a terminal blocks until another process writes to it (for ever if none
    does), and a device such as ``/dev/zero`` never ends. A missing file or a folder passes
    (the reader says what is wrong with them), and so does an anonymous pipe, which was made
    with its writer (``cat m.json | vjdetect x.png --model /dev/stdin``, a shell's ``<(...)``).

    Parameters
    ----------
    path : path-like
    what : str
        What the file should be, for messages (``"model file"``).
    error : exception class
        Raised with a one-line message naming the file.

    Examples
    --------
    >>> import tempfile
    >>> fifo = tempfile.mkdtemp() + "/model.json"
    >>> os.mkfifo(fifo)
    >>> check_regular(fifo, what="model file", error=InputError)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vjboost._errors.InputError: .../model.json: is a FIFO, not a regular file; it cannot be read \
as the model file
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return
    mode = st.st_mode
    if stat.S_ISFIFO(mode) and not os.path.lexists(os.path.realpath(path)):
        return  # /dev/stdin, /dev/fd/N: links to "pipe:[...]", which no folder holds
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device")
        raise error(f"{path}: is {kind}, not a regular file; it cannot be read as the {what}")


def read_bytes(path: str | os.PathLike[str], *, what: str, error: type[Exception],
               max_bytes: int | None = None, limit_field: str = "max_model_bytes",
               option: str | None = None) -> bytes:
    """The content of a file, or ``error`` with a one-line message that names it.

    Parameters
    ----------
    path : path-like
    what : str
        What the file should be, for messages (``"model file"``).
    error : exception class
        Raised (with the message) when the file is missing, a folder, not a regular file
        (:func:`check_regular`: a FIFO would block) or unreadable.
    max_bytes : int, optional
        Read at most this many bytes (a larger file, or an endless one such as ``/dev/zero``,
        raises :class:`~vjboost._errors.LimitError`). Default: the ``limit_field`` cap of
        :func:`~vjboost._limits.get_limits`.
    limit_field : str, default="max_model_bytes"
        The :class:`~vjboost._limits.Limits` cap that applies (named in the message).
    option : str, optional
        A command-line option that raises the cap, for the message.

    Returns
    -------
    bytes

    Examples
    --------
    >>> read_bytes("/no/such/model.json", what="model file", error=ValueError)
    Traceback (most recent call last):
    ...
    ValueError: /no/such/model.json: no such file
    """
    cap = getattr(get_limits(), limit_field) if max_bytes is None else int(max_bytes)
    check_regular(path, what=what, error=error)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > cap:  # known from the file system: refuse before reading anything
                data = b""
            else:
                data = fh.read(cap + 1)
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if size > cap or len(data) > cap:
        value = f"{size}" if size > cap else f"more than {cap}"
        raise limit_error(f"{path}", f"{what} of {value}", cap, limit_field, unit=" bytes",
                          option=option)
    return data


#: every byte but the quote and the brackets, deleted before the nesting is measured
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'"[]{}')))
#: quote -> 0, ``[``/``{`` -> 1, ``]``/``}`` -> 255 (-1 as int8)
_STEP = bytes.maketrans(b'"[{]}', bytes([0, 1, 1, 255, 255]))
#: bytes of text measured at a time by :func:`_json_depth` (its temporaries are about this)
_DEPTH_CHUNK = 8 << 20


def _unescape_quotes(text: bytes) -> bytes:
    """``text`` with every escaped quote (after an odd run of backslashes) blanked."""
    arr = np.frombuffer(text, dtype=np.uint8)
    slashes = np.flatnonzero(arr == 92)
    first = np.ones(slashes.size, dtype=bool)  # first backslash of each run
    first[1:] = np.diff(slashes) != 1
    run_start = slashes[first]
    run_len = np.diff(np.append(np.flatnonzero(first), slashes.size))
    after = (run_start + run_len)[run_len % 2 == 1]  # the byte an odd run escapes
    after = after[after < arr.size]
    quotes = after[arr[after] == 34]
    if not quotes.size:
        return text
    arr = arr.copy()
    arr[quotes] = 32
    return arr.tobytes()


def _json_depth(data: bytes) -> int:
    """Deepest nesting of ``[``/``{`` outside strings, in one pass before any parsing (memory:
    a few times :data:`_DEPTH_CHUNK` bytes, whatever the size of the text).

    Escaped quotes are blanked; the quotes left delimit the strings. Text that is not JSON may
    be measured differently from how a parser would read it, and is refused by the parser.

    Examples
    --------
    >>> _json_depth(b'{"a": [[1], "[[[", "\\\\"], "b": {"c\\"[": []}}')
    3
    """
    deepest = level = 0
    inside = 0  # 1: the chunk starts inside a string
    start = 0
    while start < len(data):
        stop = min(start + _DEPTH_CHUNK, len(data))
        while stop < len(data) and data[stop - 1] == 92:  # keep runs of backslashes whole
            stop += 1
        text = data[start:stop]
        start = stop
        if b"\\" in text:
            text = _unescape_quotes(text)
        marks = text.translate(None, _NOT_STRUCTURE)
        if not marks:
            continue
        quote = np.frombuffer(marks, dtype=np.uint8) == 34
        # inside a string after an odd number of quotes, counting the chunk's start state
        strings = np.bitwise_xor.accumulate(quote.view(np.uint8)) ^ inside
        steps = np.frombuffer(marks.translate(_STEP), dtype=np.int8)[(strings | quote) == 0]
        inside = int(strings[-1])
        if steps.size:
            path = level + np.cumsum(steps, dtype=np.int64)
            deepest = max(deepest, int(path.max()))
            level = int(path[-1])
    return deepest


def _json_constant(name: str) -> Any:
    raise InputError(f"{name} is not a number (JSON has no NaN or Infinity)")


def _json_int(text: str) -> int:
    if len(text) > 40:  # no vjboost field holds more than 64 bits
        raise InputError(f"an integer of {len(text.lstrip('-'))} digits")
    return int(text)


def _json_float(text: str) -> float:
    v = float(text)
    if v in (float("inf"), float("-inf")):
        raise InputError(f"{text[:30]} overflows a float")
    return v


def parse_json(data: bytes | str, name: str, *, error: type[Exception] = InputError,
               limits: Limits | None = None, what: str = "JSON file") -> Any:
    """Strict JSON: no NaN/Infinity, no integer of more than 40 digits, no float overflowing to
    infinity, nesting at most ``max_json_depth`` deep (checked before parsing).

    Parameters
    ----------
    data : bytes or str
        UTF-8 JSON text.
    name : str
        Named in messages (the file).
    error : exception class
        Raised with a one-line message naming ``name`` for malformed content.
    limits : Limits, optional
    what : str
        What the document is, for messages.

    Raises
    ------
    LimitError
        Nesting deeper than ``max_json_depth``.

    Examples
    --------
    >>> parse_json(b'{"a": [1, 2.5]}', "x.json")
    {'a': [1, 2.5]}
    >>> parse_json(b'[NaN]', "x.json")
    Traceback (most recent call last):
    ...
    vjboost._errors.InputError: x.json: NaN is not a number (JSON has no NaN or Infinity)
    """
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    lim = get_limits(limits)
    depth = _json_depth(raw)
    if depth > lim.max_json_depth:
        raise limit_error(name, f"{what} nested {depth} deep, which", lim.max_json_depth,
                          "max_json_depth")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_json_constant, parse_int=_json_int,
                          parse_float=_json_float)
    except json.JSONDecodeError as exc:
        raise error(f"{name}: malformed or truncated JSON ({exc})") from None
    except InputError as exc:
        raise error(f"{name}: {exc}") from None
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise error(f"{name}: nested too deeply") from None


def read_json(path: str | os.PathLike[str], *, what: str, error: type[Exception],
              limits: Limits | None = None) -> Any:
    """:func:`read_bytes` (capped by ``max_model_bytes``) then :func:`parse_json`."""
    lim = get_limits(limits)
    data = read_bytes(path, what=what, error=error, max_bytes=lim.max_model_bytes)
    return parse_json(data, str(path), error=error, limits=lim, what=what)


def read_npz(path: str | os.PathLike[str], keys: list[str] | None = None, *,
             what: str = "array file") -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` file, without pickles, checked against the memory budget
    before they are loaded.

    Parameters
    ----------
    path : path-like
    keys : list of str, optional
        Arrays to load (default: all); a missing one is an error naming the file's arrays.
    what : str
        What the file should be, for messages.

    Returns
    -------
    dict of str to ndarray

    Raises
    ------
    InputError
        Missing, unreadable or damaged file, not a regular file (a FIFO, device or socket),
        not an ``.npz`` (zip) file, an object (pickled)
        array, a missing key; the message names the file.
    MemoryBudgetError
        The arrays' declared size is over the memory budget.

    Examples
    --------
    >>> import tempfile
    >>> p = tempfile.mkdtemp() + "/a.npz"
    >>> np.savez(p, images=np.zeros((2, 3, 3), np.uint8))
    >>> read_npz(p, ["images"])["images"].shape
    (2, 3, 3)
    """
    from ._memory import check_memory

    name = str(path)
    check_regular(path, what=what, error=InputError)
    try:
        with zipfile.ZipFile(path) as zf:
            members = {m[:-4] if m.endswith(".npy") else m: m for m in zf.namelist()}
            wanted = list(members) if keys is None else list(keys)
            missing = [k for k in wanted if k not in members]
            if missing:
                raise InputError(f"{name}: no array {missing[0]!r} in this {what} (it has "
                                 f"{sorted(members)})")
            nbytes = 0
            for k in wanted:
                with zf.open(members[k]) as fh:
                    nbytes += _npy_nbytes(fh, f"{name}: array {k!r}")
            check_memory(nbytes, f"{name}: arrays {wanted}")
            out = {}
            for k in wanted:
                with zf.open(members[k]) as fh:
                    out[k] = np.lib.format.read_array(fh, allow_pickle=False)
            return out
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a folder, not an {what}") from None
    except zipfile.BadZipFile:
        raise InputError(f"{name}: not an .npz {what} (not a zip archive)") from None
    except InputError:
        raise
    except (OSError, ValueError, EOFError, zlib.error, zipfile.LargeZipFile,
            NotImplementedError, RuntimeError) as exc:
        raise InputError(f"{name}: damaged or unreadable {what} ({_why(exc)})") from None


def read_npy(path: str | os.PathLike[str], *, what: str = "array file") -> np.ndarray:
    """The array of an ``.npy`` file, without pickles, checked against the memory budget
    before it is loaded.

    Parameters
    ----------
    path : path-like
    what : str
        What the file should be, for messages.

    Returns
    -------
    ndarray

    Raises
    ------
    InputError
        Missing, empty, truncated or damaged file, not a regular file (a FIFO, device or
        socket), not an ``.npy`` file, an object (pickled) array; the message names the file.
    MemoryBudgetError
        The array's declared size is over the memory budget.

    Examples
    --------
    >>> import tempfile
    >>> p = tempfile.mkdtemp() + "/a.npy"
    >>> np.save(p, np.zeros((2, 3), np.uint8))
    >>> read_npy(p).shape
    (2, 3)
    """
    from ._memory import check_memory

    name = str(path)
    check_regular(path, what=what, error=InputError)
    try:
        with open(path, "rb") as fh:
            check_memory(_npy_nbytes(fh, f"{name}: the array"), f"{name}: the array")
            fh.seek(0)
            return np.lib.format.read_array(fh, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a folder, not an .npy {what}") from None
    except InputError:
        raise
    except (OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise InputError(f"{name}: damaged or unreadable {what} ({_why(exc)})") from None


def _npy_nbytes(fh: IO[bytes], label: str) -> int:
    """The data size an ``.npy`` header declares (``fh`` is left after the header); refuses
    object arrays, which only a pickle could load."""
    version = np.lib.format.read_magic(fh)
    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                   else np.lib.format.read_array_header_2_0)
    shape, _, dtype = read_header(fh)
    if dtype.hasobject:
        raise InputError(f"{label} holds Python objects (a pickle); only plain numeric arrays "
                         "are read")
    return int(np.prod(shape, dtype=object)) * dtype.itemsize


def _why(exc: BaseException) -> str:
    """The reason of a read error in a few words (an OSError's text without its path)."""
    return (getattr(exc, "strerror", None) or (str(exc).splitlines() or [""])[0]
            or type(exc).__name__)


# ------------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------------


def output_error(path: str | os.PathLike[str], exc: OSError) -> OutputError:
    """The one-line :class:`OutputError` of a failed write to ``path``.

    Examples
    --------
    >>> str(output_error("out/model.json", OSError(errno.ENOSPC, "No space left on device")))
    'out/model.json: cannot be written: the disk is full (No space left on device)'
    """
    if isinstance(exc, OutputError):
        return exc
    why = _WRITE_ERRNOS.get(exc.errno or 0)
    detail = exc.strerror or str(exc) or type(exc).__name__
    reason = f"{why} ({detail})" if why else detail
    return OutputError(f"{path}: cannot be written: {reason}")


def _std_stream(st: os.stat_result) -> int | None:
    """The descriptor (1 or 2) of this process's standard output or error if ``st`` is its
    file, else None."""
    for fd in (1, 2):
        try:
            own = os.fstat(fd)
        except OSError:
            continue
        if (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino):
            return fd
    return None


def _own_stream(path: str | os.PathLike[str]) -> int | None:
    """:func:`_std_stream` of what ``path`` names (``/dev/stdout``, a link to it, the file
    stdout is redirected to), None when it names nothing or something else."""
    try:
        return _std_stream(os.stat(path))
    except (OSError, ValueError):
        return None


def _destination(path: Path) -> tuple[Path, bool]:
    """Where a write to ``path`` goes, and whether it goes straight into the file.

    A rename would replace what ``path`` names, so it is only used for regular files (and new
    ones). A device, FIFO or socket (``/dev/null``, a pipe a reader waits on, ``/dev/stdout``
    when it is a pipe or terminal) is written in place, as is the tool's own standard output or
    error when it is a regular file (``--json /dev/stdout > log``: renaming over the log would
    cut it off from the shell's descriptor). A symlink is followed: the file it resolves to is
    written atomically and the link stays a link.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:  # a symlink loop, a component that is not a folder...
        raise output_error(path, exc) from None
    if st is not None and not stat.S_ISDIR(st.st_mode) and (
            not stat.S_ISREG(st.st_mode) or _std_stream(st) is not None):
        return path, True
    if path.is_symlink():  # also a dangling one: its target is created
        return Path(os.path.realpath(path)), False
    return path, False


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, suffix: str | None = None) -> Iterator[Path]:
    """A temporary file name beside ``path``, renamed over ``path`` only on success: the one
    mechanism of every write (:func:`atomic_open` opens the file on it), also for writers that
    take a file name, such as OpenCV's ``VideoWriter``, which picks the container by the name's
    ending.

    A symlink stays a link: the file it resolves to is replaced. A device, FIFO or socket, which
    a rename would destroy, is written in place (``path`` itself is yielded), and so is the
    process's own standard output or error (``/dev/stdout`` redirected to a file).

    Parameters
    ----------
    path : path-like
        Final destination. Its folder is created if missing.
    suffix : str, optional
        Ending of the temporary name after ``.tmp`` (default: ``path``'s own).

    Yields
    ------
    Path
        Where to write. The writer must have closed it when the block ends.

    Raises
    ------
    OutputError
        The temporary file cannot be made or renamed, or the block fails writing (full disk,
        read-only file system...): one line naming the path and the reason. Other exceptions
        of the block pass unchanged; the temporary file is removed in every case.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> with atomic_path(d / "clip.avi") as tmp:
    ...     _ = tmp.write_bytes(b"frames")
    ...     (tmp.suffix, tmp.exists(), (d / "clip.avi").exists())
    ('.avi', True, False)
    >>> (d / "clip.avi").read_bytes(), sorted(p.name for p in d.iterdir())
    (b'frames', ['clip.avi'])
    """
    name = Path(path)  # named in messages: what the user gave
    if name.is_dir():
        raise OutputError(f"{name}: is a folder; cannot write a file there")
    path, direct = _destination(name)
    if direct:
        try:
            yield path
        except OSError as exc:
            if isinstance(exc, OutputError) or exc.errno not in _BODY_ERRNOS:
                raise
            raise output_error(name, exc) from None
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.",
                                   suffix=".tmp" + (path.suffix if suffix is None else suffix),
                                   dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise output_error(name, exc) from None
    ours = False  # exceptions of the body that are not write failures pass unchanged
    try:
        yield Path(tmp)
        ours = True
        # mkstemp creates the file readable by its owner only; give it the permissions a plain
        # open() would have given (0o666 less the umask), so that others can read models
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, OutputError) and (
                ours or exc.errno in _BODY_ERRNOS):
            raise output_error(name, exc) from None
        raise


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it over ``path`` only on success.

    Whatever fails (the disk fills up, the body raises, the process is interrupted), the
    temporary file is removed and ``path`` keeps its previous content (:func:`atomic_path`,
    with the file opened, flushed and synced to disk here). A device, FIFO or socket is written
    in place, and a write error there (``ENOSPC`` of a full device) is an
    :class:`~vjboost._errors.OutputError` too. The process's own standard output or error
    (``/dev/stdout``) is written through its descriptor, after what the shell and the tool
    wrote there before.

    Parameters
    ----------
    path : path-like
        Final destination. Its folder is created if missing.
    mode : {"wb", "w"}
        Binary or text mode.

    Raises
    ------
    OutputError
        The file cannot be written (full disk, read-only file system, permission denied,
        ``path`` is a folder...): one line naming the path and the reason.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode: expected 'wb' or 'w', got {mode!r}")
    text = {} if "b" in mode else {"encoding": "utf-8"}
    fd = _own_stream(path)
    if fd is not None:
        # the tool's own output (``--json /dev/stdout >> log``): written through a copy of its
        # descriptor, at the shell's offset and with its append flag; opening the path again
        # would start a redirected file over from its first byte
        try:
            fh = os.fdopen(os.dup(fd), mode, **text)
        except OSError as exc:
            raise output_error(path, exc) from None
        with fh:
            yield fh
            try:
                fh.flush()
            except OSError as exc:
                raise output_error(path, exc) from None
        return
    with atomic_path(path, suffix="") as tmp:
        try:
            fh = open(tmp, mode, **text)
        except OSError as exc:
            raise output_error(path, exc) from None
        with fh:
            yield fh
            try:
                fh.flush()
                # only a regular file has a disk copy to sync (a pipe or a terminal written in
                # place refuses fsync with EINVAL)
                if stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    os.fsync(fh.fileno())
            except OSError as exc:
                raise output_error(path, exc) from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write ``data`` to ``path`` atomically (temporary file + rename).

    Raises
    ------
    OutputError
        See :func:`atomic_open`.
    """
    with atomic_open(path, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)


def save_png(fig: Any, path: str | os.PathLike[str], dpi: int = 100) -> None:
    """Save a matplotlib figure as a PNG atomically (temporary file + rename)."""
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=dpi)


def remove_stale_temps(folder: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporary files :func:`atomic_open` left in ``folder`` (a killed run's).

    Only safe while no other process writes there: :class:`OutputFolder` calls it once it
    holds the folder.

    Returns
    -------
    list of Path
        The files removed.
    """
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if _TEMP.match(entry.name) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    return sorted(removed)


def check_output_path(path: str | os.PathLike[str], kind: str = "file", *,
                      what: str | None = None, min_free: int = 4096) -> Path:
    """Check that an output file or folder can be written, before any work is done.

    A file must not be a folder and its folder must exist (for a symlink, the folder of the
    file it resolves to); a device, FIFO or socket must be writable, and is not probed further
    (:func:`atomic_path` writes it in place); a folder is created when its parent exists. The
    folder written to must accept a new file (a probe file is created and removed: this catches
    permissions, read-only file systems and full inode tables) and have at least ``min_free``
    bytes free.

    Parameters
    ----------
    path : path-like
    kind : {"file", "folder"}
    what : str, optional
        Name used in messages (an option such as ``--save``); default: none.
    min_free : int, default=4096
        Free bytes required on the file system (0: no check).

    Returns
    -------
    Path

    Raises
    ------
    OutputError
        One line naming the path and the reason.

    Examples
    --------
    >>> check_output_path("/nonexistent/dir/out.jsonl")
    Traceback (most recent call last):
    ...
    vjboost._errors.OutputError: cannot write /nonexistent/dir/out.jsonl: the folder \
/nonexistent/dir does not exist
    """
    if kind not in ("file", "folder"):
        raise ValueError(f"kind: expected 'file' or 'folder', got {kind!r}")
    p = Path(path)
    head = f"{what}: " if what else ""
    if kind == "folder":
        if p.exists() and not p.is_dir():
            raise OutputError(f"{head}{p} exists and is not a folder")
        if not p.exists():
            if not p.parent.is_dir():
                raise OutputError(f"{head}cannot create {p}: the folder {p.parent} does not "
                                  "exist")
            try:
                p.mkdir()
            except FileExistsError:
                pass
            except OSError as exc:
                raise OutputError(f"{head}cannot create {p}: {_reason(exc)}") from None
        target = p
    else:
        if p.is_dir():
            raise OutputError(f"{head}{p} is a folder; give a file name")
        dest, direct = _destination(p)
        if direct:  # a device, FIFO or the tool's own output, written in place: no new file
            if not os.access(dest, os.W_OK):
                raise OutputError(f"{head}cannot write {p}: permission denied")
            return p
        target = dest.parent if str(dest.parent) else Path(".")
        if not target.is_dir():
            raise OutputError(f"{head}cannot write {p}: the folder {target} does not exist")
    try:
        fd, probe = tempfile.mkstemp(prefix=".vjboost-probe.", dir=target)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputError(f"{head}cannot write in {target}: {_reason(exc)}") from None
    if min_free:
        try:
            st = os.statvfs(target)
            free = st.f_bavail * st.f_frsize
        except (OSError, AttributeError):
            free = min_free
        if free < min_free:
            raise OutputError(f"{head}cannot write in {target}: the disk is full ({free} bytes "
                              "free)")
    return p


def _identity(path: str | os.PathLike[str]) -> tuple[int, int] | str | None:
    """What file ``path`` names, to tell whether two paths name one: an existing regular file's
    device and inode (a symlink or a hard link to it names it too), a new file's resolved path,
    None for a device, FIFO, socket or folder (written in place, or not a file: two outputs may
    both be ``/dev/null``)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def check_outputs_apart(outputs: Iterable[tuple[str, str | os.PathLike[str] | None]], *,
                        inputs: Iterable[tuple[str, str | os.PathLike[str] | None]] = ()
                        ) -> None:
    """Refuse, before any work, an output file that is one of the command's inputs or another
    of its outputs: writing it would destroy that input (``vjdetect x.png --json x.png``) or
    that output (``vjadapt -o a.json --report a.json``).

    Paths are compared as files: an existing file by device and inode (a symlink or hard link to
    an input is that input), a new one by its resolved path. Inputs are only looked at when an
    output file already exists (a new file cannot be an input), then with one ``stat`` each, so
    a long list of images costs nothing in the usual case. Devices, FIFOs and sockets
    (``/dev/stdout``) are written in place and never refused; ``"-"`` (standard output) and
    None (an output not written) are skipped.

    Parameters
    ----------
    outputs : iterable of (str, path-like or None)
        What each output is for messages (an option such as ``--json``) and its path.
    inputs : iterable of (str, path-like or None)
        What each input is for messages (``"input image"``, ``"--model file"``) and its path;
        may be a generator.

    Raises
    ------
    OutputError
        One line naming the output, the input (or other output) it is, and what to do.

    Examples
    --------
    >>> import tempfile
    >>> img = Path(tempfile.mkdtemp()) / "x.png"
    >>> _ = img.write_bytes(b"an image")
    >>> check_outputs_apart([("--json", img.with_suffix(".jsonl"))],
    ...                     inputs=[("input image", img)])
    >>> check_outputs_apart([("--json", img)],
    ...                     inputs=[("input image", img)])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vjboost._errors.OutputError: --json: .../x.png is the input image; writing it would \
destroy that input: give another output path
    """
    seen: dict[tuple[int, int] | str, tuple[str, str]] = {}
    for what, path in outputs:
        if path is None or os.fspath(path) == "-":
            continue
        key = _identity(path)
        if key is None:
            continue
        if key in seen:
            other, first = seen[key]
            raise OutputError(f"{what}: {path} is the same file as {other} ({first}); one "
                              "would overwrite the other: give them different paths")
        seen[key] = (what, os.fspath(path))
    existing = {k: v for k, v in seen.items() if isinstance(k, tuple)}
    if not existing:
        return
    for what, path in inputs:
        if path is None or isinstance(path, int):  # an int would stat a file descriptor
            continue
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        hit = existing.get((st.st_dev, st.st_ino))
        if hit is not None and stat.S_ISREG(st.st_mode):
            out_what, out_path = hit
            also = "" if os.fspath(path) == out_path else f" {path}"
            raise OutputError(f"{out_what}: {out_path} is the {what}{also}; writing it would "
                              "destroy that input: give another output path")


def check_folder_apart(what: str, folder: str | os.PathLike[str], *,
                       inputs: Iterable[tuple[str, str | os.PathLike[str] | None]]) -> None:
    """Refuse, before any work, an output folder that is an input folder: what is written
    there would be read as input the next time (``vjtrain -o POS`` fills the positives folder
    with its plots, which the next run takes for positive crops). A folder inside an input
    folder passes: input folders are read without their subfolders.

    Parameters
    ----------
    what : str
        The output's option, for messages (``-o/--output``).
    folder : path-like
        The output folder (it need not exist yet).
    inputs : iterable of (str, path-like or None)
        What each input is for messages (``"POS"``) and its path; those that are not folders
        are skipped.

    Raises
    ------
    OutputError
        One line naming the output folder, the input folder and what to do.

    Examples
    --------
    >>> import tempfile
    >>> pos = Path(tempfile.mkdtemp())
    >>> check_folder_apart("-o", pos / "runs", inputs=[("POS", pos)])
    >>> check_folder_apart("-o", pos, inputs=[("POS", pos)])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vjboost._errors.OutputError: -o: ... is the POS folder; what is written there would be \
read as input: choose another output folder
    """
    out = os.path.realpath(folder)
    for label, path in inputs:
        if path is None or not os.path.isdir(path) or os.path.realpath(path) != out:
            continue
        named = "" if os.fspath(path) == os.fspath(folder) else f" {path}"
        raise OutputError(f"{what}: {folder} is the {label} folder{named}; what is written "
                          "there would be read as input: choose another output folder")


def _reason(exc: OSError) -> str:
    why = _WRITE_ERRNOS.get(exc.errno or 0)
    detail = exc.strerror or str(exc)
    return f"{why} ({detail})" if why and why.lower() != detail.lower() else detail


# ------------------------------------------------------------------------------------------------
# One run per output folder
# ------------------------------------------------------------------------------------------------


def _process_start(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (Linux), to tell a reused pid."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(pid: int, start: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, OverflowError, ValueError):
        return False
    now = _process_start(pid)
    return start is None or now is None or now == start


class OutputFolder:
    """An output folder that belongs to one run: a context manager holding a lock file.

    Entering checks the folder (:func:`check_output_path`, created if missing) and creates
    ``<folder>/.vjboost.lock`` with ``O_EXCL``, recording the holder's pid, host, start time,
    ``what`` and command line. A second run on the same folder is refused with an
    :class:`~vjboost._errors.OutputError` naming the holder. A lock whose holder is dead (same
    host, pid gone or reused) is stale: it is taken over, and :attr:`took_over` records the
    previous holder. Temporary files of interrupted atomic writes are removed
    (:attr:`removed_temps`). Leaving removes the lock.

    Parameters
    ----------
    path : path-like
        The output folder.
    what : str, default="run"
        What the run does (``"training"``), for messages.
    log : callable, optional
        Called with one line when a stale lock is taken over or temporary files are removed.

    Attributes
    ----------
    path : Path
    lock_path : Path
    took_over : dict or None
        The stale holder's record (``pid``, ``host``, ``started``, ``what``, ``command``).
    removed_temps : list of Path

    Examples
    --------
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> with OutputFolder(out, what="training") as folder:
    ...     with OutputFolder(out, what="training"):  # doctest: +ELLIPSIS
    ...         pass
    Traceback (most recent call last):
    ...
    vjboost._errors.OutputError: ...: in use by another training (pid ..., host ..., since ...)...
    """

    def __init__(self, path: str | os.PathLike[str], *, what: str = "run",
                 log: Callable[[str], Any] | None = None) -> None:
        self.path = Path(path)
        self.lock_path = self.path / LOCK_NAME
        self.what = what
        self.log = log
        self.took_over: dict[str, Any] | None = None
        self.removed_temps: list[Path] = []
        self._record: dict[str, Any] | None = None

    # -- the lock ---------------------------------------------------------------------------------

    def _new_record(self) -> dict[str, Any]:
        import sys

        pid = os.getpid()
        return {"pid": pid, "host": socket.gethostname(), "process_start": _process_start(pid),
                "started": time.strftime("%Y-%m-%d %H:%M:%S %z"), "what": self.what,
                "command": " ".join(sys.argv)[:500]}

    def _read(self, path: Path) -> dict[str, Any] | None:
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        return rec if isinstance(rec, dict) else None

    def _is_stale(self, rec: dict[str, Any] | None, path: Path) -> bool:
        if rec is None:
            # unreadable: a holder between creating and writing it, or one killed right then
            try:
                age = time.time() - path.stat().st_mtime
            except OSError:
                return False
            return age > 10.0
        if rec.get("host") != socket.gethostname():
            return False  # cannot tell whether a process on another host is alive
        pid = rec.get("pid")
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
            return True
        return not _alive(pid, rec.get("process_start"))

    def _refuse(self, rec: dict[str, Any] | None) -> OutputError:
        if rec is None:
            holder = "another run (its lock file is being written)"
        else:
            holder = (f"another {rec.get('what', 'run')} (pid {rec.get('pid')}, host "
                      f"{rec.get('host')}, since {rec.get('started')})")
        return OutputError(
            f"{self.path}: in use by {holder}; wait for it to finish, choose another output "
            f"folder, or, if that run is gone, delete {self.lock_path}")

    def _create(self, record: dict[str, Any]) -> bool:
        try:
            fd = os.open(self.lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        except OSError as exc:
            raise OutputError(f"{self.lock_path}: cannot create the lock file: "
                              f"{_reason(exc)}") from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(self.lock_path)
            raise OutputError(f"{self.lock_path}: cannot write the lock file: "
                              f"{_reason(exc)}") from None
        return True

    def acquire(self) -> OutputFolder:
        """Take the folder (see the class docstring); returns ``self``."""
        check_output_path(self.path, "folder")
        record = self._new_record()
        for _ in range(5):
            if self._create(record):
                self._record = record
                break
            rec = self._read(self.lock_path)
            if rec is None:
                time.sleep(0.05)  # a holder may be writing it: look again
                rec = self._read(self.lock_path)
            if not self._is_stale(rec, self.lock_path):
                raise self._refuse(rec)
            # stale: move it aside (atomic: one of several racing runs wins), check that what
            # was moved is the stale record, then create ours
            aside = self.path / f"{LOCK_NAME}.stale.{os.getpid()}"
            try:
                os.rename(self.lock_path, aside)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise OutputError(f"{self.lock_path}: cannot replace the stale lock: "
                                  f"{_reason(exc)}") from None
            moved = self._read(aside)
            if moved != rec:  # another run took the stale lock over first: put its lock back
                with contextlib.suppress(OSError):
                    os.link(aside, self.lock_path)
                with contextlib.suppress(OSError):
                    os.unlink(aside)
                continue
            with contextlib.suppress(OSError):
                os.unlink(aside)
            self.took_over = rec or {}
        else:
            raise self._refuse(self._read(self.lock_path))
        if self.took_over is not None and self.log is not None:
            r = self.took_over
            self.log(f"note: {self.path} was locked by a {r.get('what', 'run')} that is no longer "
                     f"running (pid {r.get('pid')}, since {r.get('started')}); taking it over")
        self.removed_temps = remove_stale_temps(self.path)
        if self.removed_temps and self.log is not None:
            self.log(f"note: removed {len(self.removed_temps)} temporary file(s) left in "
                     f"{self.path} by an interrupted run")
        return self

    def release(self) -> None:
        """Remove the lock file if this run still holds it."""
        if self._record is None:
            return
        if self._read(self.lock_path) == self._record:
            with contextlib.suppress(OSError):
                os.unlink(self.lock_path)
        self._record = None

    @property
    def held(self) -> bool:
        """Whether this object holds the folder."""
        return self._record is not None

    def __enter__(self) -> OutputFolder:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"OutputFolder({str(self.path)!r}, what={self.what!r}, held={self.held})"
