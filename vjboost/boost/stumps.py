"""Weighted stump searches over any block of (features x examples).

Every search takes a feature-major matrix ``values`` of shape ``(Q_all, N_all)``, a response
``r`` and weights ``w`` of length ``N_all`` (indexed like the columns of ``values``), and optional
``feature_ids`` (rows to search) and ``sample_ids`` (columns to use). A sampler that has evaluated
a block of ``Q`` features on ``S`` examples passes the block with ``response[sample_ids]`` and
``weights[sample_ids]``; a booster holding the whole matrix passes row and column ids instead, so
nothing is copied. Results are per searched feature, so features can be ranked.

Split convention (OpenCV): an example goes LEFT iff ``value < threshold``; a categorical split
sends code ``c`` LEFT iff bit ``c`` of a 256-bit subset (8 uint32 words) is set.

Criteria (``r`` is the response, ``w`` the weights, sums over one side of the split):

``"discrete"``
    ``r`` in {-1, +1}; ``h`` = -p on the left, +p on the right (polarity ``p``); score = the edge
    ``|sum w r h|``.
``"regression"``
    Weighted least squares (Gentle AdaBoost, LogitBoost): leaf value = ``sum w r / sum w``; score =
    ``sum_sides (sum w r)^2 / sum w``, the decrease of ``sum w (r - h)^2`` relative to ``h = 0``.
``"real"``
    ``r`` in {-1, +1}; Real AdaBoost's domain partitioning with ``W+``/``W-`` the weights of
    positives/negatives on a side: leaf value = ``1/2 ln((W+ + eps)/(W- + eps))``; score =
    ``W - Z`` with ``Z = 2 sum_sides sqrt(W+ W-)``, the decrease of the exponential loss relative
    to ``h = 0``.

Searches
--------
:func:`search_stumps`
    float32 values: exact, sort-based, every threshold between two distinct values (equal values
    are never separated). uint8 values: binned, one histogram per feature (O(S) per feature), a
    split between every pair of consecutive non-empty bins; with ``edges`` the thresholds are
    mapped back to raw values. K-column responses: one shared split, K leaf values.
:func:`search_categorical`
    256-way categorical split of uint8 codes (MB-LBP).
:func:`search_histograms`
    Real AdaBoost's n-bin domain-partitioning learner.
:func:`search_multiclass_stumps`
    AdaBoost.MH stumps with a vote vector.
:func:`search_splits`
    The search every weak learner uses: ordered and categorical rows of one block together.

Features with no possible split (constant over the used examples) get ``score = -inf``.
All kernels run in parallel over features.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit, prange

from vjboost._threads import n_threads
from vjboost._validation import check_array

__all__ = [
    "CRITERIA",
    "HistogramSearch",
    "MulticlassStumpSearch",
    "StumpSearch",
    "search_categorical",
    "search_histograms",
    "search_multiclass_stumps",
    "search_splits",
    "search_stumps",
]

CRITERIA = {"discrete": 0, "regression": 1, "real": 2}
_NEG_INF = -np.inf


# --------------------------------------------------------------------------------------------
# scalar helpers (inlined into the kernels)
#
# Kernels accumulate two sums per side, (u, v): (sum w, sum w r) for the discrete and regression
# criteria, (W+, W-) for the real one, so that the square roots of the real criterion never see
# the rounding residue of a cancellation. Right-side sums are accumulated separately (suffix sums)
# rather than obtained as total - left, for the same reason.


@njit(cache=True, nogil=True, inline="always")
def _score(crit: int, ul: float, vl: float, ur: float, vr: float) -> float:
    if crit == 0:
        return abs(vr - vl)
    if crit == 1:
        s = 0.0
        if ul > 0.0:
            s += vl * vl / ul
        if ur > 0.0:
            s += vr * vr / ur
        return s
    return (ul + vl + ur + vr) - 2.0 * (np.sqrt(ul * vl) + np.sqrt(ur * vr))


@njit(cache=True, nogil=True, inline="always")
def _leaf(crit: int, u: float, v: float, eps: float) -> float:
    """Leaf value of one side for the regression and real criteria."""
    if crit == 1:
        return v / u if u > 0.0 else 0.0
    return 0.5 * np.log((u + eps) / (v + eps))


@njit(cache=True, nogil=True, inline="always")
def _leaves(crit: int, ul: float, vl: float, ur: float, vr: float, eps: float, out, q: int) -> None:
    if crit == 0:
        p = 1.0 if vr - vl >= 0.0 else -1.0
        out[q, 0] = -p
        out[q, 1] = p
    else:
        out[q, 0] = _leaf(crit, ul, vl, eps)
        out[q, 1] = _leaf(crit, ur, vr, eps)


@njit(cache=True, nogil=True, inline="always")
def _sorted_row(values, q, cols):
    """Row ``q`` of ``values`` on the columns ``cols`` and its stable sort order."""
    x = np.empty(cols.shape[0], dtype=np.float32)
    for i in range(cols.shape[0]):
        x[i] = values[q, cols[i]]
    return x, np.argsort(x, kind="mergesort")


@njit(cache=True, nogil=True, inline="always")
def _midpoint(xi, xn):
    """float32 threshold between two distinct values ``xi < xn`` (``xn`` if the midpoint rounds
    down onto ``xi``), so that ``xi`` goes left and ``xn`` right."""
    t = np.float32(0.5 * (np.float64(xi) + np.float64(xn)))
    if not (t > xi and t <= xn):
        t = xn
    return t


# --------------------------------------------------------------------------------------------
# kernels


@njit(cache=True, nogil=True, inline="always")
def _row_keys(values, q, cols, x, keys):
    """Row ``q`` of ``values`` on ``cols`` into ``x`` (``-0.0`` read as ``0.0``) and its
    order-preserving unsigned keys (IEEE bits, sign-flipped) into ``keys``. Returns whether the
    row holds a NaN or an infinite value."""
    bits = x.view(np.uint32)
    exp = np.uint32(0x7F800000)
    bad = False
    for i in range(cols.shape[0]):
        x[i] = values[q, cols[i]] + np.float32(0.0)
        b = bits[i]
        bad |= (b & exp) == exp
        keys[i] = ~b if b & np.uint32(0x80000000) else b | np.uint32(0x80000000)
    return bad


@njit(cache=True, nogil=True, inline="always")
def _rank_order(keys, order):
    """Stable order of a few ``keys``: each key's rank is the number of keys before it in the
    stable order (smaller, or equal at an earlier position), counted without a branch over the
    64-bit ``key << 32 | position``, a loop the compiler vectorises (faster than any branching
    sort on tens of keys). The packed keys are compared as signed integers (top bit flipped),
    which SIMD units compare."""
    n = keys.shape[0]
    flip = np.uint64(0x8000000000000000)
    for i in range(n):
        ki = np.int64(((np.uint64(keys[i]) << np.uint64(32)) | np.uint64(i)) ^ flip)
        r = 0
        for j in range(n):
            r += np.int64(((np.uint64(keys[j]) << np.uint64(32)) | np.uint64(j)) ^ flip) < ki
        order[r] = i


@njit(cache=True, nogil=True, inline="always")
def _radix_order(keys, keys2, order, order2, count):
    """Stable order of 32-bit ``keys``: LSD radix sort, four passes of 8 bits (fewer than 1024
    keys) or three of 11 bits (``keys`` and ``order`` are overwritten; ``keys2``, ``order2``
    and ``count`` (2049,) are scratch). Returns the array holding the order."""
    n = keys.shape[0]
    for i in range(n):
        order[i] = i
    width = 8 if n < 1024 else 11
    n_pass = 4 if n < 1024 else 3
    n_dig = 1 << width
    mask = np.uint32(n_dig - 1)
    src_k, dst_k, src_o, dst_o = keys, keys2, order, order2
    for p in range(n_pass):
        sh = np.uint32(p * width)
        count[: n_dig + 1] = 0
        for i in range(n):
            count[((src_k[i] >> sh) & mask) + 1] += 1
        if count[((src_k[0] >> sh) & mask) + 1] == n:
            continue  # one digit for all keys: this pass would not move anything
        for d in range(n_dig):
            count[d + 1] += count[d]
        for i in range(n):
            d = (src_k[i] >> sh) & mask
            j = count[d]
            dst_k[j] = src_k[i]
            dst_o[j] = src_o[i]
            count[d] = j + 1
        src_k, dst_k, src_o, dst_o = dst_k, src_k, dst_o, src_o
    return src_o


@njit(cache=True, nogil=True, inline="always")
def _packed_radix_order(keys, packed, packed2, order, count):
    """:func:`_radix_order` for long rows (1024 keys or more): each key travels with its
    position in one 64-bit word (``key << 32 | position``), so a pass moves one array instead
    of two; three passes of 11 bits on the key half. Returns the array holding the order."""
    n = keys.shape[0]
    for i in range(n):
        packed[i] = (np.uint64(keys[i]) << np.uint64(32)) | np.uint64(i)
    mask = np.uint64(2047)
    src, dst = packed, packed2
    for p in range(3):
        sh = np.uint64(32 + 11 * p)
        count[:2049] = 0
        for i in range(n):
            count[((src[i] >> sh) & mask) + 1] += 1
        if count[((src[0] >> sh) & mask) + 1] == n:
            continue  # one digit for all keys: this pass would not move anything
        for d in range(2048):
            count[d + 1] += count[d]
        for i in range(n):
            word = src[i]
            d = (word >> sh) & mask
            j = count[d]
            dst[j] = word
            count[d] = j + 1
        src, dst = dst, src
    low = np.uint64(0xFFFFFFFF)
    for i in range(n):
        order[i] = np.int64(src[i] & low)
    return order


#: rows of at most this many columns are ranked by counting (Laminating's first steps search tens
#: of thousands of features on ~20 draws each)
_SMALL_ROW = 64


@njit(cache=True, nogil=True, parallel=True)
def _exact_kernel(values, rows, cols, u, v, crit, eps, score, thr, leaves, bad):
    n_s = cols.shape[0]
    n_q = rows.shape[0]
    # the block's sums once, in column order; each row then gathers them (and its values) in
    # sorted order in one pass, so that the suffix sums and the scan read memory in sequence
    uc = np.empty(n_s)
    vc = np.empty(n_s)
    for i in range(n_s):
        uc[i] = u[cols[i]]
        vc[i] = v[cols[i]]
    # rows in contiguous chunks, each with its own buffers (allocated once per chunk): sorting
    # by value is a stable radix sort of the float32 keys, the order of a stable merge sort
    n_chunks = min(n_q, 256)
    for ch in prange(n_chunks):
        su = np.empty(n_s)
        sv = np.empty(n_s)
        us = np.empty(n_s)
        vs = np.empty(n_s)
        x = np.empty(n_s, dtype=np.float32)
        xs = np.empty(n_s, dtype=np.float32)
        keys = np.empty(n_s, dtype=np.uint32)
        keys2 = np.empty(n_s, dtype=np.uint32)
        buf = np.empty(n_s, dtype=np.int64)
        buf2 = np.empty(n_s, dtype=np.int64)
        count = np.empty(2049, dtype=np.int64)
        n_long = n_s if n_s >= 1024 else 0
        packed = np.empty(n_long, dtype=np.uint64)
        packed2 = np.empty(n_long, dtype=np.uint64)
        for qi in range(ch * n_q // n_chunks, (ch + 1) * n_q // n_chunks):
            bad[qi] = _row_keys(values, rows[qi], cols, x, keys)
            if n_s <= _SMALL_ROW:
                _rank_order(keys, buf)
                order = buf
            elif n_s < 1024:
                order = _radix_order(keys, keys2, buf, buf2, count)
            else:
                order = _packed_radix_order(keys, packed, packed2, buf, count)
            # gather in sorted order and suffix sums in one backward pass:
            # su[k] = sum over sorted positions > k
            acc_u = 0.0
            acc_v = 0.0
            for k in range(n_s - 1, -1, -1):
                i = order[k]
                xs[k] = x[i]
                a = uc[i]
                b = vc[i]
                us[k] = a
                vs[k] = b
                su[k] = acc_u
                sv[k] = acc_v
                acc_u += a
                acc_v += b
            ul = 0.0
            vl = 0.0
            best = _NEG_INF
            best_t = np.float32(np.inf)
            b_ul = acc_u
            b_vl = acc_v
            b_ur = 0.0
            b_vr = 0.0
            for k in range(n_s - 1):
                ul += us[k]
                vl += vs[k]
                xi = xs[k]
                xn = xs[k + 1]
                if xn > xi:
                    s = _score(crit, ul, vl, su[k], sv[k])
                    if s > best:
                        best = s
                        best_t = _midpoint(xi, xn)
                        b_ul = ul
                        b_vl = vl
                        b_ur = su[k]
                        b_vr = sv[k]
            # a constant feature keeps everything on the left (no split, score -inf)
            score[qi] = best
            thr[qi] = best_t
            _leaves(crit, b_ul, b_vl, b_ur, b_vr, eps, leaves, qi)


@njit(cache=True, nogil=True, inline="always")
def _scan_bins(crit, hu, hv, eps, leaves, qi):
    """Best split over consecutive non-empty bins; returns (score, split bin)."""
    su = np.empty(257)
    sv = np.empty(257)
    su[256] = 0.0
    sv[256] = 0.0
    for b in range(255, -1, -1):
        su[b] = su[b + 1] + hu[b]
        sv[b] = sv[b + 1] + hv[b]
    ul = 0.0
    vl = 0.0
    best = _NEG_INF
    best_b = 256
    b_ul = su[0]
    b_vl = sv[0]
    b_ur = 0.0
    b_vr = 0.0
    seen = False
    for b in range(256):
        mass = hu[b] + hv[b] if crit == 2 else hu[b]
        if mass > 0.0:
            if seen:
                s = _score(crit, ul, vl, su[b], sv[b])
                if s > best:
                    best = s
                    best_b = b
                    b_ul = ul
                    b_vl = vl
                    b_ur = su[b]
                    b_vr = sv[b]
            seen = True
            ul += hu[b]
            vl += hv[b]
    _leaves(crit, b_ul, b_vl, b_ur, b_vr, eps, leaves, qi)
    return best, best_b


@njit(cache=True, nogil=True, inline="always")
def _histograms(row, cols, u, v, hu, hv):
    """Per bin (or code) of ``row`` on the columns ``cols``: the sums of ``u`` and of ``v``."""
    for i in range(cols.shape[0]):
        c = cols[i]
        b = np.intp(row[c])
        hu[b] += u[c]
        hv[b] += v[c]


@njit(cache=True, nogil=True, inline="always")
def _pm_to_uv(crit, h2, hu, hv):
    for b in range(256):
        if crit == 2:
            hu[b] = h2[2 * b]
            hv[b] = h2[2 * b + 1]
        else:
            hu[b] = h2[2 * b] + h2[2 * b + 1]
            hv[b] = h2[2 * b] - h2[2 * b + 1]


@njit(cache=True, nogil=True, parallel=True)
def _binned_kernel(bins, rows, cols, u, v, w, neg, pm, crit, eps, score, split, leaves):
    """Histogram search over the columns ``cols``.

    ``pm``: the response is +-1, so one add per example into an interleaved (W+, W-) histogram
    (``w`` the weights, ``neg`` the class index 1 of negatives) replaces two adds.
    """
    n_s = cols.shape[0]
    for qi in prange(rows.shape[0]):
        row = bins[rows[qi]]
        hu = np.zeros(256)
        hv = np.zeros(256)
        if pm:
            h2 = np.zeros(512)
            for i in range(n_s):
                c = cols[i]
                h2[2 * np.intp(row[c]) + neg[c]] += w[c]
            _pm_to_uv(crit, h2, hu, hv)
        else:
            _histograms(row, cols, u, v, hu, hv)
        best, best_b = _scan_bins(crit, hu, hv, eps, leaves, qi)
        score[qi] = best
        split[qi] = best_b


@njit(cache=True, nogil=True, parallel=True)
def _binned_full_kernel(bins, rows, u, v, w, neg, pm, crit, eps, score, split, leaves):
    """Same as ``_binned_kernel`` on all columns: contiguous reads, no index indirection.

    Four features are accumulated per pass over the examples, so each example's weight and class
    are loaded once for four histograms (and the four independent updates overlap).
    """
    n_s = bins.shape[1]
    n_q = rows.shape[0]
    n_blocks = (n_q + 3) // 4
    for blk in prange(n_blocks):
        q0 = blk * 4
        # a short last block repeats its last row; the duplicates' results are not written
        i0 = rows[q0]
        i1 = rows[min(q0 + 1, n_q - 1)]
        i2 = rows[min(q0 + 2, n_q - 1)]
        i3 = rows[min(q0 + 3, n_q - 1)]
        r0 = bins[i0]
        r1 = bins[i1]
        r2 = bins[i2]
        r3 = bins[i3]
        hu = np.zeros((4, 256))
        hv = np.zeros((4, 256))
        if pm:
            h0 = np.zeros(512)
            h1 = np.zeros(512)
            h2 = np.zeros(512)
            h3 = np.zeros(512)
            for i in range(n_s):
                wi = w[i]
                c = neg[i]
                h0[(np.intp(r0[i]) << 1) | c] += wi
                h1[(np.intp(r1[i]) << 1) | c] += wi
                h2[(np.intp(r2[i]) << 1) | c] += wi
                h3[(np.intp(r3[i]) << 1) | c] += wi
            _pm_to_uv(crit, h0, hu[0], hv[0])
            _pm_to_uv(crit, h1, hu[1], hv[1])
            _pm_to_uv(crit, h2, hu[2], hv[2])
            _pm_to_uv(crit, h3, hu[3], hv[3])
        else:
            for i in range(n_s):
                ui = u[i]
                vi = v[i]
                b = np.intp(r0[i])
                hu[0, b] += ui
                hv[0, b] += vi
                b = np.intp(r1[i])
                hu[1, b] += ui
                hv[1, b] += vi
                b = np.intp(r2[i])
                hu[2, b] += ui
                hv[2, b] += vi
                b = np.intp(r3[i])
                hu[3, b] += ui
                hv[3, b] += vi
        for j in range(min(4, n_q - q0)):
            best, best_b = _scan_bins(crit, hu[j], hv[j], eps, leaves, q0 + j)
            score[q0 + j] = best
            split[q0 + j] = best_b


@njit(cache=True, nogil=True, parallel=True)
def _categorical_kernel(codes, rows, cols, u, v, crit, eps, score, subset, leaves):
    for qi in prange(rows.shape[0]):
        hu = np.zeros(256)
        hv = np.zeros(256)
        _histograms(codes[rows[qi]], cols, u, v, hu, hv)
        left = np.zeros(256, dtype=np.bool_)
        best = _NEG_INF
        if crit == 0:
            # each category on the side of its sign: left predicts -1, right +1
            ul = 0.0
            vl = 0.0
            ur = 0.0
            vr = 0.0
            for k in range(256):
                if hu[k] > 0.0 and hv[k] < 0.0:
                    left[k] = True
                    ul += hu[k]
                    vl += hv[k]
                else:
                    ur += hu[k]
                    vr += hv[k]
            if ul > 0.0 and ur > 0.0:
                best = _score(0, ul, vl, ur, vr)
            leaves[qi, 0] = -1.0
            leaves[qi, 1] = 1.0
        else:
            # the optimal two-way partition is a prefix of the categories sorted by mean response
            m = 0
            for k in range(256):
                if hu[k] + (hv[k] if crit == 2 else 0.0) > 0.0:
                    m += 1
            keys = np.empty(m)
            cats = np.empty(m, dtype=np.intp)
            j = 0
            for k in range(256):
                tot = hu[k] + (hv[k] if crit == 2 else 0.0)
                if tot > 0.0:
                    keys[j] = hv[k] / hu[k] if crit == 1 else -hu[k] / tot
                    cats[j] = k
                    j += 1
            order = np.argsort(keys, kind="mergesort")
            su = np.empty(m + 1)
            sv = np.empty(m + 1)
            su[m] = 0.0
            sv[m] = 0.0
            for j in range(m - 1, -1, -1):
                su[j] = su[j + 1] + hu[cats[order[j]]]
                sv[j] = sv[j + 1] + hv[cats[order[j]]]
            best_k = 0
            ul = 0.0
            vl = 0.0
            b_ul = su[0]
            b_vl = sv[0]
            b_ur = 0.0
            b_vr = 0.0
            for j in range(m - 1):
                k = cats[order[j]]
                ul += hu[k]
                vl += hv[k]
                s = _score(crit, ul, vl, su[j + 1], sv[j + 1])
                if s > best:
                    best = s
                    best_k = j + 1
                    b_ul = ul
                    b_vl = vl
                    b_ur = su[j + 1]
                    b_vr = sv[j + 1]
            for j in range(best_k):
                left[cats[order[j]]] = True
            leaves[qi, 0] = _leaf(crit, b_ul, b_vl, eps)
            leaves[qi, 1] = _leaf(crit, b_ur, b_vr, eps)
        score[qi] = best
        for k in range(256):
            if left[k]:
                subset[qi, k >> 5] |= np.uint32(1) << np.uint32(k & 31)


@njit(cache=True, nogil=True, parallel=True)
def _histogram_kernel(bins, rows, cols, wp, wn, nb, n_groups, eps, score, bounds, hvals):
    """Real AdaBoost domain partition: ``n_groups`` groups of consecutive bins per feature."""
    for qi in prange(rows.shape[0]):
        q = rows[qi]
        hp = np.zeros(256)
        hn = np.zeros(256)
        _histograms(bins[q], cols, wp, wn, hp, hn)
        n_b = nb[q]
        # group boundaries: ceil(g * n_b / n_groups), deduplicated, strictly inside (0, n_b)
        n_bounds = 0
        last = 0
        for g in range(1, n_groups):
            bnd = (g * n_b + n_groups - 1) // n_groups
            if bnd > last and bnd < n_b:
                bounds[qi, n_bounds] = bnd
                n_bounds += 1
                last = bnd
        gp = np.zeros(n_groups)
        gn = np.zeros(n_groups)
        j = 0
        a_tot = 0.0
        for b in range(256):
            while j < n_bounds and b >= bounds[qi, j]:
                j += 1
            gp[j] += hp[b]
            gn[j] += hn[b]
            a_tot += hp[b] + hn[b]
        z = 0.0
        for g in range(n_bounds + 1):
            z += 2.0 * np.sqrt(gp[g] * gn[g])
            hvals[qi, g] = 0.5 * np.log((gp[g] + eps) / (gn[g] + eps))
        score[qi] = a_tot - z if n_bounds > 0 else _NEG_INF


@njit(cache=True, nogil=True, inline="always")
def _column_sums(wy, cols):
    """AdaBoost.MH's per-class totals ``sum_i wy[i, k]`` over the columns ``cols``."""
    tot = np.zeros(wy.shape[1])
    for i in range(cols.shape[0]):
        for k in range(wy.shape[1]):
            tot[k] += wy[cols[i], k]
    return tot


