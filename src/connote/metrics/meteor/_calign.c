/* METEOR 1.5 alignment of many sentence pairs, compiled: candidates, fixed matches, beam search, counts.
 *
 * The C twin of ``Aligner.candidates`` + ``Aligner.align`` + ``count_alignment`` in ``_align.py``
 * (the reference, which stays the fallback where this module is not built). Every branch, the
 * pruning threshold, the stable sort and the order in which candidates and children are appended
 * mirror the Python code, so the chosen alignment is identical; tests/metrics/test_meteor.py
 * compares the two on the VIST corpus and on generated text.
 *
 * Inputs are int64 buffers (NumPy arrays, C order) built by ``_align.batch_counts``: per word of the
 * batch vocabulary its Java hash, stem hash, function-word flag and synsets (CSR); per sentence its
 * word ids, its table phrases (start, length, entry number, paraphrase id; by start, length, entry)
 * and the positions of the paraphrases it contains (paraphrase id, start; sorted); per pair the two
 * sentence numbers. Output: N_STATS int64 per pair (see ``STATS`` in _align.py); a pair whose packed
 * beam keys might not fit 126 bits (never in practice) gets status 1 and is aligned by the Python search.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;
typedef uint64_t u64;
/* beam keys: 128-bit, so that the packed fields (weight, chunks, distance) fit for texts of any practical
 * length (tens of thousands of words) and long pairs stay in this aligner (linear memory) */
typedef __int128 bkey;
#define KEY_MAX ((bkey)(((unsigned __int128)1 << 127) - 1))

enum { EXACT = 0, STEM = 1, SYNONYM = 2, PARAPHRASE = 3 };
#define N_STATS 24
#define I64_MAX INT64_MAX

/* ---------------------------------------------------------------- growable scratch buffers */
typedef struct {
    void *p;
    size_t cap;
} Buf;

static void *grow(Buf *b, size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (b->cap < bytes) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < bytes) cap *= 2;
        void *q = realloc(b->p, cap);
        if (!q) return NULL;
        b->p = q;
        b->cap = cap;
    }
    return b->p;
}

enum {
    B_CS, B_CL, B_CM, B_CML, B_CMOD, B_ORD, B_CNT, B_COV1, B_COV2,  /* candidates */
    B_PTR, B_USED2, B_FHAS, B_FROW, B_FSTART, B_FLEN, B_FMS, B_FML, B_FWT, B_INIT, /* fixed */
    B_OPTR, B_OROW, B_OMASK, B_OOFF, B_OW, B_OMS, B_OMEND, B_ONIDX, B_MAXW,     /* options */
    B_BK, B_BI, B_BL, B_BC, B_BU, B_PK, B_PI, B_PL, B_PC, B_PU, B_TMP, B_ORDER, B_HEAP,
    B_NOPT, B_NPAR, B_AT, N_BUFS
};

typedef struct {
    Buf b[N_BUFS];
} Work;

static void work_free(Work *w) {
    for (int k = 0; k < N_BUFS; k++) free(w->b[k].p);
}

#define G(w, k, T, n) ((T *)grow(&(w)->b[k], (size_t)(n) * sizeof(T)))

/* ---------------------------------------------------------------- sorting helpers */
/* out[:n] = stable argsort of keys[:n] (insertion-sorted runs of 8, then bottom-up merges) */
static void stable_order(const bkey *keys, i64 n, i64 *out, i64 *buf) {
    for (i64 e = 0; e < n; e++) out[e] = e;
    const i64 run = 8;
    for (i64 lo = 0; lo < n; lo += run) {
        i64 hi = lo + run < n ? lo + run : n;
        for (i64 e = lo + 1; e < hi; e++) {
            i64 x = out[e], q = e;
            bkey v = keys[x];
            while (q > lo && keys[out[q - 1]] > v) {
                out[q] = out[q - 1];
                q--;
            }
            out[q] = x;
        }
    }
    i64 *src = out, *dst = buf;
    for (i64 width = run; width < n; width *= 2) {
        for (i64 lo = 0; lo < n; lo += 2 * width) {
            i64 mid = lo + width < n ? lo + width : n;
            i64 hi = lo + 2 * width < n ? lo + 2 * width : n;
            i64 a = lo, b = mid, o = lo;
            while (a < mid && b < hi) {
                if (keys[src[b]] < keys[src[a]])
                    dst[o++] = src[b++];
                else
                    dst[o++] = src[a++];
            }
            while (a < mid) dst[o++] = src[a++];
            while (b < hi) dst[o++] = src[b++];
        }
        i64 *t = src;
        src = dst;
        dst = t;
    }
    if (src != out) memcpy(out, src, (size_t)n * sizeof(i64));
}

/* keep in heap (a max-heap of at most k values) the k smallest values added; returns the new size */
static i64 heap_add(bkey *heap, i64 size, i64 k, bkey v) {
    if (size < k) {
        i64 q = size;
        heap[q] = v;
        while (q > 0) {
            i64 parent = (q - 1) >> 1;
            if (heap[parent] >= heap[q]) break;
            bkey t = heap[parent];
            heap[parent] = heap[q];
            heap[q] = t;
            q = parent;
        }
        return size + 1;
    }
    if (v >= heap[0]) return size;
    heap[0] = v;
    i64 q = 0;
    for (;;) {
        i64 left = 2 * q + 1;
        if (left >= size) break;
        i64 big = left;
        if (left + 1 < size && heap[left + 1] > heap[left]) big = left + 1;
        if (heap[q] >= heap[big]) break;
        bkey t = heap[q];
        heap[q] = heap[big];
        heap[big] = t;
        q = big;
    }
    return size;
}

static int bit_length(u64 x) {
    int n = 0;
    while (x) {
        n++;
        x >>= 1;
    }
    return n;
}

/* ---------------------------------------------------------------- the batch inputs */
typedef struct {
    const i64 *kind;  /* module kind per module index */
    i64 n_modules;
    int has_syn, has_para;
    const i64 *whash, *shash, *func, *syn_ptr, *syn_ids;
    const i64 *tok_ptr, *toks;
    const i64 *phr_ptr, *phr;  /* rows of 4 */
    const i64 *occ_ptr, *occ;  /* rows of 2 */
    const i64 *para_len;
    i64 beam_size;
    int prune;
} Batch;

/* ---------------------------------------------------------------- candidates (Aligner.candidates) */
typedef struct {
    i64 n;
    i64 *cs, *cl, *cm, *cml, *cmod;
} Cands;

static int add_cand(Work *w, Cands *c, i64 s, i64 l, i64 m, i64 ml, i64 mod) {
    i64 n = c->n + 1;
    i64 *cs = G(w, B_CS, i64, n), *cl = G(w, B_CL, i64, n), *cm = G(w, B_CM, i64, n);
    i64 *cml = G(w, B_CML, i64, n), *cmod = G(w, B_CMOD, i64, n);
    if (!cs || !cl || !cm || !cml || !cmod) return -1;
    cs[c->n] = s;
    cl[c->n] = l;
    cm[c->n] = m;
    cml[c->n] = ml;
    cmod[c->n] = mod;
    c->cs = cs;
    c->cl = cl;
    c->cm = cm;
    c->cml = cml;
    c->cmod = cmod;
    c->n = n;
    return 0;
}

/* the hypothesis' (synset, position) pairs sorted by synset, kept while consecutive pairs share it */
typedef struct {
    i64 syn, pos;
} SynPos;

typedef struct {
    i64 sent; /* hypothesis sentence indexed, -1: none */
    i64 n;
    SynPos *sp;
    i64 *stamp; /* per hypothesis position: the last reference position + 1 that marked it */
} SynIndex;

