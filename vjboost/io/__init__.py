"""Reading and writing the data of detector training and evaluation.

* inputs: one list of image and video suffixes, one expansion of command-line inputs (files,
  folders, globs, list files, videos, cameras) — :mod:`vjboost.io.inputs`;
* images (a pixel cap checked from the header before decoding) and video frames;
* OpenCV ``.vec`` positive files and ``bg.txt`` background lists;
* box annotations in every supported format, one result type (:class:`AnnotationSet`: boxes
  and ignore regions per image) — OpenCV ``info.dat``, CSV, JSON, COCO, Pascal VOC, YOLO,
  LabelMe, CVAT;
* where negatives may be taken in annotated images (:func:`negative_mask`);
* detection output in JSON lines, COCO, VOC and YOLO (:func:`open_detection_writer`).

Relative paths inside list and annotation files are resolved against the file's folder, never
the working directory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vjboost._lazy import attach

if TYPE_CHECKING:
    from .annotations import (
        AnnotationError,
        AnnotationSet,
        read_bg_list,
        read_boxes_csv,
        read_boxes_json,
        read_info_dat,
    )
    from .formats import FORMATS, detect_format, read_annotations
    from .images import (
        ImageReadError,
        ImageTooLargeError,
        check_image_size,
        image_size,
        read_image,
        read_images,
    )
    from .inputs import (
        IMAGE_SUFFIXES,
        VIDEO_SUFFIXES,
        ExpandedInputs,
        Source,
        expand_inputs,
        image_files,
        is_image_file,
        is_video_file,
        list_images,
    )
    from .regions import negative_mask, negative_regions, windows_outside
    from .vec import VecFormatError, read_vec, vec_layout, write_vec
    from .video import VideoFrames, VideoReadError, iter_frames
    from .writers import DETECTION_FORMATS, DetectionWriter, open_detection_writer

__getattr__, __dir__, __all__ = attach(__name__, __file__)
