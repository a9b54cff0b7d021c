"""Cases for kernels/softmax.c: SOFTMAX (beta), LOG_SOFTMAX, L2_NORMALIZATION over the last axis."""
from oplib import unary_case

SHAPES = [[5], [2, 7], [2, 3, 4], [1, 2, 3, 4], [2, 1, 2, 3, 4], [3, 1], [0, 4]]
CASES = []
for shape in SHAPES:
    CASES.append(unary_case('SOFTMAX', shape, lo=-4, hi=4, options=('SoftmaxOptions', {'beta': 1.0})))
    CASES.append(unary_case('LOG_SOFTMAX', shape, lo=-4, hi=4, options=('LogSoftmaxOptions', {})))
for beta in (0.5, 2.0):
    CASES.append(unary_case('SOFTMAX', [2, 3, 5], lo=-4, hi=4, options=('SoftmaxOptions', {'beta': beta}),
                            name=f"softmax_beta_{str(beta).replace('.', '_')}"))
for shape in ([6], [2, 3], [2, 3, 4], [1, 2, 2, 8], [3, 1], [0, 4]):
    CASES.append(unary_case('L2_NORMALIZATION', shape, lo=-2, hi=2, options=('L2NormOptions', {})))
