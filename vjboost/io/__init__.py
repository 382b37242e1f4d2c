"""Reading the data of detector training and evaluation.

Images (with errors that name the file), OpenCV ``.vec`` positive files, ``bg.txt`` background
lists, and box annotations (OpenCV ``info.dat``, CSV, JSON). Relative paths inside list files are
resolved against the list file's folder, never the working directory.
"""

from __future__ import annotations

from .annotations import (
    AnnotationError,
    read_annotations,
    read_bg_list,
    read_boxes_csv,
    read_boxes_json,
    read_info_dat,
)
from .images import ImageReadError, read_image, read_images
from .vec import VecFormatError, read_vec, write_vec

__all__ = [
    "AnnotationError",
    "ImageReadError",
    "VecFormatError",
    "read_annotations",
    "read_bg_list",
    "read_boxes_csv",
    "read_boxes_json",
    "read_image",
    "read_images",
    "read_info_dat",
    "read_vec",
    "write_vec",
]