static int cmp_synpos(const void *a, const void *b) {
    const SynPos *x = a, *y = b;
    if (x->syn != y->syn) return x->syn < y->syn ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int syn_index(const Batch *B, SynIndex *x, i64 h) {
    if (x->sent == h) return 0;
    const i64 *w1 = B->toks + B->tok_ptr[h];
    i64 n1 = B->tok_ptr[h + 1] - B->tok_ptr[h];
    i64 total = 0;
    for (i64 j = 0; j < n1; j++) total += B->syn_ptr[w1[j] + 1] - B->syn_ptr[w1[j]];
    SynPos *sp = realloc(x->sp, (size_t)(total + 1) * sizeof(SynPos));
    if (!sp) return -1;
    x->sp = sp;
    i64 *stamp = realloc(x->stamp, (size_t)(n1 + 1) * sizeof(i64));
    if (!stamp) return -1;
    x->stamp = stamp;
    i64 k = 0;
    for (i64 j = 0; j < n1; j++)
        for (i64 q = B->syn_ptr[w1[j]]; q < B->syn_ptr[w1[j] + 1]; q++) {
            sp[k].syn = B->syn_ids[q];
            sp[k].pos = j;
            k++;
        }
    qsort(sp, (size_t)k, sizeof(SynPos), cmp_synpos);
    for (i64 j = 0; j < n1; j++) stamp[j] = 0;
    x->n = k;
    x->sent = h;
    return 0;
}

/* first row of sentence s's occurrence list with paraphrase id pid (rows sorted by id, start) */
static i64 occ_first(const Batch *B, i64 s, i64 pid) {
    i64 lo = B->occ_ptr[s], hi = B->occ_ptr[s + 1];
    while (lo < hi) {
        i64 mid = (lo + hi) >> 1;
        if (B->occ[2 * mid] < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* candidates of hypothesis h vs reference r in generation order; cov1/cov2 coverage counts */
static int candidates(const Batch *B, Work *w, SynIndex *sx, i64 h, i64 r, Cands *c, i64 *cov1, i64 *cov2) {
    const i64 *w1 = B->toks + B->tok_ptr[h], *w2 = B->toks + B->tok_ptr[r];
    i64 n1 = B->tok_ptr[h + 1] - B->tok_ptr[h], n2 = B->tok_ptr[r + 1] - B->tok_ptr[r];
    const i64 *H = B->whash, *SH = B->shash;
    c->n = 0;
    i64 n_mod = B->n_modules;
    if (n1 == n2) {
        int same = 1;
        for (i64 j = 0; j < n1; j++)
            if (H[w1[j]] != H[w2[j]]) {
                same = 0;
                break;
            }
        if (same && n_mod > 1) n_mod = 1;
    }
    for (i64 mi = 0; mi < n_mod; mi++) {
        i64 kind = B->kind[mi];
        if (kind == EXACT) {
            for (i64 i = 0; i < n2; i++) {
                i64 hi = H[w2[i]];
                for (i64 j = 0; j < n1; j++)
                    if (H[w1[j]] == hi) {
                        if (add_cand(w, c, i, 1, j, 1, mi)) return -1;
                        cov1[j]++;
                        cov2[i]++;
                    }
            }
        } else if (kind == STEM) {
            for (i64 i = 0; i < n2; i++) {
                i64 s = SH[w2[i]], hi = H[w2[i]];
                for (i64 j = 0; j < n1; j++)
                    if (SH[w1[j]] == s && H[w1[j]] != hi) {
                        if (add_cand(w, c, i, 1, j, 1, mi)) return -1;
                        cov1[j]++;
                        cov2[i]++;
                    }
            }
        } else if (kind == SYNONYM) {
            if (!B->has_syn) continue;
            if (syn_index(B, sx, h)) return -1;
            for (i64 i = 0; i < n2; i++) {
                i64 a = w2[i];
                if (B->syn_ptr[a + 1] == B->syn_ptr[a]) continue;
                /* mark the hypothesis positions sharing a synset with reference word i */
                i64 marked = 0;
                for (i64 q = B->syn_ptr[a]; q < B->syn_ptr[a + 1]; q++) {
                    i64 v = B->syn_ids[q], lo = 0, hi = sx->n;
                    while (lo < hi) {
                        i64 mid = (lo + hi) >> 1;
                        if (sx->sp[mid].syn < v)
                            lo = mid + 1;
                        else
                            hi = mid;
                    }
                    for (; lo < sx->n && sx->sp[lo].syn == v; lo++) {
                        sx->stamp[sx->sp[lo].pos] = i + 1;
                        marked = 1;
                    }
                }
                if (!marked) continue;
                i64 hi = H[a];
                for (i64 j = 0; j < n1; j++)
                    if (sx->stamp[j] == i + 1 && H[w1[j]] != hi) {
                        if (add_cand(w, c, i, 1, j, 1, mi)) return -1;
                        cov1[j]++;
                        cov2[i]++;
                    }
            }
            for (i64 j = 0; j < n1; j++) sx->stamp[j] = 0;
        } else if (kind == PARAPHRASE) {
            if (!B->has_para) continue;
            /* the reference's table phrases against the hypothesis' occurrences of their paraphrases */
            for (i64 p = B->phr_ptr[r]; p < B->phr_ptr[r + 1]; p++) {
                i64 k = B->phr[4 * p], length = B->phr[4 * p + 1], pid = B->phr[4 * p + 3];
                i64 plen = B->para_len[pid];
                for (i64 o = occ_first(B, h, pid); o < B->occ_ptr[h + 1] && B->occ[2 * o] == pid; o++) {
                    i64 ms = B->occ[2 * o + 1];
                    if (add_cand(w, c, k, length, ms, plen, mi)) return -1;
                    for (i64 x = ms; x < ms + plen; x++) cov1[x]++;
                    for (i64 x = k; x < k + length; x++) cov2[x]++;
                }
            }
            /* then the hypothesis' table phrases against the reference's occurrences */
            for (i64 p = B->phr_ptr[h]; p < B->phr_ptr[h + 1]; p++) {
                i64 ms = B->phr[4 * p], mlen = B->phr[4 * p + 1], pid = B->phr[4 * p + 3];
                i64 plen = B->para_len[pid];
                for (i64 o = occ_first(B, r, pid); o < B->occ_ptr[r + 1] && B->occ[2 * o] == pid; o++) {
                    i64 st = B->occ[2 * o + 1];
                    if (add_cand(w, c, st, plen, ms, mlen, mi)) return -1;
                    for (i64 x = ms; x < ms + mlen; x++) cov1[x]++;
                    for (i64 x = st; x < st + plen; x++) cov2[x]++;
                }
            }
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- the beam search (Aligner.align) */
/* Returns the number of options picked (into *picked_out, an index array into the options), -1 on
 * allocation failure. */
static i64 beam_search(Work *w, i64 n2, i64 beam_size, int prune, const unsigned char *used2,
                       const unsigned char *fixed_has, const i64 *fixed_start, const i64 *fixed_len,
                       const i64 *fixed_ms, const i64 *fixed_ml, const bkey *fixed_wt, const i64 *opt_ptr,
                       const i64 *opt_off, const bkey *opt_w, const i64 *opt_ms,
                       const i64 *opt_mend, const i64 *opt_nidx, const bkey *maxw, bkey wc, const u64 *init_mask,
                       i64 W, i64 **picked_out) {
    const bkey no_limit = KEY_MAX;
    i64 max_opts = 0;
    for (i64 i = 0; i < n2; i++) {
        i64 c = opt_ptr[i + 1] - opt_ptr[i];
        if (c > max_opts) max_opts = c;
    }
    i64 cap = beam_size * (max_opts + 1) + beam_size + 2;
    bkey *bk = G(w, B_BK, bkey, cap);
    i64 *bi = G(w, B_BI, i64, cap), *bl = G(w, B_BL, i64, cap);
    i64 *bc = G(w, B_BC, i64, cap);
    u64 *bu = G(w, B_BU, u64, cap * W);
    bkey *pk = G(w, B_PK, bkey, cap);
    i64 *pi = G(w, B_PI, i64, cap), *pl = G(w, B_PL, i64, cap);
    i64 *pc = G(w, B_PC, i64, cap);
    u64 *pu = G(w, B_PU, u64, cap * W);
    i64 *tmp = G(w, B_TMP, i64, cap), *order = G(w, B_ORDER, i64, cap);
    bkey *heap = G(w, B_HEAP, bkey, beam_size + 1);
    i64 node_cap = 1024;
    i64 *node_opt = G(w, B_NOPT, i64, node_cap), *node_par = G(w, B_NPAR, i64, node_cap);
    if (!bk || !bi || !bl || !bc || !bu || !pk || !pi || !pl || !pc || !pu || !tmp || !order || !heap ||
        !node_opt || !node_par)
        return -1;
    i64 n_nodes = 0;

    i64 n = 1;
    bk[0] = 0;
    bi[0] = 0;
    bl[0] = -1;
    bc[0] = -1;
    for (i64 x = 0; x < W; x++) bu[x] = init_mask[x];
    i64 i = 0;
    while (i <= n2) {
        stable_order(bk, n, order, tmp);
        i64 m_prev = n < beam_size ? n : beam_size;
        for (i64 t = 0; t < m_prev; t++) {
            i64 o = order[t];
            pk[t] = bk[o];
            pi[t] = bi[o];
            pl[t] = bl[o];
            pc[t] = bc[o];
            memcpy(pu + t * W, bu + o * W, (size_t)W * sizeof(u64));
        }
        n = 0;
        if (i < n2 && (used2[i] || opt_ptr[i + 1] == opt_ptr[i])) {
            /* every partial in the same state: the steps up to the next choice are taken at once */
            i64 idx0 = pi[0], last0 = pl[0];
            int same = 1;
            for (i64 t = 0; t < m_prev; t++)
                if (pi[t] != idx0 || pl[t] != last0) {
                    same = 0;
                    break;
                }
            if (same) {
                i64 idx = idx0, last = last0, pos = i;
                bkey delta = 0;
                int ok = 1;
                while (pos < n2) {
                    if (pos < idx) {
                        pos++;
                    } else if (used2[pos]) {
                        if (!fixed_has[pos]) {
                            ok = 0;
                            break;
                        }
                        if (last != -1 && fixed_ms[pos] != last) delta += wc;
                        i64 d = fixed_start[pos] - fixed_ms[pos];
                        delta += (d < 0 ? -d : d) - fixed_wt[pos];
                        idx = fixed_start[pos] + fixed_len[pos];
                        last = fixed_ms[pos] + fixed_ml[pos];
                        pos++;
                    } else if (opt_ptr[pos + 1] == opt_ptr[pos]) {
                        if (last != -1) delta += wc;
                        idx = pos + 1;
                        last = -1;
                        pos++;
                    } else {
                        break;
                    }
                }
                if (ok) {
                    for (i64 t = 0; t < m_prev; t++) {
                        bk[t] = pk[t] + delta;
                        bi[t] = idx;
                        bl[t] = last;
                        bc[t] = pc[t];
                        memcpy(bu + t * W, pu + t * W, (size_t)W * sizeof(u64));
                    }
                    n = m_prev;
                    i = pos;
                    continue;
                }
            }
        }
        if (i == n2) {
            for (i64 t = 0; t < m_prev; t++) {
                bk[n] = pl[t] != -1 ? pk[t] + wc : pk[t];
                bi[n] = pi[t];
                bl[n] = pl[t];
                bc[n] = pc[t];
                memcpy(bu + n * W, pu + t * W, (size_t)W * sizeof(u64));
                n++;
            }
            break;
        }
        i64 o0 = opt_ptr[i], o1 = opt_ptr[i + 1];
        if (o0 == o1 && !used2[i]) {
            /* a run of reference words without candidates: close chunks, move on at once */
            i64 j = i + 1;
            while (j < n2 && !used2[j] && opt_ptr[j + 1] == opt_ptr[j]) j++;
            for (i64 t = 0; t < m_prev; t++)
                if (i < pi[t] && pi[t] < j) j = pi[t];
            for (i64 t = 0; t < m_prev; t++) {
                if (pi[t] > i) {
                    bk[n] = pk[t];
                    bi[n] = pi[t];
                    bl[n] = pl[t];
                } else {
                    bk[n] = pl[t] != -1 ? pk[t] + wc : pk[t];
                    bi[n] = j;
                    bl[n] = -1;
                }
                bc[n] = pc[t];
                memcpy(bu + n * W, pu + t * W, (size_t)W * sizeof(u64));
                n++;
            }
            i = j;
            continue;
        }
        if (used2[i]) {
            for (i64 t = 0; t < m_prev; t++) {
                bkey k = pk[t];
                i64 idx = pi[t], last = pl[t];
                if (i < idx) {
                    bk[n] = k;
                    bi[n] = idx;
                    bl[n] = last;
                } else if (!fixed_has[idx]) {
                    continue;
                } else {
                    if (last != -1 && fixed_ms[idx] != last) k += wc;
                    i64 d = fixed_start[idx] - fixed_ms[idx];
                    bk[n] = k - fixed_wt[idx] + (d < 0 ? -d : d);
                    bi[n] = fixed_start[idx] + fixed_len[idx];
                    bl[n] = fixed_ms[idx] + fixed_ml[idx];
                }
                bc[n] = pc[t];
                memcpy(bu + n * W, pu + t * W, (size_t)W * sizeof(u64));
                n++;
            }
        } else {
            bkey thr = no_limit;
            i64 check_at = prune ? beam_size : I64_MAX;
            i64 h_size = 0;
            i64 n_heap = prune ? 0 : cap;
            bkey bound_w = maxw[i];
            for (i64 t = 0; t < m_prev; t++) {
                bkey k = pk[t];
                i64 idx = pi[t], last = pl[t], chain = pc[t];
                while (n_heap < n) { /* the beam_size smallest keys appended so far */
                    h_size = heap_add(heap, h_size, beam_size, bk[n_heap]);
                    n_heap++;
                }
                if (n >= check_at) {
                    thr = heap[0]; /* the beam_size-th smallest of the n keys */
                    check_at = n + (beam_size + 1) / 2;
                }
                if (k - bound_w >= thr) break;
                if (i < idx) {
                    bk[n] = k;
                    bi[n] = idx;
                    bl[n] = last;
                    bc[n] = chain;
                    memcpy(bu + n * W, pu + t * W, (size_t)W * sizeof(u64));
                    n++;
                    continue;
                }
                for (i64 o = o0; o < o1; o++) {
                    /* the option's hypothesis words (opt_ms[o] .. opt_mend[o] - 1) must be unused */
                    int clash = 0;
                    const u64 *used = pu + t * W;
                    for (i64 b = opt_ms[o]; b < opt_mend[o]; b++)
                        if ((used[b >> 6] >> (b & 63)) & 1) {
                            clash = 1;
                            break;
                        }
                    if (clash) continue;
                    bkey c = (last == -1 || opt_ms[o] == last) ? k - opt_w[o] : k - opt_w[o] + wc;
                    if (c < thr) {
                        if (n_nodes == node_cap) {
                            node_cap *= 2;
                            node_opt = G(w, B_NOPT, i64, node_cap);
                            node_par = G(w, B_NPAR, i64, node_cap);
                            if (!node_opt || !node_par) return -1;
                        }
                        node_opt[n_nodes] = o;
                        node_par[n_nodes] = chain;
                        bk[n] = c;
                        bi[n] = opt_nidx[o];
                        bl[n] = opt_mend[o];
                        bc[n] = n_nodes;
                        memcpy(bu + n * W, used, (size_t)W * sizeof(u64));
                        for (i64 b = opt_ms[o]; b < opt_mend[o]; b++) bu[n * W + (b >> 6)] |= (u64)1 << (b & 63);
                        n_nodes++;
                        n++;
                    }
                    k += opt_off[o]; /* the jar adds the child's distance to the parent */
                }
                if (last != -1) k += wc;
                if (k < thr) {
                    bk[n] = k;
                    bi[n] = idx + 1;
                    bl[n] = -1;
                    bc[n] = chain;
                    memcpy(bu + n * W, pu + t * W, (size_t)W * sizeof(u64));
                    n++;
                }
            }
        }
        if (n == 0) {
            bk[0] = pk[0];
            bi[0] = pi[0];
            bl[0] = pl[0];
            bc[0] = pc[0];
            memcpy(bu, pu, (size_t)W * sizeof(u64));
            n = 1;
        }
        i++;
    }
    i64 best = 0;
    for (i64 t = 1; t < n; t++)
        if (bk[t] < bk[best]) best = t; /* the first of the smallest keys, as the stable sort puts it */
    i64 count = 0;
    for (i64 c = bc[best]; c != -1; c = node_par[c]) count++;
    /* reuse the order buffer for the picks (it is not needed any more) */
    i64 *out = G(w, B_ORDER, i64, count > cap ? count : cap);
    if (!out) return -1;
    i64 q = 0;
    for (i64 c = bc[best]; c != -1; c = node_par[c]) out[q++] = node_opt[c];
    *picked_out = out;
    return count;
}

/* ---------------------------------------------------------------- one pair: align and count */
static int one_pair(const Batch *B, Work *w, SynIndex *sx, i64 h, i64 r, i64 *stats) {
    i64 n1 = B->tok_ptr[h + 1] - B->tok_ptr[h], n2 = B->tok_ptr[r + 1] - B->tok_ptr[r];
    const i64 *w1 = B->toks + B->tok_ptr[h], *w2 = B->toks + B->tok_ptr[r];
    memset(stats, 0, N_STATS * sizeof(i64));
    i64 *cov1 = G(w, B_COV1, i64, n1 + 1), *cov2 = G(w, B_COV2, i64, n2 + 1);
    if (!cov1 || !cov2) return -1;
    memset(cov1, 0, (size_t)(n1 + 1) * sizeof(i64));
    memset(cov2, 0, (size_t)(n2 + 1) * sizeof(i64));
    Cands c = {0};
    if (candidates(B, w, sx, h, r, &c, cov1, cov2)) return -1;
    i64 n_cand = c.n;

    /* stage order: stable by reference position (generation order within a position) */
    i64 *ptr = G(w, B_PTR, i64, n2 + 2), *ord = G(w, B_ORD, i64, n_cand + 1), *cnt = G(w, B_CNT, i64, n2 + 1);
    if (!ptr || !ord || !cnt) return -1;
    memset(ptr, 0, (size_t)(n2 + 2) * sizeof(i64));
    for (i64 e = 0; e < n_cand; e++) ptr[c.cs[e] + 1]++;
    i64 n_rows_max = 0;
    for (i64 i = 0; i < n2; i++) {
        if (ptr[i + 1] > n_rows_max) n_rows_max = ptr[i + 1];
        ptr[i + 1] += ptr[i];
    }
    memcpy(cnt, ptr, (size_t)(n2 + 1) * sizeof(i64));
    for (i64 e = 0; e < n_cand; e++) ord[cnt[c.cs[e]]++] = e;

    i64 *at = G(w, B_AT, i64, n2 + 1);
    if (!at) return -1;
    for (i64 j = 0; j < n2; j++) at[j] = -1;
    if (n_cand > 0) {
        /* packed keys: fields sized from the input so that they cannot overflow into each other */
        u64 mx = (u64)(n1 > n2 ? n1 : n2);
        if (mx < 1) mx = 1;
        unsigned __int128 prod = (unsigned __int128)(u64)n2 * (u64)(n_rows_max + 1) * mx;
        int bits = 0;
        while (prod) {
            bits++;
            prod >>= 1;
        }
        int dist_bits = bits + 1 > 26 ? bits + 1 : 26;
        int bl2 = bit_length((u64)(n2 + 2));
        int wm_shift = dist_bits + (bl2 > 20 ? bl2 : 20);
        /* (n1 + n2 + 2) * wm must stay below 2**126 */
        if (wm_shift >= 110 || (unsigned __int128)(n1 + n2 + 2) >= ((unsigned __int128)1 << (126 - wm_shift))) {
            stats[N_STATS - 1] = 1;
            return 0;
        }
        bkey wc = (bkey)1 << dist_bits, wm = (bkey)1 << wm_shift;
        i64 W = n1 > 0 ? (n1 + 63) >> 6 : 1;
        unsigned char *used2 = G(w, B_USED2, unsigned char, 2 * (n2 + 1));
        i64 *frow = G(w, B_FROW, i64, n2 + 1), *fstart = G(w, B_FSTART, i64, n2 + 1);
        i64 *flen = G(w, B_FLEN, i64, n2 + 1), *fms = G(w, B_FMS, i64, n2 + 1), *fml = G(w, B_FML, i64, n2 + 1);
        bkey *fwt = G(w, B_FWT, bkey, n2 + 1);
        u64 *init = G(w, B_INIT, u64, W);
        i64 *optr = G(w, B_OPTR, i64, n2 + 1), *orow = G(w, B_OROW, i64, n_cand);
        i64 *ooff = G(w, B_OOFF, i64, n_cand), *oms = G(w, B_OMS, i64, n_cand);
        bkey *ow = G(w, B_OW, bkey, n_cand);
        i64 *omend = G(w, B_OMEND, i64, n_cand), *onidx = G(w, B_ONIDX, i64, n_cand);
        bkey *maxw = G(w, B_MAXW, bkey, n2 + 1);
        if (!used2 || !frow || !fstart || !flen || !fms || !fml || !fwt || !init || !optr || !orow ||
            !ooff || !ow || !oms || !omend || !onidx || !maxw)
            return -1;
        unsigned char *fhas = used2 + (n2 + 1);
        memset(used2, 0, (size_t)(2 * (n2 + 1)));
        memset(init, 0, (size_t)W * sizeof(u64));
        for (i64 j = 0; j < n2; j++) {
            frow[j] = -1;
            fstart[j] = flen[j] = fms[j] = fml[j] = fwt[j] = 0;
        }
        /* matches that are the only candidate of every word they cover are fixed up front */
        for (i64 j = 0; j < n2; j++) {
            if (ptr[j + 1] - ptr[j] != 1) continue;
            i64 e = ord[ptr[j]];
            i64 ln = c.cl[e], ms = c.cm[e], ml = c.cml[e];
            int ok = 1;
            for (i64 k = 0; k < ln && ok; k++)
                if (cov2[j + k] != 1) ok = 0;
            for (i64 k = 0; k < ml && ok; k++)
                if (cov1[ms + k] != 1) ok = 0;
            if (!ok) continue;
            int exact = B->kind[c.cmod[e]] == EXACT;
            fhas[j] = 1;
            frow[j] = e;
            fstart[j] = c.cs[e];
            flen[j] = ln;
            fms[j] = ms;
            fml[j] = ml;
            fwt[j] = (bkey)(exact ? (ml + ln) : (ml / 2 + ln / 2)) * wm;
            for (i64 k = 0; k < ln; k++) used2[j + k] = 1;
            for (i64 k = 0; k < ml; k++) {
                i64 b = ms + k;
                init[b >> 6] |= (u64)1 << (b & 63);
            }
        }
        /* the options: candidates at positions not fixed whose reference words are all free */
        i64 n_opt = 0;
        optr[0] = 0;
        for (i64 i = 0; i < n2; i++) {
            bkey best_w = 0;
            if (!used2[i]) {
                for (i64 q = ptr[i]; q < ptr[i + 1]; q++) {
                    i64 e = ord[q];
                    i64 ln = c.cl[e], ms = c.cm[e], ml = c.cml[e];
                    int skip = 0;
                    for (i64 k = 1; k < ln; k++)
                        if (used2[i + k]) {
                            skip = 1;
                            break;
                        }
                    if (skip) continue;
                    int exact = B->kind[c.cmod[e]] == EXACT;
                    bkey wt = (bkey)(exact ? (ml + ln) : (ml / 2 + ln / 2)) * wm;
                    if (wt > best_w) best_w = wt;
                    orow[n_opt] = e;
                    i64 d = i - ms;
                    ooff[n_opt] = d < 0 ? -d : d;
                    ow[n_opt] = wt;
                    oms[n_opt] = ms;
                    omend[n_opt] = ms + ml;
                    onidx[n_opt] = i + ln;
                    n_opt++;
                }
            }
            optr[i + 1] = n_opt;
            maxw[i] = best_w;
        }
        i64 *picked = NULL;
        i64 n_picked = beam_search(w, n2, B->beam_size, B->prune, used2, fhas, fstart, flen, fms, fml, fwt, optr,
                                   ooff, ow, oms, omend, onidx, maxw, wc, init, W, &picked);
        if (n_picked < 0) return -1;
        for (i64 j = 0; j < n2; j++)
            if (fhas[j]) at[j] = frow[j];
        for (i64 q = 0; q < n_picked; q++) {
            i64 e = orow[picked[q]];
            at[c.cs[e]] = e;
        }
    }
    /* count_alignment: content/function matches per module, chunks */
    i64 fw1 = 0, fw2 = 0;
    for (i64 j = 0; j < n1; j++) fw1 += B->func[w1[j]] != 0;
    for (i64 j = 0; j < n2; j++) fw2 += B->func[w2[j]] != 0;
    i64 *tc = stats + 4, *rc = stats + 8, *tf = stats + 12, *rf = stats + 16;
    i64 chunks = 0, last = -1, i = 0;
    while (i < n2) {
        i64 e = at[i];
        if (e < 0) {
            if (last != -1) {
                chunks++;
                last = -1;
            }
            i++;
            continue;
        }
        i64 mod = c.cmod[e], ms = c.cm[e], ml = c.cml[e], st = c.cs[e], ln = c.cl[e];
        for (i64 k = 0; k < ml; k++) {
            if (B->func[w1[ms + k]])
                tf[mod]++;
            else
                tc[mod]++;
        }
        for (i64 k = 0; k < ln; k++) {
            if (B->func[w2[st + k]])
                rf[mod]++;
            else
                rc[mod]++;
        }
        if (last != -1 && ms != last) chunks++;
        i = st + ln;
        last = ms + ml;
    }
    if (last != -1) chunks++;
    i64 tm = 0, rm = 0;
    for (int k = 0; k < 4; k++) {
        tm += tc[k] + tf[k];
        rm += rc[k] + rf[k];
    }
    stats[0] = n1;
    stats[1] = n2;
    stats[2] = fw1;
    stats[3] = fw2;
    stats[20] = chunks;
    stats[21] = tm;
    stats[22] = rm;
    stats[N_STATS - 1] = 0;
    return 0;
}

/* ---------------------------------------------------------------- Python entry point */
#define G_BUF(b, n) (grow((b), (size_t)(n) * 1))

#define N_IN 17

static int get_buf(PyObject *o, Py_buffer *view, int writable, const char *name) {
    if (PyObject_GetBuffer(o, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != 8 || (view->format && strcmp(view->format, "q") != 0 && strcmp(view->format, "l") != 0 &&
                                strcmp(view->format, "<q") != 0 && strcmp(view->format, "<l") != 0 &&
                                strcmp(view->format, "=q") != 0 && strcmp(view->format, "=l") != 0)) {
        PyErr_Format(PyExc_TypeError, "%s must be a C-contiguous int64 array", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- per-word features
 * The C twins of ``java_hash`` (_align.py), ``stem`` (_stem.py, the Snowball English stemmer) and
 * ``SynonymIndex.synsets`` over the jar's sorted synset table (_align.py, _resources._SortedSynsets),
 * step for step; the Python functions stay the reference (tests compare the two on real and awkward words).
 */
static i64 java_hash_ucs4(const Py_UCS4 *w, Py_ssize_t n) {
    uint32_t h = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t o = (uint32_t)w[i];
        if (o > 0xFFFF) {
            o -= 0x10000;
            h = 31u * h + (0xD800u + (o >> 10));
            h = 31u * h + (0xDC00u + (o & 0x3FFu));
        } else {
            h = 31u * h + o;
        }
    }
    return (i64)h;
}

static int is_v(Py_UCS4 c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y'; }

static int ends(const Py_UCS4 *w, Py_ssize_t n, const char *s) {
    Py_ssize_t k = (Py_ssize_t)strlen(s);
    if (k > n) return 0;
    for (Py_ssize_t i = 0; i < k; i++)
        if (w[n - k + i] != (Py_UCS4)(unsigned char)s[i]) return 0;
    return 1;
}

static int same(const Py_UCS4 *w, Py_ssize_t n, const char *s) { return (Py_ssize_t)strlen(s) == n && ends(w, n, s); }

static Py_ssize_t put(Py_UCS4 *w, Py_ssize_t n, const char *s) { /* append s to w[:n] */
    for (; *s; s++) w[n++] = (Py_UCS4)(unsigned char)*s;
    return n;
}

static Py_ssize_t region_after(const Py_UCS4 *w, Py_ssize_t n, Py_ssize_t start) {
    for (Py_ssize_t i = start; i + 1 < n; i++)
        if (is_v(w[i]) && !is_v(w[i + 1])) return i + 2;
    return n;
}

static int short_syllable(const Py_UCS4 *w, Py_ssize_t n) {
    if (n == 2) return is_v(w[0]) && !is_v(w[1]);
    if (n >= 3)
        return !is_v(w[n - 3]) && is_v(w[n - 2]) && !is_v(w[n - 1]) && w[n - 1] != 'w' && w[n - 1] != 'x' &&
               w[n - 1] != 'Y';
    return 0;
}

static int has_vowel(const Py_UCS4 *w, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (is_v(w[i])) return 1;
    return 0;
}

static const char *const EXC1[][2] = {
    {"skis", "ski"},    {"skies", "sky"}, {"dying", "die"},   {"lying", "lie"},     {"tying", "tie"},
    {"idly", "idl"},    {"gently", "gentl"}, {"ugly", "ugli"}, {"early", "earli"},  {"only", "onli"},
    {"singly", "singl"}, {"sky", "sky"},   {"news", "news"},   {"howe", "howe"},     {"atlas", "atlas"},
    {"cosmos", "cosmos"}, {"bias", "bias"}, {"andes", "andes"}, {NULL, NULL}};
static const char *const EXC2[] = {"inning", "outing", "canning", "herring", "earring", "proceed", "exceed",
                                   "succeed", NULL};
static const char *const STEP1B[] = {"eedly", "ingly", "edly", "eed", "ing", "ed", NULL};
static const char *const DOUBLES[] = {"bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt", NULL};
static const char *const STEP2[][2] = {
    {"ization", "ize"}, {"ational", "ate"}, {"fulness", "ful"}, {"ousness", "ous"}, {"iveness", "ive"},
    {"tional", "tion"}, {"biliti", "ble"}, {"lessli", "less"}, {"entli", "ent"}, {"ation", "ate"},
    {"alism", "al"},    {"aliti", "al"},   {"ousli", "ous"},   {"iviti", "ive"},  {"fulli", "ful"},
    {"enci", "ence"},   {"anci", "ance"},  {"abli", "able"},   {"izer", "ize"},   {"ator", "ate"},
    {"alli", "al"},     {"bli", "ble"},    {"ogi", "og"},      {"li", ""},        {NULL, NULL}};
static const char *const STEP3[][2] = {{"ational", "ate"}, {"tional", "tion"}, {"alize", "al"}, {"icate", "ic"},
                                       {"iciti", "ic"},    {"ative", ""},      {"ical", "ic"},  {"ness", ""},
                                       {"ful", ""},        {NULL, NULL}};
static const char *const STEP4[] = {"ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate",
                                    "iti",   "ous",  "ive",  "ize",  "ion",  "al",   "er",  "ic",  NULL};

/* Snowball English stem of w[:n] (room for n + 2 code points), in place; returns its length. */
static Py_ssize_t stem_ucs4(Py_UCS4 *w, Py_ssize_t n) {
    if (n <= 2) return n;
    if (w[0] == '\'') {
        memmove(w, w + 1, (size_t)(n - 1) * sizeof(Py_UCS4));
        n--;
    }
    for (int e = 0; EXC1[e][0]; e++)
        if (same(w, n, EXC1[e][0])) return put(w, 0, EXC1[e][1]);
    if (n > 0 && w[0] == 'y') w[0] = 'Y';
    for (Py_ssize_t i = 0; i + 1 < n;) { /* re.sub("([aeiouy])y", r"\1Y"): left to right, no overlap */
        if (is_v(w[i]) && w[i + 1] == 'y') {
            w[i + 1] = 'Y';
            i += 2;
        } else {
            i++;
        }
    }
    Py_ssize_t r1;
    if (n >= 5 && (ends(w, 5, "gener") || ends(w, 5, "arsen")))
        r1 = 5;
    else if (n >= 6 && ends(w, 6, "commun"))
        r1 = 6;
    else
        r1 = region_after(w, n, 0);
    Py_ssize_t r2 = r1 < n ? region_after(w, n, r1) : n;
    /* step 0 */
    if (ends(w, n, "'s'"))
        n -= 3;
    else if (ends(w, n, "'s"))
        n -= 2;
    else if (ends(w, n, "'"))
        n -= 1;
    /* step 1a */
    if (ends(w, n, "sses"))
        n -= 2;
    else if (ends(w, n, "ied") || ends(w, n, "ies"))
        n -= n > 4 ? 2 : 1;
    else if (ends(w, n, "us") || ends(w, n, "ss")) {
    } else if (ends(w, n, "s")) {
        if (has_vowel(w, n - 2 > 0 ? n - 2 : 0)) n -= 1;
    }
    for (int e = 0; EXC2[e]; e++)
        if (same(w, n, EXC2[e])) return n;
    /* step 1b */
    for (int e = 0; STEP1B[e]; e++) {
        const char *suf = STEP1B[e];
        if (!ends(w, n, suf)) continue;
        Py_ssize_t k = (Py_ssize_t)strlen(suf);
        if (e == 0 || e == 3) { /* eedly, eed */
            if (n - k >= r1) n = put(w, n - k, "ee");
        } else if (has_vowel(w, n - k)) {
            n -= k;
            if (ends(w, n, "at") || ends(w, n, "bl") || ends(w, n, "iz")) {
                n = put(w, n, "e");
            } else {
                int dbl = 0;
                for (int d = 0; DOUBLES[d]; d++)
                    if (ends(w, n, DOUBLES[d])) dbl = 1;
                if (dbl)
                    n -= 1;
                else if (r1 >= n && short_syllable(w, n))
                    n = put(w, n, "e");
            }
        }
        break;
    }
    /* step 1c */
    if (n > 2 && (w[n - 1] == 'y' || w[n - 1] == 'Y') && !is_v(w[n - 2])) w[n - 1] = 'i';
    /* step 2 */
    for (int e = 0; STEP2[e][0]; e++) {
        const char *suf = STEP2[e][0];
        if (!ends(w, n, suf)) continue;
        Py_ssize_t k = (Py_ssize_t)strlen(suf);
        if (n - k >= r1) {
            if (!strcmp(suf, "ogi")) {
                if (n >= 4 && w[n - 4] == 'l') n = put(w, n - 3, "og");
            } else if (!strcmp(suf, "li")) {
                if (n >= 3 && w[n - 3] < 128 && strchr("cdeghkmnrt", (int)w[n - 3]) && w[n - 3]) n -= 2;
            } else {
                n = put(w, n - k, STEP2[e][1]);
            }
        }
        break;
    }
    /* step 3 */
    for (int e = 0; STEP3[e][0]; e++) {
        const char *suf = STEP3[e][0];
        if (!ends(w, n, suf)) continue;
        Py_ssize_t k = (Py_ssize_t)strlen(suf);
        if (n - k >= r1) {
            if (!strcmp(suf, "ative")) {
                if (n - k >= r2) n -= 5;
            } else {
                n = put(w, n - k, STEP3[e][1]);
            }
        }
        break;
    }
    /* step 4 */
    for (int e = 0; STEP4[e]; e++) {
        const char *suf = STEP4[e];
        if (!ends(w, n, suf)) continue;
        Py_ssize_t k = (Py_ssize_t)strlen(suf);
        if (n - k >= r2) {
            if (!strcmp(suf, "ion")) {
                if (n >= 4 && (w[n - 4] == 's' || w[n - 4] == 't')) n -= 3;
            } else {
                n -= k;
            }
        }
        break;
    }
    /* step 5 */
    if (ends(w, n, "e")) {
        if (n - 1 >= r2 || (n - 1 >= r1 && !short_syllable(w, n - 1))) n -= 1;
    } else if (ends(w, n, "l")) {
        if (n - 1 >= r2 && n >= 2 && w[n - 2] == 'l') n -= 1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (w[i] == 'Y') w[i] = 'y';
    return n;
}

/* word_hashes(words, stem, out): out[i] = java_hash(stem(words[i]) if stem else words[i]) */
static PyObject *word_hashes(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *words, *out_obj;
    int do_stem;
    if (!PyArg_ParseTuple(args, "O!pO", &PyList_Type, &words, &do_stem, &out_obj)) return NULL;
    Py_buffer v;
    if (get_buf(out_obj, &v, 1, "out") < 0) return NULL;
    Py_ssize_t n_words = PyList_GET_SIZE(words);
    if (v.len / 8 < n_words) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "word_hashes: out is shorter than words");
        return NULL;
    }
    i64 *out = v.buf;
    Buf tmp = {NULL, 0};
    int failed = 0;
    for (Py_ssize_t i = 0; i < n_words && !failed; i++) {
        PyObject *s = PyList_GET_ITEM(words, i);
        if (!PyUnicode_Check(s)) {
            PyErr_SetString(PyExc_TypeError, "word_hashes: words must be str");
            failed = 1;
            break;
        }
        Py_ssize_t n = PyUnicode_GetLength(s);
        if (n < 0) {
            failed = 1;
            break;
        }
        Py_UCS4 *w = G_BUF(&tmp, (size_t)(n + 4) * sizeof(Py_UCS4));
        if (!w || !PyUnicode_AsUCS4(s, w, n + 4, 0)) {
            if (!w) PyErr_NoMemory();
            failed = 1;
            break;
        }
        if (do_stem) n = stem_ucs4(w, n);
        out[i] = java_hash_ucs4(w, n);
    }
    free(tmp.p);
    PyBuffer_Release(&v);
    if (failed) return NULL;
    Py_RETURN_NONE;
}

/* The jar's synset table: lines of ``data`` (line i = data[ls[i]:ls[i + 1] - 1]), words on even lines in
 * byte order, their synset offsets on the next line; n entries. */
typedef struct {
    const char *data;
    const i64 *ls;
    Py_ssize_t n;
} SynTable;

/* the entry of the UTF-8 word key[:n] (bisect_left over the even lines + equality), or -1 */
static Py_ssize_t sorted_find(const SynTable *T, const char *key, Py_ssize_t n) {
    Py_ssize_t lo = 0, hi = T->n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        const char *b = T->data + T->ls[2 * mid];
        Py_ssize_t bn = (Py_ssize_t)(T->ls[2 * mid + 1] - 1 - T->ls[2 * mid]);
        int c = memcmp(b, key, (size_t)(bn < n ? bn : n));
        if (c < 0 || (c == 0 && bn < n))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < T->n) {
        const char *b = T->data + T->ls[2 * lo];
        Py_ssize_t bn = (Py_ssize_t)(T->ls[2 * lo + 1] - 1 - T->ls[2 * lo]);
        if (bn == n && memcmp(b, key, (size_t)n) == 0) return lo;
    }
    return -1;
}

/* append the synset offsets of the UTF-8 word key[:n] (if listed); -1: a line that is not plain integers */
static int synsets_of(const SynTable *T, const char *key, Py_ssize_t n, Buf *ids, Py_ssize_t *len, int *found) {
    Py_ssize_t at = sorted_find(T, key, n);
    *found = at >= 0;
    if (at < 0) return 0;
    const char *p = T->data + T->ls[2 * at + 1], *end = T->data + T->ls[2 * at + 2] - 1;
    while (p < end) {
        while (p < end && (*p == ' ' || (*p >= '\t' && *p <= '\r'))) p++;
        if (p == end) break;
        int neg = 0;
        if (*p == '-' || *p == '+') neg = *p++ == '-';
        if (p == end || *p < '0' || *p > '9') return -1;
        u64 x = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (x > (u64)(I64_MAX - 9) / 10) return -1;
            x = x * 10 + (u64)(*p++ - '0');
        }
        if (p < end && !(*p == ' ' || (*p >= '\t' && *p <= '\r'))) return -1;
        i64 *q = G_BUF(ids, (*len + 1) * (Py_ssize_t)sizeof(i64));
        if (!q) return -2;
        q[(*len)++] = neg ? -(i64)x : (i64)x;
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b) {
    i64 x = *(const i64 *)a, y = *(const i64 *)b;
    return (x > y) - (x < y);
}

static const char *const MORPH[][2] = {
    {"s", ""},    {"ses", "s"}, {"xes", "x"},  {"zes", "z"}, {"ches", "ch"}, {"shes", "sh"}, {"men", "man"},
    {"ies", "y"}, {"s", ""},    {"ies", "y"},  {"es", "e"},  {"es", ""},     {"ed", "e"},    {"ed", ""},
    {"ing", "e"}, {"ing", ""},  {"er", ""},    {"est", ""},  {"er", "e"},    {"est", "e"},   {NULL, NULL}};

static int bytes_end(const char *s, Py_ssize_t n, const char *suf) {
    Py_ssize_t k = (Py_ssize_t)strlen(suf);
    return k <= n && memcmp(s + n - k, suf, (size_t)k) == 0;
}

/* synset_rows(words, data, ls, bases) -> (ptr, ids) as int64 bytes: the sorted distinct synsets of each
 * word (its own, and its base forms' - the exceptions table, else the first morphological rule giving a
 * listed form), CSR; None where a word cannot be encoded or a line is not integers (the Python path then) */
static PyObject *synset_rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *words, *data_o, *ls_o, *bases;
    if (!PyArg_ParseTuple(args, "O!OOO!", &PyList_Type, &words, &data_o, &ls_o, &PyDict_Type, &bases)) return NULL;
    Py_buffer dv, lv;
    if (PyObject_GetBuffer(data_o, &dv, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (get_buf(ls_o, &lv, 0, "ls") < 0) {
        PyBuffer_Release(&dv);
        return NULL;
    }
    SynTable T = {dv.buf, lv.buf, (Py_ssize_t)(lv.len / 8 - 1) / 2};
    int bad = lv.len / 8 < 1 || T.ls[0] != 0 || T.ls[lv.len / 8 - 1] != (i64)dv.len + 1;
    for (Py_ssize_t k = 1; k < lv.len / 8 && !bad; k++) /* every line ends in a newline (or the end) */
        bad = T.ls[k] <= T.ls[k - 1] || (k < lv.len / 8 - 1 && ((const char *)dv.buf)[T.ls[k] - 1] != '\n');
    Py_ssize_t n_words = PyList_GET_SIZE(words);
    PyObject *ptr_b = bad ? NULL : PyBytes_FromStringAndSize(NULL, (n_words + 1) * (Py_ssize_t)sizeof(i64));
    if (!ptr_b) {
        PyBuffer_Release(&dv);
        PyBuffer_Release(&lv);
        if (bad) PyErr_SetString(PyExc_ValueError, "synset_rows: ls are not the line starts of data");
        return NULL;
    }
    i64 *ptr = (i64 *)PyBytes_AS_STRING(ptr_b);
    Buf ids = {NULL, 0}, cand = {NULL, 0};
    Py_ssize_t len = 0;
    int st = 0; /* 0 ok, 1 fall back to Python, 2 error raised */
    ptr[0] = 0;
    for (Py_ssize_t i = 0; i < n_words && !st; i++) {
        PyObject *word = PyList_GET_ITEM(words, i);
        Py_ssize_t start = len, n;
        int found;
        const char *u = PyUnicode_Check(word) ? PyUnicode_AsUTF8AndSize(word, &n) : NULL;
        if (!u) {
            PyErr_Clear();
            st = 1;
            break;
        }
        int r0 = synsets_of(&T, u, n, &ids, &len, &found);
        if (r0 < 0) {
            st = r0 == -2 ? (PyErr_NoMemory(), 2) : 1;
            break;
        }
        PyObject *bl = PyDict_GetItemWithError(bases, word);
        if (!bl && PyErr_Occurred()) {
            st = 2;
            break;
        }
        if (bl) {
            if (!PyList_Check(bl)) {
                st = 1;
                break;
            }
            for (Py_ssize_t b = 0; b < PyList_GET_SIZE(bl) && !st; b++) {
                Py_ssize_t bn;
                PyObject *bw = PyList_GET_ITEM(bl, b);
                const char *bu = PyUnicode_Check(bw) ? PyUnicode_AsUTF8AndSize(bw, &bn) : NULL;
                if (!bu) {
                    PyErr_Clear();
                    st = 1;
                } else if (synsets_of(&T, bu, bn, &ids, &len, &found) < 0) {
                    st = 1;
                }
            }
        } else if (bytes_end(u, n, "ss") || PyUnicode_GetLength(word) <= 2) {
            if (synsets_of(&T, u, n, &ids, &len, &found) < 0) st = 1;
        } else {
            int hit = 0;
            for (int e = 0; MORPH[e][0] && !hit && !st; e++) {
                if (!bytes_end(u, n, MORPH[e][0])) continue;
                Py_ssize_t k = (Py_ssize_t)strlen(MORPH[e][0]), a = (Py_ssize_t)strlen(MORPH[e][1]);
                char *c = G_BUF(&cand, n - k + a + 1);
                if (!c) {
                    st = 2;
                    PyErr_NoMemory();
                    break;
                }
                memcpy(c, u, (size_t)(n - k));
                memcpy(c + n - k, MORPH[e][1], (size_t)a);
                if (synsets_of(&T, c, n - k + a, &ids, &len, &hit) < 0) st = 1;
            }
            if (!hit && !st && synsets_of(&T, "", 0, &ids, &len, &found) < 0) st = 1;
        }
        if (st) break;
        if (len > start) {
            i64 *q = ids.p;
            qsort(q + start, (size_t)(len - start), sizeof(i64), cmp_i64);
            Py_ssize_t m = start + 1;
            for (Py_ssize_t k = start + 1; k < len; k++)
                if (q[k] != q[m - 1]) q[m++] = q[k];
            len = m;
        }
        ptr[i + 1] = (i64)len;
    }
    PyObject *ret = NULL;
    if (st == 0) {
        PyObject *ids_b = PyBytes_FromStringAndSize(ids.p ? ids.p : "", len * (Py_ssize_t)sizeof(i64));
        if (ids_b) ret = Py_BuildValue("(NN)", ptr_b, ids_b);
        if (!ret) Py_DECREF(ptr_b);
    } else {
        Py_DECREF(ptr_b);
        if (st == 1) {
            Py_INCREF(Py_None);
            ret = Py_None;
        }
    }
    free(ids.p);
    free(cand.p);
    PyBuffer_Release(&dv);
    PyBuffer_Release(&lv);
    return ret;
}

/* ---------------------------------------------------------------- the jar's -norm on ASCII text
 * The C twin of ``normalize_line`` (_normalize.py) followed by lower-casing and splitting (``Meteor.tokenize``)
 * for text of printable ASCII without runs of dots or the word DOTMULTI (the multi-dot passes); anything else
 * returns None and the Python function (the reference) normalizes it. Each regular-expression pass there is
 * one left-to-right, non-overlapping pass here over a three-character pattern.
 */
enum { C_DIGIT, C_NOT_DIGIT, C_ALPHA, C_NOT_ALPHA, C_NOT_ALNUM_ALPHA, C_ALNUM, C_ALNUM_DOT, C_S };

static int in_class(int cls, unsigned char c) {
    int digit = c >= '0' && c <= '9', alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    switch (cls) {
        case C_DIGIT: return digit;
        case C_NOT_DIGIT: return !digit;
        case C_ALPHA: return alpha;
        case C_NOT_ALPHA: return !alpha;
        case C_NOT_ALNUM_ALPHA: return !alpha && !digit; /* [^ALPHA0-9] */
        case C_ALNUM: return alpha || digit;
        case C_ALNUM_DOT: return alpha || digit || c == '.';
        default: return c == 's';
    }
}

/* re.sub("(X)m(Y)", repl): mode 0 "X m Y", 1 "X Y" (m dropped), 2 "X mY"; out has room for 2n bytes */
static Py_ssize_t sub3(const char *in, Py_ssize_t n, char *out, int x, char m, int y, int mode) {
    Py_ssize_t o = 0, i = 0;
    while (i < n) {
        if (i + 2 < n && in[i + 1] == m && in_class(x, (unsigned char)in[i]) && in_class(y, (unsigned char)in[i + 2])) {
            out[o++] = in[i];
            out[o++] = ' ';
            if (mode != 1) out[o++] = m;
            if (mode == 0) out[o++] = ' ';
            out[o++] = in[i + 2];
            i += 3;
        } else {
            out[o++] = in[i++];
        }
    }
    return o;
}

static PyObject *norm_tokens(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *text, *prefixes;
    int lower;
    if (!PyArg_ParseTuple(args, "UO!p", &text, &PyDict_Type, &prefixes, &lower)) return NULL;
    Py_ssize_t n;
    const char *t = PyUnicode_AsUTF8AndSize(text, &n);
    if (!t) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c < 0x20 || c >= 0x7f || (c == '.' && i + 1 < n && t[i + 1] == '.')) Py_RETURN_NONE;
        if (c == 'D' && i + 8 <= n && memcmp(t + i, "DOTMULTI", 8) == 0) Py_RETURN_NONE;
    }
    size_t cap = (size_t)n * 12 + 64; /* every character becomes at most 3, and a period token gains one */
    char *a = malloc(cap), *b = malloc(cap);
    PyObject *out = NULL;
    if (!a || !b) {
        free(a);
        free(b);
        return PyErr_NoMemory();
    }
    /* [^ALNUM\s.'`,-] -> " c ", on " text " */
    Py_ssize_t m = 0;
    a[m++] = ' ';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (in_class(C_ALNUM, c) || c == ' ' || c == '.' || c == '\'' || c == '`' || c == ',' || c == '-') {
            a[m++] = (char)c;
        } else {
            a[m++] = ' ';
            a[m++] = (char)c;
            a[m++] = ' ';
        }
    }
    a[m++] = ' ';
    char *tmp;
#define PASS(X, M, Y, MODE) (m = sub3(a, m, b, X, M, Y, MODE), tmp = a, a = b, b = tmp)
    PASS(C_NOT_DIGIT, ',', C_NOT_DIGIT, 0);
    PASS(C_DIGIT, ',', C_NOT_DIGIT, 0);
    PASS(C_NOT_DIGIT, ',', C_DIGIT, 0);
    for (Py_ssize_t i = 0; i < m; i++) /* [`] -> ' */
        if (a[i] == '`') a[i] = '\'';
    { /* '' -> " \" " */
        Py_ssize_t o = 0;
        for (Py_ssize_t i = 0; i < m;) {
            if (a[i] == '\'' && i + 1 < m && a[i + 1] == '\'') {
                b[o++] = ' ';
                b[o++] = '"';
                b[o++] = ' ';
                i += 2;
            } else {
                b[o++] = a[i++];
            }
        }
        m = o;
        tmp = a, a = b, b = tmp;
    }
    { /* -- -> - (str.replace), then ([ALNUM.])-([ALNUM]) -> "\1 \2" */
        Py_ssize_t o = 0;
        for (Py_ssize_t i = 0; i < m;) {
            if (a[i] == '-' && i + 1 < m && a[i + 1] == '-') {
                b[o++] = '-';
                i += 2;
            } else {
                b[o++] = a[i++];
            }
        }
        m = o;
        tmp = a, a = b, b = tmp;
    }
    PASS(C_ALNUM_DOT, '-', C_ALNUM, 1);
    PASS(C_NOT_ALPHA, '\'', C_NOT_ALPHA, 0);
    PASS(C_NOT_ALNUM_ALPHA, '\'', C_ALPHA, 0);
    PASS(C_ALPHA, '\'', C_NOT_ALPHA, 0);
    PASS(C_ALPHA, '\'', C_ALPHA, 2);
    PASS(C_DIGIT, '\'', C_S, 2);
#undef PASS
    /* tokens; a token ending in a period: a non-breaking prefix, an abbreviation, or a full stop split off */
    Py_ssize_t o = 0, i = 0;
    int failed = 0;
    while (i < m && !failed) {
        while (i < m && a[i] == ' ') i++;
        if (i == m) break;
        Py_ssize_t s0 = i;
        while (i < m && a[i] != ' ') i++;
        Py_ssize_t len = i - s0;
        if (o) b[o++] = ' ';
        if (len > 1 && a[i - 1] == '.') {
            const char *pre = a + s0;
            Py_ssize_t pn = len - 1;
            int dot = 0, alpha = 0;
            for (Py_ssize_t k = 0; k < pn; k++) {
                dot |= pre[k] == '.';
                alpha |= in_class(C_ALPHA, (unsigned char)pre[k]);
            }
            if (dot && alpha) { /* tok.replace(".", "") */
                for (Py_ssize_t k = 0; k < len; k++)
                    if (pre[k] != '.') b[o++] = pre[k];
                continue;
            }
            PyObject *key = PyUnicode_FromStringAndSize(pre, pn);
            if (!key) {
                failed = 1;
                break;
            }
            PyObject *kind_o = PyDict_GetItemWithError(prefixes, key);
            Py_DECREF(key);
            long kind = 0;
            if (kind_o) {
                kind = PyLong_Check(kind_o) ? PyLong_AsLong(kind_o) : -2;
                if (kind == -1 && PyErr_Occurred()) PyErr_Clear();
            } else if (PyErr_Occurred()) {
                failed = 1;
                break;
            }
            if (kind == -2) { /* not the table parse_nonbreaking_prefixes makes: Python decides */
                failed = 2;
                break;
            }
            Py_ssize_t j = i;
            while (j < m && a[j] == ' ') j++;
            int has_next = j < m;
            unsigned char nx = has_next ? (unsigned char)a[j] : 0;
            int keep = kind == 1 || (has_next && nx >= 'a' && nx <= 'z') ||
                       (kind == 2 && has_next && nx >= '0' && nx <= '9');
            memcpy(b + o, pre, (size_t)pn);
            o += pn;
            if (!keep) b[o++] = ' ';
            b[o++] = '.';
        } else {
            memcpy(b + o, a + s0, (size_t)len);
            o += len;
        }
    }
    if (!failed) {
        out = PyList_New(0);
        for (Py_ssize_t k = 0; out && k < o;) {
            Py_ssize_t s0 = k;
            while (k < o && b[k] != ' ') {
                if (lower && b[k] >= 'A' && b[k] <= 'Z') b[k] = (char)(b[k] - 'A' + 'a');
                k++;
            }
            if (k > s0) {
                PyObject *w = PyUnicode_FromStringAndSize(b + s0, k - s0);
                if (!w || PyList_Append(out, w) < 0) {
                    Py_XDECREF(w);
                    Py_CLEAR(out);
                    break;
                }
                Py_DECREF(w);
            }
            k++;
        }
    } else if (failed == 2) {
        Py_INCREF(Py_None);
        out = Py_None;
    }
    free(a);
    free(b);
    return out;
}

static PyObject *align_batch(PyObject *self, PyObject *args) {
    (void)self;
    static const char *names[N_IN] = {"kind",   "whash",   "shash", "func", "syn_ptr", "syn_ids",
                                      "tok_ptr", "toks",   "phr_ptr", "phr", "occ_ptr", "occ",
                                      "para_len", "pair_h", "pair_r", "out", "flags"};
    PyObject *objs[N_IN];
    long long beam_size;
    int prune;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOLp", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11], &objs[12],
                          &objs[13], &objs[14], &objs[15], &objs[16], &beam_size, &prune))
        return NULL;
    Py_buffer v[N_IN];
    int got = 0;
    for (; got < N_IN; got++)
        if (get_buf(objs[got], &v[got], got == 15, names[got]) < 0) break;
    if (got < N_IN) {
        for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
        return NULL;
    }
    Batch B;
    B.kind = v[0].buf;
    B.n_modules = v[0].len / 8;
    B.whash = v[1].buf;
    B.shash = v[2].buf;
    B.func = v[3].buf;
    B.syn_ptr = v[4].buf;
    B.syn_ids = v[5].buf;
    B.tok_ptr = v[6].buf;
    B.toks = v[7].buf;
    B.phr_ptr = v[8].buf;
    B.phr = v[9].buf;
    B.occ_ptr = v[10].buf;
    B.occ = v[11].buf;
    B.para_len = v[12].buf;
    const i64 *flags = v[16].buf;
    B.has_syn = v[16].len >= 16 ? (int)flags[0] : 0;
    B.has_para = v[16].len >= 16 ? (int)flags[1] : 0;
    B.beam_size = beam_size < 1 ? 1 : (i64)beam_size;
    B.prune = prune;
    const i64 *ph = v[13].buf, *pr = v[14].buf;
    i64 n_pairs = v[13].len / 8;
    i64 *out = v[15].buf;
    int failed = 0;
    if (v[14].len / 8 != n_pairs || v[15].len / 8 < n_pairs * N_STATS || B.n_modules > 4) {
        PyErr_SetString(PyExc_ValueError, "align_batch: pair arrays and the output do not agree");
        failed = 2;
    }
    if (!failed) {
        Py_BEGIN_ALLOW_THREADS
        Work w;
        memset(&w, 0, sizeof(w));
        SynIndex sx = {-1, 0, NULL, NULL};
        for (i64 p = 0; p < n_pairs; p++)
            if (one_pair(&B, &w, &sx, ph[p], pr[p], out + p * N_STATS)) {
                failed = 1;
                break;
            }
        free(sx.sp);
        free(sx.stamp);
        work_free(&w);
        Py_END_ALLOW_THREADS
        if (failed) PyErr_NoMemory();
    }
    for (int k = 0; k < N_IN; k++) PyBuffer_Release(&v[k]);
    if (failed) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"align_batch", align_batch, METH_VARARGS,
     "align_batch(kind, whash, shash, func, syn_ptr, syn_ids, tok_ptr, toks, phr_ptr, phr, occ_ptr, occ, "
     "para_len, pair_h, pair_r, out, flags, beam_size, prune): METEOR alignment counts of many pairs."},
    {"word_hashes", word_hashes, METH_VARARGS,
     "word_hashes(words, stem, out): Java hashes of the words (or of their Snowball English stems)."},
    {"norm_tokens", norm_tokens, METH_VARARGS,
     "norm_tokens(text, prefixes, lower): the jar's -norm tokens of printable ASCII text (None: other text)."},
    {"synset_rows", synset_rows, METH_VARARGS,
     "synset_rows(words, data, ls, bases): each word's synsets from the jar's sorted table, CSR."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_calign",
                                    "METEOR 1.5 alignment of many sentence pairs, compiled.", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__calign(void) { return PyModule_Create(&module); }
