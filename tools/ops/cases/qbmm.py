"""BATCH_MATMUL int8 (kernels/batch_matmul.c, issue 28), golden from native TFLite: adj_x / adj_y,
broadcast batch dims up to rank 5, a constant rhs, extreme zero points, K of 1."""
from oplib import Case, T


def qbmm(name, a, b, out, qa, qb, qo, adj_x=False, adj_y=False, const_b=False):
    return Case('batch_matmul_int8_' + name + '_native', 'BATCH_MATMUL',
                [T('int8', a, quant=qa, lo=-128, hi=127), T('int8', b, quant=qb, lo=-128, hi=127, const=const_b)],
                [T('int8', out, quant=qo)], options=('BatchMatMulOptions', {'adj_x': adj_x, 'adj_y': adj_y}),
                version=2, golden='native')


CASES = [
    qbmm('2x3_3x4', [2, 3], [3, 4], [2, 4], (0.05, 0), (0.02, 0), (0.04, 0)),
    qbmm('adj_x', [2, 5, 3], [2, 5, 4], [2, 3, 4], (0.03, -5), (0.04, 7), (0.1, 3), adj_x=True),
    qbmm('adj_y', [3, 4, 6], [3, 2, 6], [3, 4, 2], (0.02, 10), (0.05, -3), (0.08, -20), adj_y=True),
    qbmm('bcast', [2, 1, 3, 4], [3, 4, 5], [2, 3, 3, 5], (0.1, -128), (0.01, 127), (0.05, -128)),
    qbmm('r5_const', [1, 2, 1, 2, 8], [8, 3], [1, 2, 1, 2, 3], (0.02, 3), (0.03, 0), (0.06, 5), const_b=True),
    qbmm('k1', [4, 1], [1, 3], [4, 3], (0.5, 0), (0.25, 1), (0.2, -1)),
]
