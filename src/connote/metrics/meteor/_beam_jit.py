"""METEOR's alignment after the candidates (``Aligner.align``), compiled with numba, step for step.

``_align`` takes the candidate matches as an integer array (``start, length, match_start,
match_length, exact`` per row, in stage order) with the coverage counts, fixes the unambiguous
matches, builds the options (hypothesis words as 64-bit masks, ``W`` words per mask) and runs
``_beam_search``, whose state is integer arrays: per partial alignment its packed key, reference
index, end of the last match, used-word mask and a node of a shared chain pool (chosen option,
parent node). Every branch, the pruning threshold (the ``beam``-th smallest key so far, kept in a
max-heap and read at the same points), the stable sort (a merge sort, as ``list.sort``) and the order
in which children are appended mirror the pure-Python search in ``_align.py``, so the chosen
alignment is identical; ``tests/metrics/test_meteor.py`` compares the two on the VIST corpus and on
generated text.

numba is optional: without it (or with ``CONNOTE_METEOR_JIT=0``, or ``Aligner(jit=False)``) the
pure-Python search runs. The first compile is stored in numba's cache (``cache=True``); later
processes load it (numba's start, ~0.3-0.4 s, once per process), which METEOR does only for batches
of at least ``MIN_PAIRS`` pairs; once started, every alignment in the process uses it.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np

# numba is imported (and the search compiled, or loaded from numba's cache) on first use only.
AVAILABLE = importlib.util.find_spec("numba") is not None
# Used by default when numba is installed; CONNOTE_METEOR_JIT=0 forces the pure-Python search.
ENABLED = AVAILABLE and os.environ.get("CONNOTE_METEOR_JIT", "1").strip().lower() not in ("0", "false", "no", "off")

INT64_MAX = np.iinfo(np.int64).max
# Starting numba costs ~0.35 s once per process and the compiled search saves ~0.6 ms per pair, so
# METEOR starts it only for batches of at least this many pairs (or when it is already started).
MIN_PAIRS = 600


def _stable_order(keys, n, out, buf):  # pragma: no cover - compiled
    """``out[:n]`` = ``argsort(keys[:n], kind="mergesort")`` (stable), with no allocation."""
    for e in range(n):
        out[e] = e
    # insertion-sort runs of 8, then merge them bottom-up
    run = 8
    for lo in range(0, n, run):
        hi = min(lo + run, n)
        for e in range(lo + 1, hi):
            x = out[e]
            v = keys[x]
            q = e
            while q > lo and keys[out[q - 1]] > v:
                out[q] = out[q - 1]
                q -= 1
            out[q] = x
    width = run
    src = out
    dst = buf
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            a = lo
            b = mid
            o = lo
            while a < mid and b < hi:
                if keys[src[b]] < keys[src[a]]:
                    dst[o] = src[b]
                    b += 1
                else:
                    dst[o] = src[a]
                    a += 1
                o += 1
            while a < mid:
                dst[o] = src[a]
                a += 1
                o += 1
            while b < hi:
                dst[o] = src[b]
                b += 1
                o += 1
        src, dst = dst, src
        width *= 2
    if src is not out:
        for e in range(n):
            out[e] = src[e]


def _heap_add(heap, size, k, v):  # pragma: no cover - compiled
    """Keep in ``heap`` (a max-heap) the ``k`` smallest values added; returns the new size."""
    if size < k:
        q = size
        heap[q] = v
        while q > 0:
            parent = (q - 1) >> 1
            if heap[parent] >= heap[q]:
                break
            heap[parent], heap[q] = heap[q], heap[parent]
            q = parent
        return size + 1
    if v >= heap[0]:
        return size
    heap[0] = v
    q = 0
    while True:
        left = 2 * q + 1
        if left >= size:
            break
        big = left
        if left + 1 < size and heap[left + 1] > heap[left]:
            big = left + 1
        if heap[q] >= heap[big]:
            break
        heap[q], heap[big] = heap[big], heap[q]
        q = big
    return size


def _beam_search(n2, beam_size, prune, used2, fixed_has, fixed_start, fixed_len, fixed_ms, fixed_ml,
                 fixed_wt, opt_ptr, opt_mask, opt_off, opt_w, opt_ms, opt_mend, opt_nidx, maxw, wc,
                 init_mask):  # pragma: no cover - compiled (the pure-Python twin is Aligner.align)
    no_limit = INT64_MAX
    W = init_mask.shape[0]
    max_opts = 0
    for i in range(n2):
        c = opt_ptr[i + 1] - opt_ptr[i]
        if c > max_opts:
            max_opts = c
    cap = beam_size * (max_opts + 1) + beam_size + 2
    bk = np.empty(cap, np.int64)
    bi = np.empty(cap, np.int64)
    bl = np.empty(cap, np.int64)
    bc = np.empty(cap, np.int64)
    bu = np.empty((cap, W), np.uint64)
    pk = np.empty(cap, np.int64)
    pi = np.empty(cap, np.int64)
    pl = np.empty(cap, np.int64)
    pc = np.empty(cap, np.int64)
    pu = np.empty((cap, W), np.uint64)
    tmp = np.empty(cap, np.int64)
    order = np.empty(cap, np.int64)
    heap = np.empty(beam_size + 1, np.int64)
    node_cap = 1024
    node_opt = np.empty(node_cap, np.int64)
    node_par = np.empty(node_cap, np.int64)
    n_nodes = 0

    n = 1
    bk[0] = 0
    bi[0] = 0
    bl[0] = -1
    bc[0] = -1
    for w in range(W):
        bu[0, w] = init_mask[w]
    i = 0
    while i <= n2:
        _stable_order_jit(bk, n, order, tmp)
        m_prev = n if n < beam_size else beam_size
        for t in range(m_prev):
            o = order[t]
            pk[t] = bk[o]
            pi[t] = bi[o]
            pl[t] = bl[o]
            pc[t] = bc[o]
            for w in range(W):
                pu[t, w] = bu[o, w]
        n = 0
        if i < n2 and (used2[i] or opt_ptr[i + 1] == opt_ptr[i]):
            idx0 = pi[0]
            last0 = pl[0]
            same = True
            for t in range(m_prev):
                if pi[t] != idx0 or pl[t] != last0:
                    same = False
                    break
            if same:
                idx = idx0
                last = last0
                pos = i
                delta = 0
                ok = True
                while pos < n2:
                    if pos < idx:
                        pos += 1
                    elif used2[pos]:
                        if not fixed_has[pos]:
                            ok = False
                            break
                        if last != -1 and fixed_ms[pos] != last:
                            delta += wc
                        delta += abs(fixed_start[pos] - fixed_ms[pos]) - fixed_wt[pos]
                        idx = fixed_start[pos] + fixed_len[pos]
                        last = fixed_ms[pos] + fixed_ml[pos]
                        pos += 1
                    elif opt_ptr[pos + 1] == opt_ptr[pos]:
                        if last != -1:
                            delta += wc
                        idx = pos + 1
                        last = -1
                        pos += 1
                    else:
                        break
                if ok:
                    for t in range(m_prev):
                        bk[t] = pk[t] + delta
                        bi[t] = idx
                        bl[t] = last
                        bc[t] = pc[t]
                        for w in range(W):
                            bu[t, w] = pu[t, w]
                    n = m_prev
                    i = pos
                    continue
        if i == n2:
            for t in range(m_prev):
                bk[n] = pk[t] + wc if pl[t] != -1 else pk[t]
                bi[n] = pi[t]
                bl[n] = pl[t]
                bc[n] = pc[t]
                for w in range(W):
                    bu[n, w] = pu[t, w]
                n += 1
            break
        o0 = opt_ptr[i]
        o1 = opt_ptr[i + 1]
        if o0 == o1 and not used2[i]:
            j = i + 1
            while j < n2 and not used2[j] and opt_ptr[j + 1] == opt_ptr[j]:
                j += 1
            for t in range(m_prev):
                if i < pi[t] < j:
                    j = pi[t]
            for t in range(m_prev):
                if pi[t] > i:
                    bk[n] = pk[t]
                    bi[n] = pi[t]
                    bl[n] = pl[t]
                else:
                    bk[n] = pk[t] + wc if pl[t] != -1 else pk[t]
                    bi[n] = j
                    bl[n] = -1
                bc[n] = pc[t]
                for w in range(W):
                    bu[n, w] = pu[t, w]
                n += 1
            i = j
            continue
        if used2[i]:
            for t in range(m_prev):
                k = pk[t]
                idx = pi[t]
                last = pl[t]
                if i < idx:
                    bk[n] = k
                    bi[n] = idx
                    bl[n] = last
                elif not fixed_has[idx]:
                    continue
                else:
                    if last != -1 and fixed_ms[idx] != last:
                        k += wc
                    bk[n] = k - fixed_wt[idx] + abs(fixed_start[idx] - fixed_ms[idx])
                    bi[n] = fixed_start[idx] + fixed_len[idx]
                    bl[n] = fixed_ms[idx] + fixed_ml[idx]
                bc[n] = pc[t]
                for w in range(W):
                    bu[n, w] = pu[t, w]
                n += 1
        else:
            thr = no_limit
            check_at = beam_size if prune else no_limit
            h_size = 0
            n_heap = 0 if prune else cap
            bound_w = maxw[i]
            for t in range(m_prev):
                k = pk[t]
                idx = pi[t]
                last = pl[t]
                chain = pc[t]
                while n_heap < n:  # the beam_size smallest keys appended so far
                    h_size = _heap_add_jit(heap, h_size, beam_size, bk[n_heap])
                    n_heap += 1
                if n >= check_at:
                    thr = heap[0]  # the beam_size-th smallest of the n keys
                    check_at = n + (beam_size + 1) // 2
                if k - bound_w >= thr:
                    break
                if i < idx:
                    bk[n] = k
                    bi[n] = idx
                    bl[n] = last
                    bc[n] = chain
                    for w in range(W):
                        bu[n, w] = pu[t, w]
                    n += 1
                    continue
                for o in range(o0, o1):
                    clash = False
                    for w in range(W):
                        if pu[t, w] & opt_mask[o, w]:
                            clash = True
                            break
                    if clash:
                        continue
                    if last == -1 or opt_ms[o] == last:
                        c = k - opt_w[o]
                    else:
                        c = k - opt_w[o] + wc  # a jump starts a new chunk
                    if c < thr:
                        if n_nodes == node_cap:
                            node_cap *= 2
                            no2 = np.empty(node_cap, np.int64)
                            np2 = np.empty(node_cap, np.int64)
                            no2[:n_nodes] = node_opt[:n_nodes]
                            np2[:n_nodes] = node_par[:n_nodes]
                            node_opt = no2
                            node_par = np2
                        node_opt[n_nodes] = o
                        node_par[n_nodes] = chain
                        bk[n] = c
                        bi[n] = opt_nidx[o]
                        bl[n] = opt_mend[o]
                        bc[n] = n_nodes
                        for w in range(W):
                            bu[n, w] = pu[t, w] | opt_mask[o, w]
                        n_nodes += 1
                        n += 1
                    k += opt_off[o]  # the jar adds the child's distance to the parent
                if last != -1:
                    k += wc
                if k < thr:
                    bk[n] = k
                    bi[n] = idx + 1
                    bl[n] = -1
                    bc[n] = chain
                    for w in range(W):
                        bu[n, w] = pu[t, w]
                    n += 1
        if n == 0:
            bk[0] = pk[0]
            bi[0] = pi[0]
            bl[0] = pl[0]
            bc[0] = pc[0]
            for w in range(W):
                bu[0, w] = pu[0, w]
            n = 1
        i += 1
    best = 0
    for t in range(1, n):
        if bk[t] < bk[best]:  # the first of the smallest keys, as the stable sort puts it
            best = t
    chain = bc[best]
    count = 0
    c = chain
    while c != -1:
        count += 1
        c = node_par[c]
    out = np.empty(count, np.int64)
    c = chain
    for q in range(count):
        out[q] = node_opt[c]
        c = node_par[c]
    return out


def _align(n1, n2, cand, cov1, cov2, beam_size, prune, wc, wm):  # pragma: no cover - compiled
    """``Aligner.align`` after the candidates: ``cand`` rows are ``(start, length, match_start,
    match_length, exact)`` in stage order (by reference position, then module order). Returns the
    rows chosen (fixed ones included), by reference position."""
    n_cand = cand.shape[0]
    W = max(1, (n1 + 63) >> 6)
    ptr = np.zeros(n2 + 1, np.int64)
    for r in range(n_cand):
        ptr[cand[r, 0] + 1] += 1
    for i in range(n2):
        ptr[i + 1] += ptr[i]
    used2 = np.zeros(n2, np.bool_)
    fixed_has = np.zeros(n2, np.bool_)
    fixed_row = np.full(n2, -1, np.int64)
    fixed_start = np.zeros(n2, np.int64)
    fixed_len = np.zeros(n2, np.int64)
    fixed_ms = np.zeros(n2, np.int64)
    fixed_ml = np.zeros(n2, np.int64)
    fixed_wt = np.zeros(n2, np.int64)
    init = np.zeros(W, np.uint64)
    one = np.uint64(1)
    for j in range(n2):
        if ptr[j + 1] - ptr[j] == 1:
            r = ptr[j]
            ln = cand[r, 1]
            ms = cand[r, 2]
            ml = cand[r, 3]
            ok = True
            for k in range(ln):
                if cov2[j + k] != 1:
                    ok = False
                    break
            if ok:
                for k in range(ml):
                    if cov1[ms + k] != 1:
                        ok = False
                        break
            if ok:
                fixed_has[j] = True
                fixed_row[j] = r
                fixed_start[j] = cand[r, 0]
                fixed_len[j] = ln
                fixed_ms[j] = ms
                fixed_ml[j] = ml
                wgt = (ml + ln) if cand[r, 4] else (ml // 2 + ln // 2)
                fixed_wt[j] = wgt * wm
                for k in range(ln):
                    used2[j + k] = True
                for k in range(ml):
                    b = ms + k
                    init[b >> 6] |= one << np.uint64(b & 63)
    # the options: candidates at positions not fixed whose reference words are all free
    opt_ptr = np.zeros(n2 + 1, np.int64)
    opt_row = np.empty(n_cand, np.int64)
    opt_mask = np.zeros((n_cand, W), np.uint64)
    opt_off = np.empty(n_cand, np.int64)
    opt_w = np.empty(n_cand, np.int64)
    opt_ms = np.empty(n_cand, np.int64)
    opt_mend = np.empty(n_cand, np.int64)
    opt_nidx = np.empty(n_cand, np.int64)
    maxw = np.zeros(n2, np.int64)
    n_opt = 0
    for i in range(n2):
        best_w = 0
        if not used2[i]:
            for r in range(ptr[i], ptr[i + 1]):
                ln = cand[r, 1]
                ms = cand[r, 2]
                ml = cand[r, 3]
                skip = False
                for k in range(1, ln):
                    if used2[i + k]:
                        skip = True
                        break
                if skip:
                    continue
                w = ((ml + ln) if cand[r, 4] else (ml // 2 + ln // 2)) * wm
                if w > best_w:
                    best_w = w
                opt_row[n_opt] = r
                for k in range(ml):
                    b = ms + k
                    opt_mask[n_opt, b >> 6] |= one << np.uint64(b & 63)
                opt_off[n_opt] = abs(i - ms)
                opt_w[n_opt] = w
                opt_ms[n_opt] = ms
                opt_mend[n_opt] = ms + ml
                opt_nidx[n_opt] = i + ln
                n_opt += 1
        opt_ptr[i + 1] = n_opt
        maxw[i] = best_w
    picked = _beam_search_jit(n2, beam_size, prune, used2, fixed_has, fixed_start, fixed_len, fixed_ms,
                              fixed_ml, fixed_wt, opt_ptr, opt_mask[:n_opt], opt_off[:n_opt], opt_w[:n_opt],
                              opt_ms[:n_opt], opt_mend[:n_opt], opt_nidx[:n_opt], maxw, wc, init)
    # rows chosen, by reference position (fixed ones and the search's picks never share a start)
    at = np.full(n2, -1, np.int64)
    for j in range(n2):
        if fixed_has[j]:
            at[j] = fixed_row[j]
    for q in range(picked.shape[0]):
        r = opt_row[picked[q]]
        at[cand[r, 0]] = r
    count = 0
    for j in range(n2):
        if at[j] >= 0:
            count += 1
    out = np.empty(count, np.int64)
    count = 0
    for j in range(n2):
        if at[j] >= 0:
            out[count] = at[j]
            count += 1
    return out


_compiled: list = []
_beam_search_jit = None
_stable_order_jit = None
_heap_add_jit = None


def compiled():
    """The compiled search (None where numba cannot be imported); compiles or loads on first call."""
    global AVAILABLE
    if not _compiled:
        try:
            from numba import njit

            global _beam_search_jit, _stable_order_jit, _heap_add_jit
            _stable_order_jit = njit(cache=True, nogil=True)(_stable_order)
            _heap_add_jit = njit(cache=True, nogil=True)(_heap_add)
            _beam_search_jit = njit(cache=True, nogil=True)(_beam_search)
            _compiled.append(njit(cache=True, nogil=True)(_align))
        except Exception:  # pragma: no cover - a numba that does not import with this numpy
            AVAILABLE = False
            _compiled.append(None)
    return _compiled[0]


def started() -> bool:
    """Whether the compiled search is loaded in this process (then every alignment uses it)."""
    return bool(_compiled) and _compiled[0] is not None


def warm() -> float:
    """Compile (first use ever) or load numba's cached machine code now; returns the seconds it took."""
    import time

    t = time.perf_counter()
    fn = compiled() if AVAILABLE else None
    if fn is not None:
        fn(2, 2, np.array([[0, 1, 0, 1, 1], [1, 1, 1, 1, 0], [1, 1, 0, 1, 1]], np.int64),
           np.array([2, 1], np.int64), np.array([1, 2], np.int64), 40, True, 1 << 26, 1 << 46)
    return time.perf_counter() - t
