"""BATCH_MATMUL int8 and int16 (kernels/batch_matmul.c, issue 28), golden from native TFLite: adj_x /
adj_y, broadcast batch dims up to rank 5, a constant rhs, extreme zero points (int8; int16 has 0),
K of 1, int16 sums past 2^31."""
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


def qbmm16(name, a, b, out, sa, sb, so, adj_x=False, adj_y=False, const_b=False, lo=-32768, hi=32767):
    return Case('bmm16_' + name, 'BATCH_MATMUL',
                [T('int16', a, quant=(sa, 0), lo=lo, hi=hi), T('int16', b, quant=(sb, 0), lo=lo, hi=hi, const=const_b)],
                [T('int16', out, quant=(so, 0))], options=('BatchMatMulOptions', {'adj_x': adj_x, 'adj_y': adj_y}),
                version=3, golden='native')


CASES += [
    qbmm16('2x3_3x4', [2, 3], [3, 4], [2, 4], 0.001, 0.002, 0.01, lo=-3000, hi=3000),
    qbmm16('adj_x', [2, 5, 3], [2, 5, 4], [2, 3, 4], 0.0003, 0.0004, 0.5, adj_x=True),
    qbmm16('adj_y', [3, 4, 6], [3, 2, 6], [3, 4, 2], 0.0002, 0.0005, 0.8, adj_y=True),
    qbmm16('bcast', [2, 1, 3, 4], [3, 4, 5], [2, 3, 3, 5], 0.01, 0.001, 0.05, lo=-500, hi=500),
    qbmm16('r5_const', [1, 2, 1, 2, 8], [8, 3], [1, 2, 1, 2, 3], 0.0002, 0.0003, 0.3, const_b=True),
    qbmm16('k1_clamp', [4, 1], [1, 3], [4, 3], 0.5, 0.25, 0.01, lo=-200, hi=200),
    qbmm16('big_k', [2, 40], [40, 3], [2, 3], 3e-5, 3e-5, 0.7),   # sums past 2^31
]


def hbmm(name, a, b, out, sb, adj_x=False, adj_y=False, asym=False, lo=-1.0, hi=1.0, const_b=True):
    return Case('bmmh_' + name, 'BATCH_MATMUL',
                [T('float32', a, lo=lo, hi=hi), T('int8', b, quant=(sb, 0), lo=-127, hi=127, const=const_b)],
                [T('float32', out)],
                options=('BatchMatMulOptions', {'adj_x': adj_x, 'adj_y': adj_y, 'asymmetric_quantize_inputs': asym}),
                version=4 if asym else 1, golden='native')


# Hybrid (float32 lhs, int8 rhs): each lhs row quantized at invoke, symmetric or asymmetric.
CASES += [
    hbmm('2x3_3x4', [2, 3], [3, 4], [2, 4], 0.02),
    hbmm('adj_x', [2, 5, 3], [2, 5, 4], [2, 3, 4], 0.01, adj_x=True, lo=-3.0, hi=2.0),
    hbmm('adj_y', [3, 4, 6], [3, 2, 6], [3, 4, 2], 0.05, adj_y=True),
    hbmm('bcast', [2, 1, 3, 4], [3, 4, 5], [2, 3, 3, 5], 0.03, lo=-0.5, hi=4.0),
    hbmm('r5', [1, 2, 1, 2, 8], [8, 3], [1, 2, 1, 2, 3], 0.004),
    hbmm('asym', [3, 16], [16, 5], [3, 5], 0.02, asym=True, lo=-0.3, hi=2.5),
    hbmm('asym_adj', [2, 7, 4], [2, 6, 7], [2, 4, 6], 0.015, adj_x=True, adj_y=True, asym=True, lo=0.1, hi=3.0),
    hbmm('asym_neg', [4, 9], [9, 3], [4, 3], 0.03, asym=True, lo=-2.0, hi=-0.5),
]