@njit(cache=True, nogil=True, inline="always")
def _vote_edge(tot, left):
    """The multi-class edge ``sum_k |R_k - L_k|`` of a split with left sums ``left``."""
    s = 0.0
    for k in range(tot.shape[0]):
        s += abs(tot[k] - 2.0 * left[k])
    return s


@njit(cache=True, nogil=True, inline="always")
def _votes(tot, best_left, votes, qi):
    """The vote vector of the best split: +1 for the classes its right side favours."""
    for k in range(tot.shape[0]):
        votes[qi, k] = 1.0 if tot[k] - 2.0 * best_left[k] >= 0.0 else -1.0


@njit(cache=True, nogil=True, parallel=True)
def _multiclass_binned_kernel(bins, rows, cols, wy, score, split, votes):
    """AdaBoost.MH stump: wy[i, k] = w_ik * Y_ik; score = sum_k |R_k - L_k|."""
    n_s = cols.shape[0]
    n_k = wy.shape[1]
    tot = _column_sums(wy, cols)
    for qi in prange(rows.shape[0]):
        q = rows[qi]
        h = np.zeros((256, n_k))
        present = np.zeros(256, dtype=np.bool_)
        for i in range(n_s):
            c = cols[i]
            b = np.intp(bins[q, c])
            present[b] = True
            for k in range(n_k):
                h[b, k] += wy[c, k]
        left = np.zeros(n_k)
        best = _NEG_INF
        best_b = 256
        best_left = np.zeros(n_k)
        seen = False
        for b in range(256):
            if present[b]:
                if seen:
                    s = _vote_edge(tot, left)
                    if s > best:
                        best = s
                        best_b = b
                        best_left[:] = left
                seen = True
                for k in range(n_k):
                    left[k] += h[b, k]
        score[qi] = best
        split[qi] = best_b
        _votes(tot, best_left, votes, qi)


