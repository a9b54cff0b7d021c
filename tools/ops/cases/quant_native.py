"""Integer cases whose golden is native TFLite's builtin kernels (golden='native'): the reference
runner's rounding is the one arenad matches byte for byte. Quantization per tensor (scale,
zero_point) or per channel ([scales], [zero_points], axis)."""
from oplib import Case, T

CASES = [
    # int8 ADD with a broadcast constant: two input scales, an output scale, TFLite's 20-bit shift.
    Case('add_int8_2x3_3_native', 'ADD',
         inputs=[T('int8', [2, 3], quant=(0.05, 3), lo=-128, hi=127),
                 T('int8', [3], quant=(0.1, -2), const=True, lo=-128, hi=127)],
         outputs=[T('int8', [2, 3], quant=(0.07, -5))],
         options=('AddOptions', {'fused_activation_function': 0}), version=2, golden='native'),
    # int8 MUL with a fused RELU and extreme zero points.
    Case('mul_int8_4x5_native', 'MUL',
         inputs=[T('int8', [4, 5], quant=(0.02, -128), lo=-128, hi=127),
                 T('int8', [4, 5], quant=(0.03, 127), lo=-128, hi=127)],
         outputs=[T('int8', [4, 5], quant=(0.01, -128))],
         options=('MulOptions', {'fused_activation_function': 1}), version=2, golden='native'),
]
