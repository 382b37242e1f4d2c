"""groupRectangles, NMS and clipping against brute-force references (and cv2 when present)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.cascade.grouping import clip_boxes, group_rectangles, nms, similar_classes


def _similar(a, b, eps):
    delta = eps * (min(a[2], b[2]) + min(a[3], b[3])) * 0.5
    return (abs(a[0] - b[0]) <= delta and abs(a[1] - b[1]) <= delta
            and abs(a[0] + a[2] - b[0] - b[2]) <= delta and abs(a[1] + a[3] - b[1] - b[3]) <= delta)


def _reference(rects, thr, eps=0.2):
    """Plain-Python groupRectangles written from the specification (components by flood fill)."""
    rects = [tuple(int(v) for v in r) for r in rects]
    if thr <= 0 or not rects:
        return Counter(rects)
    n = len(rects)
    label = [-1] * n
    k = 0
    for i in range(n):
        if label[i] >= 0:
            continue
        label[i] = k
        stack = [i]
        while stack:
            a = stack.pop()
            for b in range(n):
                if label[b] < 0 and _similar(rects[a], rects[b], eps):
                    label[b] = k
                    stack.append(b)
        k += 1
    avg, cnt = [], []
    for c in range(k):
        members = [rects[i] for i in range(n) if label[i] == c]
        s = np.float32(1.0) / np.float32(len(members))
        avg.append(tuple(int(np.rint(np.float32(sum(m[d] for m in members)) * s))
                         for d in range(4)))
        cnt.append(len(members))
    out = []
    for i in range(k):
        if cnt[i] <= thr:
            continue
        r1, n1 = avg[i], cnt[i]
        drop = False
        for j in range(k):
            if j == i or cnt[j] <= thr:
                continue
            r2, n2 = avg[j], cnt[j]
            dx, dy = int(np.rint(r2[2] * eps)), int(np.rint(r2[3] * eps))
            if (r1[0] >= r2[0] - dx and r1[1] >= r2[1] - dy and r1[0] + r1[2] <= r2[0] + r2[2] + dx
                    and r1[1] + r1[3] <= r2[1] + r2[3] + dy and (n2 > max(3, n1) or n1 < 3)):
                drop = True
                break
        if not drop:
            out.append(r1)
    return Counter(out)


rect_lists = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 60), st.integers(8, 40), st.integers(8, 40)),
    min_size=0, max_size=40,
)


@settings(max_examples=60)
@given(rects=rect_lists, thr=st.integers(0, 4), eps=st.sampled_from([0.2, 0.1, 0.35]))
def test_group_rectangles_matches_reference(rects, thr, eps):
    # clusters of near-duplicates make the interesting cases likely
    rects = rects + [(x + 1, y, w, h) for (x, y, w, h) in rects[::2]]
    boxes, counts, _ = group_rectangles(np.array(rects, dtype=np.int64).reshape(-1, 4), thr, eps)
    assert Counter(map(tuple, boxes.tolist())) == _reference(rects, thr, eps)
    assert len(counts) == len(boxes)


@settings(max_examples=40)
@given(rects=rect_lists, thr=st.integers(1, 4))
def test_group_rectangles_matches_cv2(rects, thr):
    cv2 = pytest.importorskip("cv2")
    if not hasattr(cv2, "groupRectangles"):
        pytest.skip("cv2 lacks groupRectangles")
    rects = rects + [(x, y + 1, w, h) for (x, y, w, h) in rects[::2]]
    ref, _ = cv2.groupRectangles([list(r) for r in rects], thr, 0.2)
    boxes, _, _ = group_rectangles(np.array(rects, dtype=np.int64).reshape(-1, 4), thr, 0.2)
    assert Counter(map(tuple, boxes.tolist())) == Counter(
        map(tuple, np.asarray(ref).reshape(-1, 4).tolist()))


def test_group_scores_are_group_maxima():
    rects = np.array([[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20], [100, 100, 20, 20]])
    boxes, counts, best = group_rectangles(rects, 2, 0.2, scores=[0.5, 2.0, 1.0, 9.0])
    assert boxes.tolist() == [[10, 10, 20, 20]]
    assert counts.tolist() == [3] and best.tolist() == [2.0]
    raw, c0, s0 = group_rectangles(rects, 0, 0.2, scores=[1, 2, 3, 4])
    assert raw.tolist() == rects.tolist() and c0.tolist() == [1] * 4


def test_similar_classes_transitive():
    # a~b and b~c but not a~c: one class
    r = np.array([[0, 0, 20, 20], [3, 0, 20, 20], [6, 0, 20, 20], [60, 60, 20, 20]])
    lab = similar_classes(r, 0.2)
    assert lab[0] == lab[1] == lab[2] != lab[3]


def test_nms_and_clip():
    b = np.array([[0, 0, 10, 10], [1, 1, 10, 10], [50, 50, 10, 10]])
    keep = nms(b, [0.5, 0.9, 0.1], 0.3)
    assert keep.tolist() == [1, 2]
    c, kept = clip_boxes(np.array([[-5, -5, 10, 10], [95, 0, 10, 10], [200, 0, 5, 5]]), 100, 50)
    assert c.tolist() == [[0, 0, 5, 5], [95, 0, 5, 10]] and kept.tolist() == [0, 1]
    with pytest.raises(ValueError, match="scores"):
        nms(b, [1.0], 0.3)
    with pytest.raises(ValueError, match="rects"):
        group_rectangles(np.zeros((3, 3)), 1)