@njit(cache=True, nogil=True, parallel=True)
def _multiclass_exact_kernel(values, rows, cols, wy, score, thr, votes):
    n_s = cols.shape[0]
    n_k = wy.shape[1]
    tot = _column_sums(wy, cols)
    for qi in prange(rows.shape[0]):
        x, order = _sorted_row(values, rows[qi], cols)
        left = np.zeros(n_k)
        best = _NEG_INF
        best_t = np.float32(np.inf)
        best_left = np.zeros(n_k)
        for j in range(n_s - 1):
            i = order[j]
            c = cols[i]
            for k in range(n_k):
                left[k] += wy[c, k]
            xi = x[i]
            xn = x[order[j + 1]]
            if xn > xi:
                s = _vote_edge(tot, left)
                if s > best:
                    best = s
                    best_t = _midpoint(xi, xn)
                    best_left[:] = left
        score[qi] = best
        thr[qi] = best_t
        _votes(tot, best_left, votes, qi)


@njit(cache=True, nogil=True, inline="always")
def _multi_best(crit, hu, hv, ok, eps, leaves, qi):
    """Best split of a sequence of items with K-column sums ``hu``, ``hv`` (n, K).

    A split before item ``j`` is allowed where ``ok[j]``; the score is summed over the columns
    and the leaves of the best split are written to ``leaves[qi]`` (2, K). Returns
    ``(score, j)`` (``-inf``, ``n`` when no split is allowed; the left leaf then holds every
    item). Right sums are suffix sums, left sums accumulated, as in the two-class kernels.
    """
    n, n_k = hu.shape
    su = np.zeros((n + 1, n_k))
    sv = np.zeros((n + 1, n_k))
    for j in range(n - 1, -1, -1):
        for k in range(n_k):
            su[j, k] = su[j + 1, k] + hu[j, k]
            sv[j, k] = sv[j + 1, k] + hv[j, k]
    ul = np.zeros(n_k)
    vl = np.zeros(n_k)
    best = _NEG_INF
    best_j = n
    for k in range(n_k):
        leaves[qi, 0, k] = _leaf(crit, su[0, k], sv[0, k], eps)
        leaves[qi, 1, k] = 0.0
    for j in range(1, n):
        for k in range(n_k):
            ul[k] += hu[j - 1, k]
            vl[k] += hv[j - 1, k]
        if ok[j]:
            sc = 0.0
            for k in range(n_k):
                sc += _score(crit, ul[k], vl[k], su[j, k], sv[j, k])
            if sc > best:
                best = sc
                best_j = j
                for k in range(n_k):
                    leaves[qi, 0, k] = _leaf(crit, ul[k], vl[k], eps)
                    leaves[qi, 1, k] = _leaf(crit, su[j, k], sv[j, k], eps)
    return best, best_j


