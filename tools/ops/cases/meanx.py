"""Cases for MEAN of int32 / int64 (TFLite's reference Mean<T, int64>: int64 sums, truncated toward
zero by the count) and of int16 (zero points 0; the reference integer mean, also on the {1,2}
keep_dims form) in kernels/reduce.c, golden from native TFLite: ranks 1-5, negative and repeated
axes, keep_dims or not, negative means (truncation), sums past 2^31, a rescale above 1, equal
scales."""
from oplib import Case, T, reduce_shape, shape_tag

I16 = (-32768, 32767)


def meanx(shape, axes, keep, dtype, qin=None, qout=None, lo=None, hi=None, name=None):
    tag = '_'.join(str(a).replace('-', 'm') for a in axes) or 'none'
    return Case(name or f'meanx_{dtype}_{shape_tag(shape)}_a{tag}' + ('_keep' if keep else ''), 'MEAN',
                [T(dtype, shape, quant=qin, lo=lo, hi=hi), T('int32', [len(axes)], data=list(axes), const=True)],
                [T(dtype, reduce_shape(shape, axes, keep), quant=qout)],
                options=('ReducerOptions', {'keep_dims': keep}), version=3 if dtype == 'int16' else 1,
                golden='native')


CASES = [
    meanx([7], [0], False, 'int32', lo=-50, hi=20),
    meanx([3, 5], [1], True, 'int32', lo=-1000, hi=1000),
    meanx([2, 3, 4], [0, 2], False, 'int32', lo=2000000000, hi=2147483647),   # sums past 2^31
    meanx([2, 3, 2, 4], [1, 2], True, 'int32', lo=-9, hi=9),
    meanx([2, 1, 3, 2, 3], [-1, 2, -1], False, 'int32', lo=-7, hi=3),
    meanx([4, 3], [1], False, 'int64', lo=-(1 << 40), hi=1 << 40),
    meanx([2, 3, 4], [0, 1, 2], True, 'int64', lo=-100, hi=30),
    meanx([3, 2, 5], [-2], False, 'int64', lo=-5, hi=5),
    meanx([2, 5], [1], False, 'int16', (0.01, 0), (0.02, 0), I16[0], I16[1]),
    meanx([3, 4, 2], [0, 2], True, 'int16', (0.002, 0), (0.0005, 0), -3000, 3000),   # rescale above 1
    meanx([1, 4, 4, 3], [1, 2], True, 'int16', (0.05, 0), (0.03, 0), I16[0], I16[1]),   # {1,2} keep_dims
    meanx([2, 3, 2, 4, 3], [-1, 1], False, 'int16', (0.1, 0), (0.1, 0), -500, 500),   # equal scales
    meanx([4, 6], [0, 1], False, 'int16', (1.0, 0), (0.001, 0), -20, 20),   # clamps at the int16 range
]
