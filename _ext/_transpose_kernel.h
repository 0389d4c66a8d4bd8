/* Cache-blocked transposition of 32-bit elements: 4 x 4 register transposes (SSE2, part of
 * every x86-64 CPU) inside square blocks that stay in the first-level cache; a scalar loop
 * elsewhere and on other architectures. dst[j - lo][i] = src[i][j] for lo <= j < hi.
 *
 * The columns are taken in panels of DAFZARR_TR_PANEL: a panel's pass down the source rows
 * keeps that many destination rows (and 32 source rows) in use at once, few enough pages
 * for the TLB to hold. Sweeping every column at once instead touches a new destination page
 * at each store, and a 20,000-column matrix then spends most of its time in page walks. */
#ifndef DAFZARR_TRANSPOSE_KERNEL_H
#define DAFZARR_TRANSPOSE_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define DAFZARR_TR_BLOCK 32
#ifndef DAFZARR_TR_PANEL
#define DAFZARR_TR_PANEL 256
#endif

static inline void dafzarr_tr32_scalar(const uint32_t *src, ptrdiff_t ss, uint32_t *dst,
                                       ptrdiff_t ds, ptrdiff_t i0, ptrdiff_t i1,
                                       ptrdiff_t j0, ptrdiff_t j1, ptrdiff_t lo) {
    for (ptrdiff_t i = i0; i < i1; i++)
        for (ptrdiff_t j = j0; j < j1; j++)
            dst[(j - lo) * ds + i] = src[i * ss + j];
}

/* One block: source rows ib:ie, columns jb:je. */
static inline void dafzarr_tr32_block(const uint32_t *src, ptrdiff_t ss, uint32_t *dst,
                                      ptrdiff_t ds, ptrdiff_t ib, ptrdiff_t ie,
                                      ptrdiff_t jb, ptrdiff_t je, ptrdiff_t lo) {
#if defined(__SSE2__)
    ptrdiff_t i4 = ib + ((ie - ib) & ~(ptrdiff_t)3), j4 = jb + ((je - jb) & ~(ptrdiff_t)3);
    for (ptrdiff_t i = ib; i < i4; i += 4) {
        for (ptrdiff_t j = jb; j < j4; j += 4) {
            const uint32_t *s = src + i * ss + j;
            uint32_t *d = dst + (j - lo) * ds + i;
            __m128i r0 = _mm_loadu_si128((const __m128i *)s);
            __m128i r1 = _mm_loadu_si128((const __m128i *)(s + ss));
            __m128i r2 = _mm_loadu_si128((const __m128i *)(s + 2 * ss));
            __m128i r3 = _mm_loadu_si128((const __m128i *)(s + 3 * ss));
            __m128i t0 = _mm_unpacklo_epi32(r0, r1), t1 = _mm_unpacklo_epi32(r2, r3);
            __m128i t2 = _mm_unpackhi_epi32(r0, r1), t3 = _mm_unpackhi_epi32(r2, r3);
            _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi64(t0, t1));
            _mm_storeu_si128((__m128i *)(d + ds), _mm_unpackhi_epi64(t0, t1));
            _mm_storeu_si128((__m128i *)(d + 2 * ds), _mm_unpacklo_epi64(t2, t3));
            _mm_storeu_si128((__m128i *)(d + 3 * ds), _mm_unpackhi_epi64(t2, t3));
        }
    }
    dafzarr_tr32_scalar(src, ss, dst, ds, ib, i4, j4, je, lo);  /* right edge */
    dafzarr_tr32_scalar(src, ss, dst, ds, i4, ie, jb, je, lo);  /* bottom edge */
#else
    dafzarr_tr32_scalar(src, ss, dst, ds, ib, ie, jb, je, lo);
#endif
}

static void dafzarr_transpose32(const uint32_t *src, ptrdiff_t ss, ptrdiff_t nrows,
                                uint32_t *dst, ptrdiff_t ds, ptrdiff_t lo, ptrdiff_t hi) {
    for (ptrdiff_t pb = lo; pb < hi; pb += DAFZARR_TR_PANEL) {
        ptrdiff_t pe = pb + DAFZARR_TR_PANEL < hi ? pb + DAFZARR_TR_PANEL : hi;
        for (ptrdiff_t ib = 0; ib < nrows; ib += DAFZARR_TR_BLOCK) {
            ptrdiff_t ie = ib + DAFZARR_TR_BLOCK < nrows ? ib + DAFZARR_TR_BLOCK : nrows;
            for (ptrdiff_t jb = pb; jb < pe; jb += DAFZARR_TR_BLOCK) {
                ptrdiff_t je = jb + DAFZARR_TR_BLOCK < pe ? jb + DAFZARR_TR_BLOCK : pe;
                dafzarr_tr32_block(src, ss, dst, ds, ib, ie, jb, je, lo);
            }
        }
    }
}

#endif