@njit(cache=True, nogil=True, parallel=True)
def _multi_binned_kernel(bins, rows, cols, u, v, crit, eps, score, split, leaves):
    """K-column histogram search: u, v are (N, K) per-example sums."""
    n_k = u.shape[1]
    for qi in prange(rows.shape[0]):
        row = bins[rows[qi]]
        hu = np.zeros((256, n_k))
        hv = np.zeros((256, n_k))
        for i in range(cols.shape[0]):
            c = cols[i]
            b = np.intp(row[c])
            for k in range(n_k):
                hu[b, k] += u[c, k]
                hv[b, k] += v[c, k]
        # a split lies between two consecutive non-empty bins
        ok = np.zeros(256, dtype=np.bool_)
        seen = False
        for b in range(256):
            mass = 0.0
            for k in range(n_k):
                mass += hu[b, k] + hv[b, k] if crit == 2 else hu[b, k]
            if mass > 0.0:
                ok[b] = seen
                seen = True
        best, j = _multi_best(crit, hu, hv, ok, eps, leaves, qi)
        score[qi] = best
        split[qi] = j


@njit(cache=True, nogil=True, parallel=True)
def _multi_exact_kernel(values, rows, cols, u, v, crit, eps, score, thr, leaves):
    """K-column exact search: every threshold between two distinct values."""
    n_s = cols.shape[0]
    n_k = u.shape[1]
    for qi in prange(rows.shape[0]):
        x, order = _sorted_row(values, rows[qi], cols)
        hu = np.empty((n_s, n_k))
        hv = np.empty((n_s, n_k))
        ok = np.zeros(n_s, dtype=np.bool_)
        for j in range(n_s):
            c = cols[order[j]]
            for k in range(n_k):
                hu[j, k] = u[c, k]
                hv[j, k] = v[c, k]
            if j > 0:
                ok[j] = x[order[j]] > x[order[j - 1]]
        best, j = _multi_best(crit, hu, hv, ok, eps, leaves, qi)
        score[qi] = best
        thr[qi] = _midpoint(x[order[j - 1]], x[order[j]]) if j < n_s else np.float32(np.inf)


