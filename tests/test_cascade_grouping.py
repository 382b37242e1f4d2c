"""groupRectangles, NMS and clipping against brute-force references (and cv2 when present)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.boxes import (
    GROUP_SCORES,
    WindowGroups,
    clip_boxes,
    group_detections,
    group_rectangles,
    nms,
    similar_classes,
)


def _similar(a, b, eps):
    delta = eps * (min(a[2], b[2]) + min(a[3], b[3])) * 0.5
    return (abs(a[0] - b[0]) <= delta and abs(a[1] - b[1]) <= delta
            and abs(a[0] + a[2] - b[0] - b[2]) <= delta and abs(a[1] + a[3] - b[1] - b[3]) <= delta)


def _reference(rects, thr, eps=0.2, singles=False):
    """Plain-Python groupRectangles written from the specification (components by flood fill);
    ``singles``: at threshold 0 the groups too, not the raw windows."""
    rects = [tuple(int(v) for v in r) for r in rects]
    if (thr <= 0 and not singles) or not rects:
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


@settings(max_examples=60)
@given(rects=rect_lists, thr=st.integers(-1, 3), eps=st.sampled_from([0.2, 0.35]),
       data=st.data())
def test_every_group_with_singles_matches_reference(rects, thr, eps, data):
    """``select(m, singles=True)``: at m <= 0 every group of the partition (single windows
    too) that OpenCV's containment filter keeps at threshold 0, each with its windows' margin
    sum; above 0, the groups ``select(m)`` gives."""
    rects = rects + [(x + 1, y, w, h) for (x, y, w, h) in rects[::2]]
    scores = np.array(data.draw(st.lists(st.floats(-5, 5), min_size=len(rects),
                                         max_size=len(rects))), np.float64)
    r = np.array(rects, dtype=np.int64).reshape(-1, 4)
    g = WindowGroups(r, scores, eps=eps)
    b, sc, n = g.select(thr, score="margin", offset=0.5, singles=True)
    assert Counter(map(tuple, b.tolist())) == _reference(rects, max(thr, 0), eps, singles=True)
    if thr > 0:
        b1, s1, n1 = g.select(thr, score="margin", offset=0.5)
        assert b1.tolist() == b.tolist() and np.allclose(s1, sc) and n1.tolist() == n.tolist()
        return
    # each group's margin: its windows' scores less the offset, summed over its class
    lab = similar_classes(r, eps)
    sums = {}
    for c in np.unique(lab):
        m = r[lab == c]
        inv = np.float32(1.0) / np.float32(len(m))
        avg = tuple(int(np.rint(np.float32(m[:, d].sum()) * inv)) for d in range(4))
        sums.setdefault(avg, []).append((len(m), float((scores[lab == c] - 0.5).sum())))
    for box, v, k in zip(map(tuple, b.tolist()), sc, n.tolist(), strict=True):
        assert any(k == kk and v == pytest.approx(vv) for kk, vv in sums[box])


def test_group_scores_are_group_maxima():
    rects = np.array([[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20], [100, 100, 20, 20]])
    boxes, counts, best = group_rectangles(rects, 2, 0.2, scores=[0.5, 2.0, 1.0, 9.0])
    assert boxes.tolist() == [[10, 10, 20, 20]]
    assert counts.tolist() == [3] and best.tolist() == [2.0]
    raw, c0, s0 = group_rectangles(rects, 0, 0.2, scores=[1, 2, 3, 4])
    assert raw.tolist() == rects.tolist() and c0.tolist() == [1] * 4


@settings(max_examples=50)
@given(rects=rect_lists, thr=st.integers(0, 3), off=st.sampled_from([0.0, -1.5, 0.75]),
       data=st.data())
def test_group_scores_match_per_class_reference(rects, thr, off, data):
    """Every detection score kind, against sums over the classes of ``similar_classes``."""
    scores = np.array(data.draw(st.lists(st.floats(-5, 5), min_size=len(rects),
                                         max_size=len(rects))), np.float64)
    r = np.array(rects, dtype=np.int64).reshape(-1, 4)
    kept, _, counts = WindowGroups(r, scores).select(thr)
    expected = {k: Counter() for k in GROUP_SCORES}
    if thr <= 0:
        for b, sc in zip(r.tolist(), scores, strict=True):
            for k, v in (("best", sc), ("sum", sc), ("margin", sc - off),
                         ("neighbors", 1 + 1e-6 * np.tanh(sc))):
                expected[k][(tuple(b), round(float(v), 6))] += 1
    else:
        lab = similar_classes(r, 0.2)
        by_avg = {}
        for c in np.unique(lab):
            m = r[lab == c]
            inv = np.float32(1.0) / np.float32(len(m))
            avg = tuple(int(np.rint(np.float32(m[:, d].sum()) * inv)) for d in range(4))
            by_avg.setdefault(avg, []).append(scores[lab == c])
        for b in map(tuple, kept.tolist()):
            s = by_avg[b].pop(0) if len(by_avg[b]) == 1 else by_avg[b][0]
            for k, v in (("best", s.max()), ("sum", s.sum()), ("margin", (s - off).sum()),
                         ("neighbors", len(s) + 1e-6 * np.tanh(s.max()))):
                expected[k][(b, round(float(v), 6))] += 1
    if thr > 0 and any(len(v) > 1 for v in by_avg.values()):
        return  # two classes with one average box: the pairing above is ambiguous
    for k in GROUP_SCORES:
        b, sc, n = WindowGroups(r, scores).select(thr, score=k, offset=off)
        assert n.tolist() == counts.tolist()
        got = Counter((tuple(x), round(float(v), 6)) for x, v in zip(b.tolist(), sc, strict=True))
        assert got == expected[k], k
        # the detector's grouping function gives the same detections
        gb, gs, _ = group_detections(r, scores, min_neighbors=thr, score=k, offset=off)
        assert gb.tolist() == b.tolist() and np.allclose(gs, sc)


def test_group_scores_reject_unknown_kind():
    with pytest.raises(ValueError, match="score"):
        WindowGroups([[0, 0, 10, 10]], [1.0]).select(1, score="mean")
    with pytest.raises(ValueError, match="score"):
        group_detections([[0, 0, 10, 10]], [1.0], method="nms", score="mean")
    b, s, n = group_detections([[0, 0, 10, 10], [50, 50, 10, 10]], [1.0, 2.0], method="none",
                               score="margin", offset=0.5)
    assert s.tolist() == [0.5, 1.5] and n.tolist() == [1, 1]


def test_nms_counts_the_overlapping_windows_at_every_min_neighbors():
    """With ``min_neighbors=0`` every NMS detection had 1 neighbour, so that ranking them by
    ``score="neighbors"`` tied them all."""
    raw = [[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20], [90, 0, 20, 20]]
    for thr, want in ((0, {(11, 10): 3, (90, 0): 1}), (1, {(11, 10): 3})):
        b, s, n = group_detections(raw, [1.0, 3.0, 2.0, 5.0], method="nms", min_neighbors=thr,
                                   score="neighbors")
        assert dict(zip(map(tuple, b[:, :2].tolist()), n.tolist(), strict=True)) == want
        assert np.floor(s).tolist() == n.tolist()
    b, s, n = group_detections(np.zeros((0, 4)), [], method="nms", min_neighbors=0)
    assert b.shape == (0, 4) and len(s) == len(n) == 0


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


# -- the near-linear partition against OpenCV's all-pairs partition --------------------------------

def _brute_partition(rects, eps):
    """Connected components of the similarity graph, every pair compared (plain Python)."""
    n = len(rects)
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if _similar(rects[i], rects[j], eps):
                parent[find(j)] = find(i)
    labels, first = [], {}
    for i in range(n):
        labels.append(first.setdefault(find(i), len(first)))
    return labels


wide_rects = st.lists(
    st.tuples(st.integers(-300, 300), st.integers(-300, 300), st.integers(-5, 400),
              st.integers(-5, 400)),
    min_size=0, max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(rects=wide_rects, eps=st.sampled_from([0.2, 0.0, 0.05, 0.5, 1.0, 3.0, -0.1]),
       data=st.data())
def test_partition_matches_all_pairs(rects, eps, data):
    # near-duplicates at several scales: the cases where classes chain across grid cells/levels
    jit = data.draw(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3),
                                       st.integers(-4, 4)), min_size=len(rects),
                             max_size=len(rects)))
    rects = rects + [(x + dx, y + dy, w + dw, h + dw)
                     for (x, y, w, h), (dx, dy, dw) in zip(rects, jit, strict=True)]
    got = similar_classes(np.array(rects, dtype=np.int64).reshape(-1, 4), eps)
    assert got.tolist() == _brute_partition(rects, eps)


@settings(max_examples=60, deadline=None)
@given(rects=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 400), st.integers(1, 200),
                                st.integers(1, 200)), min_size=0, max_size=50),
       thr=st.integers(1, 4), eps=st.sampled_from([0.2, 0.5, 1.5]))
def test_grouping_many_sizes_matches_reference(rects, thr, eps):
    # classes of very different sizes: the containment search crosses grid levels
    rects = rects + [(x + 1, y, w, h) for (x, y, w, h) in rects] + [
        (x, y + 1, w + 1, h) for (x, y, w, h) in rects[::2]]
    boxes, _, _ = group_rectangles(np.array(rects, dtype=np.int64).reshape(-1, 4), thr, eps)
    assert Counter(map(tuple, boxes.tolist())) == _reference(rects, thr, eps)


@pytest.mark.slow
def test_partition_of_detector_like_windows_matches_quadratic():
    # a dense field of windows at 12 scales, as a cascade accepting a textured region gives
    from vjboost.boxes import _classes, _classes_all_pairs

    rng = np.random.default_rng(0)
    rows = []
    for k in range(12):
        s = 1.1 ** k
        w = int(round(24 * s))
        xs = np.arange(0, 300, max(1, int(round(2 * s))))
        xx, yy = np.meshgrid(xs, xs[: len(xs) // 2])
        keep = rng.random(xx.size) < 0.06  # ~3,700 windows: the quadratic reference stays quick
        rows.append(np.stack([xx.ravel()[keep], yy.ravel()[keep], np.full(keep.sum(), w),
                              np.full(keep.sum(), w)], axis=1))
    r = np.ascontiguousarray(np.concatenate(rows), dtype=np.int64)
    assert len(r) > 3000
    for eps in (0.2, 0.05):
        fast, k1 = _classes(r, eps)
        slow, k2 = _classes_all_pairs(r, eps)
        assert k1 == k2 and np.array_equal(fast, slow)


def test_overlap_counts_matches_dense_formula():
    from vjboost.boxes import overlap_counts

    rng = np.random.default_rng(1)
    b = np.concatenate([rng.integers(0, 80, (300, 2)), rng.integers(5, 40, (300, 2))], axis=1)
    f = b.astype(np.float64)
    x1, y1, x2, y2 = f[:, 0], f[:, 1], f[:, 0] + f[:, 2], f[:, 1] + f[:, 3]
    iw = np.clip(np.minimum(x2[:, None], x2[None]) - np.maximum(x1[:, None], x1[None]), 0, None)
    ih = np.clip(np.minimum(y2[:, None], y2[None]) - np.maximum(y1[:, None], y1[None]), 0, None)
    inter = iw * ih
    area = f[:, 2] * f[:, 3]
    u = area[:, None] + area[None] - inter
    for t in (0.0, 0.3, 0.7, 1.0):
        want = ((inter / np.maximum(u, 1e-12)) > t).sum(axis=1)
        np.testing.assert_array_equal(overlap_counts(b, t), want)


def test_window_groups_select_equals_group_rectangles_at_every_threshold():
    from vjboost.boxes import WindowGroups, group_detections

    rng = np.random.default_rng(2)
    base = rng.integers(0, 200, (40, 2))
    r = np.concatenate([np.concatenate([base + rng.integers(-2, 3, base.shape),
                                        np.full((40, 2), 30)], axis=1) for _ in range(6)])
    s = rng.random(len(r))
    g = WindowGroups(r, s)
    for t in range(0, 8):
        b1, c1, best1 = group_rectangles(r, t, 0.2, s)
        b2, s2, n2 = g.select(t)
        assert np.array_equal(b1, b2) and np.array_equal(c1, n2) and np.array_equal(best1, s2)
        b3, s3, n3 = group_detections(r, s, min_neighbors=t, image_size=(150, 120))
        b4, s4, n4 = g.select(t, (150, 120))
        assert np.array_equal(b3, b4) and np.array_equal(s3, s4) and np.array_equal(n3, n4)
        assert (b3[:, 0] + b3[:, 2] <= 150).all() and (b3[:, 1] + b3[:, 3] <= 120).all()
