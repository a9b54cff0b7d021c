"""Cases for kernels/segment_ops.c: EMBEDDING_LOOKUP (float32 tables of rank 2-5, repeated ids,
int32 and int8 tables copied, the int8 hybrid form with a per-tensor and a per-row scale) and
SEGMENT_SUM (float32 and int32, one segment, ranks 1-5). Integer goldens and SEGMENT_SUM's native (LiteRT.js returns
other values for SEGMENT_SUM's output; native TFLite agrees with the sums)."""
from oplib import Case, T


def emb(name, ids, tshape, dtype='float32', out='float32', quant=None, const_table=True, golden=None):
    lo, hi = (-128, 127) if dtype == 'int8' else (None, None)
    return Case('embedding_lookup_' + name, 'EMBEDDING_LOOKUP',
                [T('int32', [len(ids)], data=list(ids)), T(dtype, tshape, const=const_table, quant=quant, lo=lo, hi=hi)],
                [T(out, [len(ids)] + list(tshape[1:]))],
                version=1, golden=golden or ('litert' if dtype == 'float32' and out == 'float32' else 'native'))


CASES = [
    emb('r2', [2, 0, 4, 2], [5, 3]), emb('r3', [1, 1, 0], [3, 2, 4]), emb('r4', [0, 2], [3, 2, 2, 3]),
    emb('r5', [1], [2, 2, 1, 2, 3]), emb('one', [0], [1, 1]), emb('input_table', [3, 1], [4, 3], const_table=False),
    emb('int32', [1, 0, 1], [2, 4], dtype='int32', out='int32'),
    emb('int8', [2, 0], [3, 4], dtype='int8', out='int8', quant=(0.1, 0)),
    emb('hybrid_int8', [2, 0, 1], [3, 5], dtype='int8', out='float32', quant=(0.05, 0), golden='native'),
    emb('hybrid_int8_per_row', [1, 2, 0], [3, 4], dtype='int8', out='float32',
        quant=([0.1, 0.02, 0.5], [0, 0, 0], 0), golden='native'),
]


def seg(name, ids, shape, dtype='float32'):
    out = [max(ids) + 1] + list(shape[1:])
    return Case('segment_sum_' + name, 'SEGMENT_SUM',
                [T(dtype, shape), T('int32', [len(ids)], data=list(ids), const=True)], [T(dtype, out)],
                options=('SegmentSumOptions', {}), golden='native')


CASES += [
    seg('r1', [0, 0, 1, 2, 2, 2], [6]), seg('r2', [0, 1, 1, 2], [4, 3]), seg('r3', [0, 1, 1], [3, 2, 2]),
    seg('r4_one', [0, 0, 0], [3, 1, 2, 2]), seg('r5', [0, 0, 1], [3, 2, 1, 2, 2]), seg('single', [0], [1, 4]),
    seg('int32', [0, 0, 1, 2, 2], [5, 3], dtype='int32'),
]