# --------------------------------------------------------------------------------------------
# results


class _Ranked:
    """A per-feature result whose ``score`` ranks the features (larger is better)."""

    score: np.ndarray

    def best(self) -> int:
        """Position (into ``feature_ids``) of the best feature; ``-1`` if no feature can split."""
        if self.score.size == 0 or not np.isfinite(self.score).any():
            return -1
        return int(np.argmax(self.score))


@dataclass
class StumpSearch(_Ranked):
    """Per-feature result of a stump search.

    Attributes
    ----------
    feature_ids : ndarray of shape (Q,), int64
        Rows of ``values`` that were searched, in order.
    score : ndarray of shape (Q,), float64
        Criterion score (larger is better); ``-inf`` when the feature has no split.
    threshold : ndarray of shape (Q,), float32
        Real threshold: go left iff ``value < threshold`` (``+inf`` when there is no split; for a
        binned search without edges, the split bin itself). Unused for categorical splits.
    split_bin : ndarray of shape (Q,), int32 or None
        Binned searches: go left iff ``bin < split_bin`` (256 when there is no split).
    left_value, right_value : ndarray of shape (Q,), float64
        Leaf values of the weak hypothesis (discrete: -polarity and +polarity).
    subset : ndarray of shape (Q, 8), uint32 or None
        Categorical searches: code ``c`` goes left iff bit ``c`` is set.
    criterion : str
    """

    feature_ids: np.ndarray
    score: np.ndarray
    threshold: np.ndarray
    left_value: np.ndarray
    right_value: np.ndarray
    criterion: str
    split_bin: np.ndarray | None = None
    subset: np.ndarray | None = None

    @property
    def polarity(self) -> np.ndarray:
        """Sign of the right leaf (discrete criterion: +1 means 'value >= threshold -> +1')."""
        return np.where(self.right_value >= self.left_value, 1, -1).astype(np.int8)

    @property
    def valid(self) -> np.ndarray:
        """Features that have a split."""
        return np.isfinite(self.score)


@dataclass
class HistogramSearch(_Ranked):
    """Per-feature result of :func:`search_histograms` (Real AdaBoost domain partitioning).

    ``thresholds[q, :n_bounds[q]]`` are the strictly increasing real thresholds of feature ``q``
    (value ``v`` falls in part ``j`` = number of thresholds ``<= v``); ``values[q, :n_bounds[q]+1]``
    are the part values ``1/2 ln((W+ + eps)/(W- + eps))``; ``split_bins`` the same boundaries in
    bin units (bin < boundary). ``score = W - Z``.
    """

    feature_ids: np.ndarray
    score: np.ndarray
    thresholds: np.ndarray
    split_bins: np.ndarray
    n_bounds: np.ndarray
    values: np.ndarray


@dataclass
class MulticlassStumpSearch(_Ranked):
    """Per-feature result of :func:`search_multiclass_stumps`.

    ``score`` is the multi-class edge ``sum_k |sum_i w_ik Y_ik v_k phi(x_i)|`` with
    ``phi = -1`` left, ``+1`` right; ``votes[q]`` the vote vector ``v`` (K,) in {-1, +1}.
    """

    feature_ids: np.ndarray
    score: np.ndarray
    threshold: np.ndarray
    votes: np.ndarray
    split_bin: np.ndarray | None = None


# --------------------------------------------------------------------------------------------
# validation helpers


def _check_ids(ids, n: int, name: str) -> tuple[np.ndarray, bool]:
    """Validated int64 ids and whether they are exactly ``arange(n)``."""
    if ids is None:
        return np.arange(n, dtype=np.int64), True
    arr = check_array(ids, name, ndim=1, allow_empty=False)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integer ids, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= n:
        raise ValueError(f"{name}: ids must be in [0, {n}), got range [{arr.min()}, {arr.max()}]")
    # all columns in order: the kernels can then read rows contiguously
    full = arr.size == n and arr[0] == 0 and arr[-1] == n - 1 and bool((np.diff(arr) == 1).all())
    return arr, full


def _check_block(values, response, weights, feature_ids, sample_ids, *, allowed_dtypes,
                 finite=True):
    """Validated block; ``finite=False`` leaves the NaN / infinity check of float ``values`` to
    the caller (:func:`search_stumps` has its kernel flag the rows, which reads them anyway)."""
    if not isinstance(values, np.ndarray):
        values = np.asarray(values)
    if values.dtype not in allowed_dtypes:
        values = check_array(values, "values", ndim=2, dtype=np.float32, finite=finite)
    else:
        values = check_array(values, "values", ndim=2, finite=finite)
    if not values.flags.c_contiguous:
        values = np.ascontiguousarray(values)
    n_all = values.shape[1]
    r = check_array(response, "response", ndim=(1, 2), dtype=np.float64)
    w = check_array(weights, "weights", ndim=(1, 2), dtype=np.float64)
    if r.shape[0] != n_all:
        raise ValueError(f"response: has {r.shape[0]} entries but values has {n_all} columns")
    if w.shape[0] != n_all:
        raise ValueError(f"weights: has {w.shape[0]} entries but values has {n_all} columns")
    if r.shape != w.shape:
        raise ValueError(f"response {r.shape} and weights {w.shape} must have the same shape")
    if (w < 0).any():
        raise ValueError("weights: negative weights are not allowed")
    rows, _ = _check_ids(feature_ids, values.shape[0], "feature_ids")
    cols, full = _check_ids(sample_ids, n_all, "sample_ids")
    return values, r, w, rows, cols, full


