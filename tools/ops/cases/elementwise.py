"""Elementwise cases already covered by elementwise.c: ADD, MUL (float32, N-d broadcasting) and the
unary activations RELU, RELU6, LOGISTIC, HARD_SWISH."""
from oplib import BCAST_SHAPES as BCAST, binary_case, unary_case

CASES = []
for a, b in BCAST:
    CASES.append(binary_case('ADD', a, b, options=('AddOptions', {})))
    CASES.append(binary_case('MUL', a, b, options=('MulOptions', {})))
CASES += [
    binary_case('ADD', [2, 3, 4], [3, 4], const_b=True, name='add_const_relu6', lo=-4, hi=4,
                options=('AddOptions', {'fused_activation_function': 3})),
    binary_case('MUL', [2, 3], [2, 3], name='mul_relu_n1_to_1', lo=-2, hi=2,
                options=('MulOptions', {'fused_activation_function': 2})),
]
for op in ('RELU', 'RELU6', 'LOGISTIC', 'HARD_SWISH'):
    CASES.append(unary_case(op, [2, 3, 5], lo=-8, hi=8))
