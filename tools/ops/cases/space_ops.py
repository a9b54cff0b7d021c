"""Cases for kernels/space_ops.c: SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND (3-D and 4-D as TFLite
takes them, paddings / crops on each side, a block of 1, batch > 1, int8 padded with the output
zero point, int32) and MIRROR_PAD (REFLECT and SYMMETRIC over ranks 1-5, the largest padding each
mode allows, int8 / int32 / int64). Integer goldens from native TFLite."""
from oplib import Case, T, shape_tag


def i32(vals, shape):
    return T('int32', shape, data=list(vals), const=True)


def s2b(name, shape, block, pads, out, dtype='float32', quant=None):
    lo, hi = (-128, 127) if dtype == 'int8' else (None, None)
    return Case('space_to_batch_nd_' + name, 'SPACE_TO_BATCH_ND',
                [T(dtype, shape, quant=quant, lo=lo, hi=hi), i32(block, [len(block)]),
                 i32([v for p in pads for v in p], [len(pads), 2])],
                [T(dtype, out, quant=quant)], options=('SpaceToBatchNDOptions', {}),
                version=2 if dtype == 'int8' else 3 if len(shape) != 4 else 1,
                golden='litert' if dtype == 'float32' else 'native')


def b2s(name, shape, block, crops, out, dtype='float32', quant=None):
    lo, hi = (-128, 127) if dtype == 'int8' else (None, None)
    return Case('batch_to_space_nd_' + name, 'BATCH_TO_SPACE_ND',
                [T(dtype, shape, quant=quant, lo=lo, hi=hi), i32(block, [len(block)]),
                 i32([v for p in crops for v in p], [len(crops), 2])],
                [T(dtype, out, quant=quant)], options=('BatchToSpaceNDOptions', {}),
                version=2 if dtype == 'int8' else 3 if len(shape) != 4 else 1,
                golden='litert' if dtype == 'float32' else 'native')


CASES = [
    s2b('4d_2x2', [1, 4, 4, 3], [2, 2], [[0, 0], [0, 0]], [4, 2, 2, 3]),
    s2b('4d_pad', [2, 3, 5, 2], [2, 3], [[1, 0], [0, 1]], [12, 2, 2, 2]),
    s2b('4d_block1', [1, 2, 3, 2], [1, 1], [[1, 1], [2, 0]], [1, 4, 5, 2]),
    s2b('3d', [2, 5, 3], [3], [[1, 0]], [6, 2, 3]),
    s2b('4d_int8_zp', [1, 3, 3, 2], [2, 2], [[1, 0], [0, 1]], [4, 2, 2, 2], dtype='int8', quant=(0.1, -7)),
    s2b('4d_int32', [1, 4, 2, 1], [2, 1], [[0, 0], [1, 1]], [2, 2, 4, 1], dtype='int32'),
    b2s('4d_2x2', [4, 2, 2, 3], [2, 2], [[0, 0], [0, 0]], [1, 4, 4, 3]),
    b2s('4d_crop', [12, 2, 2, 2], [2, 3], [[1, 0], [0, 1]], [2, 3, 5, 2]),
    b2s('4d_block1', [1, 3, 2, 2], [1, 1], [[1, 1], [0, 1]], [1, 1, 1, 2]),
    b2s('3d', [6, 2, 3], [3], [[1, 0]], [2, 5, 3]),
    b2s('4d_int8', [4, 2, 2, 2], [2, 2], [[1, 0], [0, 1]], [1, 3, 3, 2], dtype='int8', quant=(0.1, -7)),
    b2s('4d_int32', [2, 2, 4, 1], [2, 1], [[0, 0], [1, 1]], [1, 4, 2, 1], dtype='int32'),
]


def mirror(shape, pads, symmetric, dtype='float32', quant=None, name=None):
    out = [d + a + b for d, (a, b) in zip(shape, pads)]
    lo, hi = (-128, 127) if dtype == 'int8' else (None, None)
    mode = 'sym' if symmetric else 'refl'
    return Case(name or f'mirror_pad_{shape_tag(shape)}_{mode}' + ('' if dtype == 'float32' else '_' + dtype),
                'MIRROR_PAD', [T(dtype, shape, quant=quant, lo=lo, hi=hi),
                               i32([v for p in pads for v in p], [len(pads), 2])],
                [T(dtype, out, quant=quant)], options=('MirrorPadOptions', {'mode': 1 if symmetric else 0}),
                version=2 if dtype == 'int8' else 1, golden='litert' if dtype == 'float32' else 'native')


for sym in (False, True):
    e = 1 if sym else 0   # SYMMETRIC may pad the whole dimension, REFLECT one less
    CASES += [
        mirror([5], [[2, 3 + e]], sym), mirror([3, 4], [[1, 2], [3, 0]], sym),
        mirror([2, 3, 4], [[1, 1], [2, 1 + e], [0, 3]], sym), mirror([2, 3, 2, 3], [[0, 1], [1, 1], [1, e], [2, 2]], sym),
        mirror([2, 2, 3, 2, 3], [[1, e], [1, 0], [2, 1], [0, 1], [1, 2]], sym),
    ]
CASES += [
    mirror([1], [[0, 1]], True, name='mirror_pad_1_sym_edge'),
    mirror([3, 4], [[2, 2], [1, 3]], False, dtype='int8', quant=(0.05, 3)),
    mirror([2, 5], [[1, 1], [4, 4]], False, dtype='int32'),
    mirror([4, 2], [[4, 4], [2, 2]], True, dtype='int64'),
]
