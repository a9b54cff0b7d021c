"""GATHER variants (issue 28) on kernels/gather.c, golden from native TFLite: int8 / int16 / bool
params, batch_dims 1 (also given as -1) on axes 1 and 2, int64 indices."""
from oplib import Case, T


def gather(name, params, pdtype, indices, ishape, axis, batch_dims, out, version, idtype='int32', quant=None):
    lo, hi = {'int8': (-128, 127), 'int16': (-32768, 32767)}.get(pdtype, (None, None))
    return Case('gather_' + name + '_native', 'GATHER',
                [T(pdtype, params, quant=quant, lo=lo, hi=hi), T(idtype, ishape, data=list(indices), const=True)],
                [T(pdtype, out, quant=quant)], options=('GatherOptions', {'axis': axis, 'batch_dims': batch_dims}),
                version=version, golden='native')


CASES = [
    gather('int8', [4, 3], 'int8', [3, 0, 3], [3], 0, 0, [3, 3], 2, quant=(0.1, -4)),
    gather('int16_axis1', [3, 4], 'int16', [1, 3], [2], 1, 0, [3, 2], 4),
    gather('bool', [5], 'bool', [4, 1, 1], [3], 0, 0, [3], 3),
    gather('batch_dims1_axis1', [2, 3, 4], 'float32', [2, 0, 1, 1], [2, 2], 1, 1, [2, 2, 4], 5),
    gather('batch_dims1_axis2', [2, 3, 4], 'int8', [3, 0, 1, 2, 2, 0], [2, 3], 2, 1, [2, 3, 3], 5, quant=(0.5, 3)),
    gather('batch_dims_neg', [2, 3, 2], 'float32', [1, 2, 0, 0], [2, 2], 1, -1, [2, 2, 2], 5),
    gather('int64_indices', [3, 2, 2], 'float32', [2, 1], [2], 0, 0, [2, 2, 2], 1, idtype='int64'),
]
