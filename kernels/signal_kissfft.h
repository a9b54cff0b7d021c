/* signal_kissfft.h - kissfft's complex FFT (radix 4 then 2) and its real-FFT post-processing, as
 * TFLM's SignalRfft runs them (kiss_fft / kiss_fftr), written once for every scalar type.
 *
 * Included by kernels/signal.c once per type, with these defined before each inclusion:
 *   KF_C           the complex type ({KF_S r, i})
 *   KF_N(x)        x suffixed with the type's name (bfly2 -> bfly2_i16)
 * and these static functions of the type's arithmetic (the suffix as KF_N gives it):
 *   fixdiv(c, d)     kissfft's C_FIXDIV: every stage's 1/radix scaling (no-op for float)
 *   cmul(a, b)       C_MUL (fixed point: products summed wide, then rounded)
 *   cadd, csub       C_ADD, C_SUB
 *   sadd(a, b), ssub(a, b)  a scalar sum/difference in the type (wrapping for integers)
 *   half_add(a, b), half_sub(a, b)  kiss_fftr's HALF_OF(a + b), HALF_OF(a - b) (>> 1 for integers,
 *                    the sum taken in `int` for int16 and wrapped in 32 bits for int32; * 0.5f)
 *   cneg_i(c)        c with its imaginary part negated
 * Nothing here allocates; kf_rfft_frame works in the caller's tmp buffer (ncfft complex values).
 */

static void KF_N(bfly2)(KF_C *f, int64_t fstride, const KF_C *tw, int64_t m) {
  KF_C *f2 = f + m;
  const KF_C *t = tw;
  for (int64_t k = 0; k < m; k++, f++, f2++, t += fstride) {
    KF_N(fixdiv)(f, 2);
    KF_N(fixdiv)(f2, 2);
    const KF_C p = KF_N(cmul)(*f2, *t);
    *f2 = KF_N(csub)(*f, p);
    *f = KF_N(cadd)(*f, p);
  }
}

static void KF_N(bfly4)(KF_C *f, int64_t fstride, const KF_C *tw, int64_t m) {
  const KF_C *t1 = tw, *t2 = tw, *t3 = tw;
  for (int64_t k = 0; k < m; k++, f++) {
    KF_N(fixdiv)(&f[0], 4); KF_N(fixdiv)(&f[m], 4); KF_N(fixdiv)(&f[2 * m], 4); KF_N(fixdiv)(&f[3 * m], 4);
    const KF_C s0 = KF_N(cmul)(f[m], *t1), s1 = KF_N(cmul)(f[2 * m], *t2), s2 = KF_N(cmul)(f[3 * m], *t3);
    const KF_C s5 = KF_N(csub)(f[0], s1);
    f[0] = KF_N(cadd)(f[0], s1);
    const KF_C s3 = KF_N(cadd)(s0, s2), s4 = KF_N(csub)(s0, s2);
    f[2 * m] = KF_N(csub)(f[0], s3);
    t1 += fstride; t2 += 2 * fstride; t3 += 3 * fstride;
    f[0] = KF_N(cadd)(f[0], s3);
    f[m].r = KF_N(sadd)(s5.r, s4.i);
    f[m].i = KF_N(ssub)(s5.i, s4.r);
    f[3 * m].r = KF_N(ssub)(s5.r, s4.i);
    f[3 * m].i = KF_N(sadd)(s5.i, s4.r);
  }
}

/* kissfft's decimation in time: factors (p, m) pairs, recursion depth = number of stages. */
static void KF_N(kf_work)(KF_C *out, const KF_C *in, int64_t fstride, const int32_t *factors, const KF_C *tw) {
  const int32_t p = factors[0], m = factors[1];
  KF_C *beg = out, *end = out + (int64_t)p * m;
  if (m == 1) {
    for (; out != end; out++, in += fstride) *out = *in;
  } else {
    for (; out != end; out += m, in += fstride) KF_N(kf_work)(out, in, fstride * p, factors + 2, tw);
  }
  if (p == 2) KF_N(bfly2)(beg, fstride, tw, m);
  else KF_N(bfly4)(beg, fstride, tw, m);
}

/* One frame: `work` holds 2 ncfft real samples (read as ncfft complex), fd gets ncfft + 1 bins. */
static void KF_N(kf_rfft_frame)(const KF_C *work, KF_C *tmp, KF_C *fd, int32_t ncfft, const int32_t *factors,
                                const KF_C *tw, const KF_C *super) {
  KF_N(kf_work)(tmp, work, 1, factors, tw);
  KF_C dc = tmp[0];
  KF_N(fixdiv)(&dc, 2);
  fd[0].r = KF_N(sadd)(dc.r, dc.i);
  fd[ncfft].r = KF_N(ssub)(dc.r, dc.i);
  fd[0].i = fd[ncfft].i = 0;
  for (int32_t k = 1; k <= ncfft / 2; k++) {
    KF_C fpk = tmp[k], fpnk = KF_N(cneg_i)(tmp[ncfft - k]);
    KF_N(fixdiv)(&fpk, 2);
    KF_N(fixdiv)(&fpnk, 2);
    const KF_C f1k = KF_N(cadd)(fpk, fpnk), f2k = KF_N(csub)(fpk, fpnk);
    const KF_C t = KF_N(cmul)(f2k, super[k - 1]);
    fd[k].r = KF_N(half_add)(f1k.r, t.r);
    fd[k].i = KF_N(half_add)(f1k.i, t.i);
    fd[ncfft - k].r = KF_N(half_sub)(f1k.r, t.r);
    fd[ncfft - k].i = KF_N(half_sub)(t.i, f1k.i);
  }
}
