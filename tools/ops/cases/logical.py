"""Cases for kernels/logical.c: LOGICAL_AND / LOGICAL_OR with broadcasting (ranks 1-5, a scalar,
sizes 0 and 1), LOGICAL_NOT, and SELECT (v1: a condition of the inputs' shape, a scalar, or of
rank 1 over their first dimension) for every dtype it takes."""
from oplib import BCAST_SHAPES, Case, T, bcast_shape, shape_tag

# TFLite's logical kernels broadcast up to rank 4 only; arenad's up to AR_MAX_RANK: the rank-5 and
# rank-6 broadcasts get goldens computed here (golden='hand') from the same seeded inputs.
CASES = []


def _broadcast_eval(fn, a, b, sa, sb):
    out = bcast_shape(sa, sb)
    n = len(out)
    pa, pb = [1] * (n - len(sa)) + list(sa), [1] * (n - len(sb)) + list(sb)

    def strides(p):
        st, acc = [0] * n, 1
        for i in range(n - 1, -1, -1):
            st[i] = 0 if p[i] == 1 else acc
            acc *= p[i]
        return st
    ta, tb = strides(pa), strides(pb)
    total = 1
    for d in out:
        total *= d
    res = []
    for flat in range(total):
        rem, ia, ib = flat, 0, 0
        for i in range(n - 1, -1, -1):
            c = rem % out[i]
            rem //= out[i]
            ia += c * ta[i]
            ib += c * tb[i]
        res.append(fn(a[ia], b[ib]))
    return res


for op, fn in (('LOGICAL_AND', lambda x, y: bool(x) and bool(y)), ('LOGICAL_OR', lambda x, y: bool(x) or bool(y))):
    opts = ('LogicalAndOptions' if op == 'LOGICAL_AND' else 'LogicalOrOptions', {})
    for a, b in BCAST_SHAPES:
        name = f'{op.lower()}_{shape_tag(a)}_{shape_tag(b)}'
        c = Case(name, op, [T('bool', a), T('bool', b)], [T('bool', bcast_shape(a, b))], options=opts)
        if a != b and max(len(a), len(b)) > 4:
            vals = c.input_values()
            c = Case(name, op, c.inputs, c.outputs, options=opts, golden='hand',
                     expect=[_broadcast_eval(fn, vals[0], vals[1], a, b)],
                     note='broadcast above rank 4 (TFLite stops at 4)')
        CASES.append(c)
    CASES.append(Case(f'{op.lower()}_const_rhs', op, [T('bool', [2, 3]), T('bool', [3], const=True)],
                      [T('bool', [2, 3])], options=opts))

for shape in ([5], [2, 3], [2, 3, 4], [1, 2, 3, 2], [2, 1, 2, 3, 2], [1], [0, 3]):
    CASES.append(Case(f'logical_not_{shape_tag(shape)}', 'LOGICAL_NOT', [T('bool', shape)],
                      [T('bool', shape)], options=('LogicalNotOptions', {})))


def select(c, x, dtype='float32', name=None, version=1):
    return Case(name or f'select_{shape_tag(c)}_{shape_tag(x)}' + ('' if dtype == 'float32' else '_' + dtype),
                'SELECT', [T('bool', c), T(dtype, x), T(dtype, x)], [T(dtype, x)],
                options=('SelectOptions', {}), version=version)


CASES += [
    select([7], [7]), select([3, 4], [3, 4]), select([2, 3, 4], [2, 3, 4]), select([2, 1, 3, 2], [2, 1, 3, 2]),
    select([2, 2, 1, 3, 2], [2, 2, 1, 3, 2], version=3),
    select([], [2, 3]), select([3], [3, 4]), select([2], [2, 3, 2, 2]), select([2], [2, 1, 2, 3, 2], version=3),
    select([1], [1]), select([0, 3], [0, 3]), select([0], [0, 2]),
    select([2, 3], [2, 3], dtype='int32'), select([3], [3, 2], dtype='int64'),
    select([4], [4], dtype='uint8'), select([2, 4], [2, 4], dtype='bool'),
    select([3, 4], [3, 4], dtype='int8', version=2), select([3], [3, 2], dtype='int8', version=2),
    select([], [2, 3], dtype='int16'), select([2, 3], [2, 3], dtype='int16'),
]

# Integer and bool goldens come from native TFLite's builtin kernels (golden='native'); LiteRT.js
# gives the float ones.
for _c in CASES:
    if _c.golden == 'litert' and any(t is not None and t.dtype != 'float32' for t in _c.inputs + _c.outputs):
        _c.golden = 'native'

