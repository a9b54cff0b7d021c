"""Cases for the uint8 / int8 MEAN over any axes, with and without keep_dims (kernels/reduce.c, TFLite's
reference integer mean; axes {1,2} of a rank-4 input with keep_dims stay on the optimized form),
golden from native TFLite: ranks 1-5, negative axes, a scalar output, extreme zero points and a
rescale above 1."""
from oplib import Case, T, reduce_shape, shape_tag

RANGE = {'int8': (-128, 127), 'uint8': (0, 255)}


def qmean(shape, axes, keep, dtype, qin, qout, name=None):
    lo, hi = RANGE[dtype]
    tag = '_'.join(str(a).replace('-', 'm') for a in axes)
    return Case(name or f'mean_{dtype}_{shape_tag(shape)}_a{tag}' + ('_keep' if keep else '') + '_native', 'MEAN',
                [T(dtype, shape, quant=qin, lo=lo, hi=hi), T('int32', [len(axes)], data=list(axes), const=True)],
                [T(dtype, reduce_shape(shape, axes, keep), quant=qout)],
                options=('ReducerOptions', {'keep_dims': keep}), version=2 if dtype == 'int8' else 1,
                golden='native')


CASES = [
    qmean([5], [0], False, 'int8', (0.05, -3), (0.04, 2)),
    qmean([4, 6], [0, 1], True, 'int8', (0.1, 10), (0.05, -10)),
    qmean([2, 3, 4], [1], False, 'int8', (0.02, -128), (0.02, 127)),
    qmean([2, 3, 4], [0, 2], True, 'uint8', (0.1, 128), (0.07, 120)),
    qmean([1, 4, 4, 3], [1, 2], False, 'int8', (0.0235, -13), (0.0118, -20)),
    qmean([1, 4, 4, 3], [1, 2], False, 'uint8', (0.03, 0), (0.02, 255)),
    qmean([2, 5, 3, 4], [3], True, 'int8', (0.2, 5), (0.05, 0)),
    qmean([2, 3, 2, 4, 3], [-1, 1], False, 'int8', (0.01, 0), (0.04, -7)),
    qmean([2, 3, 2, 4, 3], [0, 2, 4], True, 'uint8', (0.5, 100), (0.125, 30)),
    qmean([1, 1], [1], False, 'int8', (0.05, 1), (0.05, 1)),
    qmean([3, 7], [1], False, 'int8', (0.1, 0), (0.01, 0), name='mean_int8_rescale_up_native'),
]