def _check_criterion(criterion: str, r: np.ndarray) -> int:
    if criterion not in CRITERIA:
        raise ValueError(f"criterion: expected one of {sorted(CRITERIA)}, got {criterion!r}")
    if criterion in ("discrete", "real") and not np.all(np.abs(r) == 1.0):
        raise ValueError(f"response: the {criterion!r} criterion needs labels in {{-1, +1}}")
    return CRITERIA[criterion]


_SMALL_WORK = 1 << 20


def _threads_for(threads: int | None, work: int) -> int | None:
    """All threads for large searches; one for small ones (``threads=None`` only), where waking
    a second thread costs more than it saves."""
    if threads is None and work < _SMALL_WORK:
        return 1
    return threads


def _uv(crit: int, r: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-example sums accumulated by the kernels (see the scalar helpers)."""
    if crit == 2:
        return np.where(r > 0, w, 0.0), np.where(r < 0, w, 0.0)
    return w, w * r


def default_smoothing(weights: np.ndarray, n_used: int) -> float:
    """Real AdaBoost's smoothing ``eps = W / (2 S)`` (W: total weight, S: examples used).

    Parameters
    ----------
    weights : ndarray
        The weights of the examples used (any shape; summed).
    n_used : int
        Examples used ``S`` (taken as at least 1).

    Returns
    -------
    float
    """
    return float(weights.sum()) / (2.0 * max(n_used, 1))


# --------------------------------------------------------------------------------------------
# public searches


def search_stumps(
    values: np.ndarray,
    response: np.ndarray,
    weights: np.ndarray,
    *,
    criterion: str = "regression",
    edges: np.ndarray | None = None,
    feature_ids: np.ndarray | None = None,
    sample_ids: np.ndarray | None = None,
    smoothing: float | None = None,
    threads: int | None = None,
) -> StumpSearch:
    """Best weighted stump of every feature (row) of ``values``.

    With K-column ``response`` and ``weights`` (AdaBoost.MH's real and gentle learners) the
    partition is shared by the columns, each side gets one leaf value per column and the score
    is the sum over the columns of the criterion.

    Parameters
    ----------
    values : ndarray of shape (Q_all, N_all)
        float32 raw values (exact search) or uint8 bins (binned search).
    response : ndarray of shape (N_all,) or (N_all, K)
        Labels in {-1, +1} (``"discrete"``, ``"real"``) or a real working response.
    weights : ndarray of shape (N_all,) or (N_all, K)
        Non-negative example weights.
    criterion : {"discrete", "regression", "real"}
        See the module docstring.
    edges : ndarray of shape (Q_all, E), float32, optional
        Binned search only: the bin edges of the rows of ``values`` (from
        :func:`vjboost.boost.binning.compute_bin_edges`), used to express thresholds as raw values.
    feature_ids : ndarray of shape (Q,), optional
        Rows to search (default: all).
    sample_ids : ndarray of shape (S,), optional
        Columns (examples) to use (default: all).
    smoothing : float, optional
        ``eps`` of the real criterion (default ``W / (2 S K)``).
    threads : int, optional
        Number of threads (``None``: all).

    Returns
    -------
    StumpSearch
        ``left_value``/``right_value`` of shape (Q,) or (Q, K).

    Examples
    --------
    >>> X = np.array([[0.0, 1.0, 2.0, 3.0]], dtype=np.float32)
    >>> Y = np.array([[1.0, -1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, 1.0]])
    >>> s = search_stumps(X, Y, np.ones((4, 2)) / 8)
    >>> float(s.threshold[0]), s.left_value[0].tolist(), s.right_value[0].tolist()
    (1.5, [1.0, -1.0], [-1.0, 1.0])
    """
    values, r, w, rows, cols, full = _check_block(
        values, response, weights, feature_ids, sample_ids,
        allowed_dtypes=(np.dtype(np.uint8), np.dtype(np.float32)),
        finite=np.ndim(response) != 1,  # the one-column exact kernel flags non-finite rows
    )
    if r.ndim == 2 and criterion not in ("regression", "real"):
        raise ValueError(f"criterion: K-column responses need 'regression' or 'real', got "
                         f"{criterion!r}")
    crit = _check_criterion(criterion, r)
    n_k = 1 if r.ndim == 1 else r.shape[1]
    eps = (default_smoothing(w[cols], cols.size * n_k) if smoothing is None
           else float(smoothing))
    if edges is not None and values.dtype != np.uint8:
        raise ValueError("edges: only used with uint8 (binned) values")
    q = rows.size
    score = np.empty(q)
    u, v = _uv(crit, r, w)
    split = np.empty(q, dtype=np.int32) if values.dtype == np.uint8 else None
    thr = np.empty(q, dtype=np.float32)
    with n_threads(_threads_for(threads, rows.size * cols.size * n_k)):
        if r.ndim == 2:
            leaves = np.empty((q, 2, n_k))
            u, v = np.ascontiguousarray(u), np.ascontiguousarray(v)
            if split is not None:
                _multi_binned_kernel(values, rows, cols, u, v, crit, eps, score, split, leaves)
            else:
                _multi_exact_kernel(values, rows, cols, u, v, crit, eps, score, thr, leaves)
        else:
            leaves = np.empty((q, 2))
            if split is None:
                bad = np.zeros(q, dtype=np.bool_)
                _exact_kernel(values, rows, cols, u, v, crit, eps, score, thr, leaves, bad)
                if bad.any():
                    block = values[rows[bad]][:, cols]
                    n_bad = int(block.size - np.count_nonzero(np.isfinite(block)))
                    raise ValueError(f"values: contains {n_bad} NaN or infinite value(s)")
            else:
                pm = bool(crit != 1 or np.all(np.abs(r) == 1.0))
                neg = (r < 0).astype(np.int32)
                args = (u, v, w, neg, pm, crit, eps, score, split, leaves)
                if full:
                    _binned_full_kernel(values, rows, *args)
                else:
                    _binned_kernel(values, rows, cols, *args)
    if split is not None:
        thr = _bin_thresholds(split, rows, edges, values.shape[0])
    return StumpSearch(rows, score, thr, leaves[:, 0], leaves[:, 1], criterion, split)


def search_categorical(
    codes: np.ndarray,
    response: np.ndarray,
    weights: np.ndarray,
    *,
    criterion: str = "regression",
    feature_ids: np.ndarray | None = None,
    sample_ids: np.ndarray | None = None,
    smoothing: float | None = None,
    threads: int | None = None,
) -> StumpSearch:
    """Best 256-way categorical split of every feature of ``codes``.

    The left side is a subset of the codes (bit ``c`` of ``subset`` set); codes never seen with
    positive weight go right.

    * ``"discrete"``: each code goes to the side of the sign of its ``sum w r`` (negative: left,
      hypothesis -1; otherwise right, +1); score = ``sum_c |sum w r|``.
    * ``"regression"`` / ``"real"``: codes are sorted by their weighted mean response and the best
      prefix is taken, which is optimal for both criteria (concave impurities).

    Parameters
    ----------
    codes : ndarray of shape (Q_all, N_all), uint8 (or integral floats in 0..255)
    response, weights, criterion, feature_ids, sample_ids, smoothing, threads
        As in :func:`search_stumps`.

    Returns
    -------
    StumpSearch
        With ``subset`` set (``threshold`` is unused: ``+inf``). A split with an empty side has
        ``score = -inf``.

    Examples
    --------
    >>> codes = np.array([[3, 3, 7, 7, 5, 7]], dtype=np.uint8)
    >>> y = np.array([-1.0, -1.0, 1.0, 1.0, -1.0, 1.0])
    >>> s = search_categorical(codes, y, np.full(6, 1 / 6), criterion="discrete")
    >>> [c for c in range(32) if s.subset[0, 0] >> c & 1]   # the codes going left
    [3, 5]
    >>> s.left_value.tolist(), s.right_value.tolist(), s.score.tolist()
    ([-1.0], [1.0], [1.0])
    """
    codes = np.asarray(codes)
    if codes.dtype != np.uint8:
        codes = check_array(codes, "codes", ndim=2, dtype=np.float64)
        if ((codes < 0) | (codes > 255) | (codes != np.round(codes))).any():
            raise ValueError("codes: categorical codes must be integers in 0..255")
        codes = codes.astype(np.uint8)
    codes, r, w, rows, cols, _ = _check_block(
        codes, response, weights, feature_ids, sample_ids, allowed_dtypes=(np.dtype(np.uint8),)
    )
    crit = _check_criterion(criterion, r)
    eps = default_smoothing(w[cols], cols.size) if smoothing is None else float(smoothing)
    q = rows.size
    score = np.empty(q)
    leaves = np.empty((q, 2))
    subset = np.zeros((q, 8), dtype=np.uint32)
    with n_threads(_threads_for(threads, rows.size * cols.size)):
        u, v = _uv(crit, r, w)
        _categorical_kernel(codes, rows, cols, u, v, crit, eps, score, subset, leaves)
    thr = np.full(q, np.inf, dtype=np.float32)
    return StumpSearch(rows, score, thr, leaves[:, 0], leaves[:, 1], criterion, None, subset)


def search_histograms(
    bins: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray,
    *,
    n_parts: int = 8,
    edges: np.ndarray | None = None,
    feature_ids: np.ndarray | None = None,
    sample_ids: np.ndarray | None = None,
    smoothing: float | None = None,
    threads: int | None = None,
) -> HistogramSearch:
    """Real AdaBoost's domain-partitioning learner on each feature of a binned matrix.

    Each feature's bins are grouped into ``n_parts`` runs of consecutive bins of (nearly) equal
    bin count, so with quantile bins the parts hold similar numbers of examples; part ``j`` gets
    ``h_j = 1/2 ln((W+_j + eps)/(W-_j + eps))``, and the score is ``W - Z`` with
    ``Z = 2 sum_j sqrt(W+_j W-_j)``.

    Parameters
    ----------
    bins : ndarray of shape (Q_all, N_all), uint8
        Binned values.
    labels : ndarray of shape (N_all,)
        Labels in {-1, +1}.
    weights : ndarray of shape (N_all,)
    n_parts : int, default=8
        Number of parts (2 to 256).
    edges : ndarray of shape (Q_all, E), float32, optional
        Bin edges, to express part boundaries as raw thresholds (else thresholds are in bin units).
    feature_ids, sample_ids, smoothing, threads
        As in :func:`search_stumps`.

    Examples
    --------
    >>> from vjboost.boost.binning import bin_values, compute_bin_edges
    >>> X = np.arange(8, dtype=np.float32)[None, :]
    >>> edges = compute_bin_edges(X, 8)   # one bin per value
    >>> y = np.array([-1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, 1.0])   # no single threshold fits
    >>> h = search_histograms(bin_values(X, edges), y, np.full(8, 1 / 8), n_parts=4, edges=edges)
    >>> h.thresholds.tolist(), np.round(h.values, 3).tolist(), h.score.tolist()
    ([[1.5, 3.5, 5.5]], [[-0.805, 0.805, -0.805, 0.805]], [1.0])
    """
    bins, r, w, rows, cols, _ = _check_block(
        bins, labels, weights, feature_ids, sample_ids, allowed_dtypes=(np.dtype(np.uint8),)
    )
    if bins.dtype != np.uint8:
        raise TypeError("bins: expected uint8 binned values")
    _check_criterion("real", r)
    if isinstance(n_parts, bool) or not isinstance(n_parts, (int, np.integer)) or not (
        2 <= n_parts <= 256
    ):
        raise ValueError(f"n_parts: expected an integer in [2, 256], got {n_parts!r}")
    eps = default_smoothing(w[cols], cols.size) if smoothing is None else float(smoothing)
    if edges is not None:
        e = _check_edges(edges, n_rows=bins.shape[0])
        nb = np.isfinite(e).sum(axis=1).astype(np.int64) + 1
    else:
        e = None
        nb = np.full(bins.shape[0], 256, dtype=np.int64)
    q = rows.size
    score = np.empty(q)
    bounds = np.full((q, n_parts - 1), 256, dtype=np.int64)
    hvals = np.zeros((q, n_parts))
    with n_threads(_threads_for(threads, rows.size * cols.size)):
        wp, wn = _uv(2, r, w)
        _histogram_kernel(bins, rows, cols, wp, wn, nb, int(n_parts), eps, score, bounds, hvals)
    n_bounds = (bounds < 256).sum(axis=1)
    thr = np.full(bounds.shape, np.inf, dtype=np.float32)
    ok = bounds < 256
    if e is not None:
        rr = np.broadcast_to(rows[:, None], bounds.shape)
        thr[ok] = e[rr[ok], bounds[ok] - 1]
    else:
        thr[ok] = bounds[ok]
    return HistogramSearch(rows, score, thr, bounds.astype(np.int32), n_bounds, hvals)


def search_multiclass_stumps(
    values: np.ndarray,
    weighted_labels: np.ndarray,
    *,
    edges: np.ndarray | None = None,
    feature_ids: np.ndarray | None = None,
    sample_ids: np.ndarray | None = None,
    threads: int | None = None,
) -> MulticlassStumpSearch:
    """AdaBoost.MH stumps: best threshold and vote vector of every feature.

    Parameters
    ----------
    values : ndarray of shape (Q_all, N_all)
        float32 (exact) or uint8 (binned).
    weighted_labels : ndarray of shape (N_all, K)
        ``w_ik * Y_ik`` with ``Y_ik`` = +1 if example ``i`` is of class ``k``, else -1.
    edges, feature_ids, sample_ids, threads
        As in :func:`search_stumps`.

    Examples
    --------
    >>> X = np.array([[0, 1, 2, 3, 4, 5], [5, 0, 4, 1, 3, 2]], dtype=np.float32)
    >>> labels = np.array([0, 0, 1, 1, 2, 2])
    >>> Y = np.where(labels[:, None] == np.arange(3), 1.0, -1.0)
    >>> m = search_multiclass_stumps(X, Y / 18)   # uniform weights over the 6 x 3 pairs
    >>> m.best(), m.threshold.tolist(), np.round(m.score, 4).tolist()
    (0, [1.5, 1.5], [0.5556, 0.3333])
    >>> m.votes[0].tolist()   # left of 1.5 votes for class 0, right for classes 1 and 2
    [-1.0, 1.0, 1.0]
    """
    wy = check_array(weighted_labels, "weighted_labels", ndim=2, dtype=np.float64)
    dummy = np.ones(wy.shape[0])
    values, _, _, rows, cols, _ = _check_block(
        values, dummy, dummy, feature_ids, sample_ids,
        allowed_dtypes=(np.dtype(np.uint8), np.dtype(np.float32)),
    )
    wy = np.ascontiguousarray(wy)
    q, k = rows.size, wy.shape[1]
    score = np.empty(q)
    votes = np.empty((q, k))
    with n_threads(_threads_for(threads, rows.size * cols.size)):
        if values.dtype == np.uint8:
            split = np.empty(q, dtype=np.int32)
            _multiclass_binned_kernel(values, rows, cols, wy, score, split, votes)
            thr = _bin_thresholds(split, rows, edges, values.shape[0])
            return MulticlassStumpSearch(rows, score, thr, votes, split)
        thr = np.empty(q, dtype=np.float32)
        _multiclass_exact_kernel(values, rows, cols, wy, score, thr, votes)
    return MulticlassStumpSearch(rows, score, thr, votes)


def _check_edges(edges: Any, *, n_rows: int) -> np.ndarray:
    """The bin edges of the ``n_rows`` rows of a binned block, as float32 ``(n_rows, E)``."""
    e = np.asarray(edges, dtype=np.float32)
    if e.ndim != 2 or e.shape[0] != n_rows:
        raise ValueError(f"edges: expected shape ({n_rows}, E), got {e.shape}")
    return e


def _bin_thresholds(split: np.ndarray, rows: np.ndarray, edges: Any, n_rows: int) -> np.ndarray:
    """Raw thresholds of split bins (``+inf`` where there is no split; bin units w/o edges)."""
    ok = split < 256
    thr = np.full(split.shape, np.inf, dtype=np.float32)
    if edges is None:
        thr[ok] = split[ok]
        return thr
    e = _check_edges(edges, n_rows=n_rows)
    thr[ok] = e[rows[ok], split[ok] - 1]
    return thr


def search_splits(
    values: np.ndarray,
    response: np.ndarray,
    weights: np.ndarray,
    *,
    criterion: str,
    categorical: Any = None,
    edges: np.ndarray | None = None,
    feature_ids: np.ndarray | None = None,
    sample_ids: np.ndarray | None = None,
    threads: int | None = None,
) -> StumpSearch:
    """The split search of every weak learner: ordered and categorical features of one block.

    Two-class problems (``(N,)`` response and weights) search ordered rows with
    :func:`search_stumps` and categorical rows (MB-LBP codes) with :func:`search_categorical`
    and merge the results in the order of ``feature_ids``. Multi-class problems (``(N, K)``)
    search every row as ordered values: :func:`search_multiclass_stumps` for ``"vote"``
    (AdaBoost.MH's vote vectors; leaves ``-v`` / ``+v``), :func:`search_stumps` for ``"real"``
    and ``"regression"`` (one leaf value per column).

    Parameters
    ----------
    values : ndarray of shape (Q_all, N_all)
        float32 values or uint8 bins (categorical rows: codes).
    response, weights : ndarray of shape (N_all,) or (N_all, K)
    criterion : {"discrete", "real", "regression", "vote"}
    categorical : array-like of bool, shape (Q_all,), optional
        Rows holding categorical codes 0..255.
    edges : ndarray of shape (Q_all, E), optional
        Bin edges of uint8 ``values`` (thresholds are then raw values).
    feature_ids : ndarray of shape (Q,), optional
        Rows to search (default all).
    sample_ids : ndarray of shape (S,), optional
        Columns to use (default all).
    threads : int, optional

    Returns
    -------
    StumpSearch
        One entry per searched row (``feature_ids`` order); ``subset`` is set when a row is
        categorical (zeros for ordered rows), ``split_bin`` for uint8 values.

    Examples
    --------
    >>> X = np.array([[0, 1, 2, 3], [5, 5, 9, 9]], dtype=np.float32)
    >>> s = search_splits(X, np.array([-1.0, -1.0, 1.0, 1.0]), np.full(4, 0.25),
    ...                   criterion="regression", categorical=[False, True])
    >>> s.score.tolist(), int(s.subset[1, 0])
    ([1.0, 1.0], 32)
    """
    values = np.asarray(values)
    w = np.asarray(weights, dtype=np.float64)
    r = np.asarray(response, dtype=np.float64)
    kw = dict(feature_ids=feature_ids, sample_ids=sample_ids, threads=threads)
    if w.ndim == 2:
        if criterion == "vote":
            m = search_multiclass_stumps(values, w * r, edges=edges, **kw)
            return StumpSearch(m.feature_ids, m.score, m.threshold, -m.votes, m.votes, criterion,
                               m.split_bin)
        return search_stumps(values, r, w, criterion=criterion, edges=edges, **kw)
    rows = (np.arange(values.shape[0], dtype=np.int64) if feature_ids is None
            else np.asarray(feature_ids, dtype=np.int64))
    cat = None if categorical is None else np.asarray(categorical, dtype=bool)
    if cat is not None and cat.shape != (values.shape[0],):
        raise ValueError(f"categorical: expected shape ({values.shape[0]},), got {cat.shape}")
    if cat is None or not cat[rows].any():
        return search_stumps(values, r, w, criterion=criterion, edges=edges, **kw)
    is_cat = cat[rows]
    n = rows.size
    out = StumpSearch(rows.copy(), np.empty(n), np.full(n, np.inf, np.float32), np.empty(n),
                      np.empty(n), criterion,
                      np.full(n, 256, np.int32) if values.dtype == np.uint8 else None,
                      np.zeros((n, 8), np.uint32))
    for flag in (False, True):
        pos = np.flatnonzero(is_cat == flag)
        if pos.size == 0:
            continue
        sub = rows[pos]
        if flag:
            if values.dtype == np.uint8:
                res = search_categorical(values, r, w, criterion=criterion, feature_ids=sub,
                                         sample_ids=sample_ids, threads=threads)
            else:  # codes delivered as float32 by the family kernels
                codes = np.ascontiguousarray(values[sub])
                if ((codes < 0) | (codes > 255) | (codes != np.round(codes))).any():
                    raise ValueError("values: categorical rows must hold integer codes 0..255")
                res = search_categorical(codes.astype(np.uint8), r, w, criterion=criterion,
                                         sample_ids=sample_ids, threads=threads)
            out.subset[pos] = res.subset
        else:
            res = search_stumps(values, r, w, criterion=criterion, edges=edges,
                                feature_ids=sub, sample_ids=sample_ids, threads=threads)
            if res.split_bin is not None:
                out.split_bin[pos] = res.split_bin
        out.score[pos] = res.score
        out.threshold[pos] = res.threshold
        out.left_value[pos] = res.left_value
        out.right_value[pos] = res.right_value
    return out
