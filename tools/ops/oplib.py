"""oplib.py - build single-operator .tflite models for arenad's op tests.

A case (Case) is one TFLite operator with its input tensors (graph inputs or constants), its
output tensors and its builtin (or custom) options. `model_bytes(case)` writes the .tflite file
arenad is tested on; `ref_model_bytes(case)` writes the file LiteRT.js runs to make the golden:
the same operator, with CAST ops around it for the tensor types LiteRT.js cannot pass in or out
of a model (it only exchanges float32, int32 and uint8): an int64/bool graph input becomes an
int32 input + CAST, an int64/bool output gets a CAST to int32 after it.

The flatbuffer is written with Debian's python3-flatbuffers (the low-level Builder; no generated
schema code): field ids, union numbers and BuiltinOperator codes follow TFLite's schema.fbs
(loader/ar_schema.h has the same ids; the operator codes are read from loader/ar_ops.c so there
is one list). See tools/ops/README.md for how to add a case.
"""
import os
import random
import re
import struct
import zlib

import flatbuffers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# TFLite TensorType values, struct format and bytes per element.
DTYPES = {
    'float32': (0, 'f', 4), 'float16': (1, 'e', 2), 'int32': (2, 'i', 4), 'uint8': (3, 'B', 1),
    'int64': (4, 'q', 8), 'bool': (6, '?', 1), 'int16': (7, 'h', 2), 'int8': (9, 'b', 1),
}
# Types LiteRT.js can feed and read (its Tensor class: float32, int32, uint8).
JS_DTYPES = ('float32', 'int32', 'uint8')


def _builtin_codes():
    """BuiltinOperator name -> code, from loader/ar_ops.c's tflite_builtin_names[] (index = code)."""
    src = open(os.path.join(ROOT, 'loader', 'ar_ops.c'), encoding='utf-8').read()
    body = src[src.index('tflite_builtin_names[] = {'):]
    body = body[:body.index('};')]
    names = re.findall(r'"([A-Z0-9_]+)"', body)
    return {n: i for i, n in enumerate(names)}


BUILTIN = _builtin_codes()

# BuiltinOptions tables: name -> (union type number, [(field name, kind, default)]) in field-id
# order. kinds: 'i8' 'u8' 'bool' 'i32' 'f32' 'ivec' (vector of int32). Union numbers are the
# member's 1-based position in schema.fbs's `union BuiltinOptions`.
ACT = ('fused_activation_function', 'i8', 0)
OPTIONS = {
    'Conv2DOptions': (1, [('padding', 'i8', 0), ('stride_w', 'i32', 0), ('stride_h', 'i32', 0), ACT,
                          ('dilation_w_factor', 'i32', 1), ('dilation_h_factor', 'i32', 1)]),
    'DepthwiseConv2DOptions': (2, [('padding', 'i8', 0), ('stride_w', 'i32', 0), ('stride_h', 'i32', 0),
                                   ('depth_multiplier', 'i32', 0), ACT, ('dilation_w_factor', 'i32', 1),
                                   ('dilation_h_factor', 'i32', 1)]),
    'Pool2DOptions': (5, [('padding', 'i8', 0), ('stride_w', 'i32', 0), ('stride_h', 'i32', 0),
                          ('filter_width', 'i32', 0), ('filter_height', 'i32', 0), ACT]),
    'FullyConnectedOptions': (8, [ACT, ('weights_format', 'i8', 0), ('keep_num_dims', 'bool', False),
                                  ('asymmetric_quantize_inputs', 'bool', False)]),
    'SoftmaxOptions': (9, [('beta', 'f32', 0.0)]),
    'SVDFOptions': (6, [('rank', 'i32', 0), ACT, ('asymmetric_quantize_inputs', 'bool', False)]),
    'RNNOptions': (7, [ACT, ('asymmetric_quantize_inputs', 'bool', False)]),
    'SequenceRNNOptions': (31, [('time_major', 'bool', False), ACT, ('asymmetric_quantize_inputs', 'bool', False)]),
    'LSTMOptions': (14, [ACT, ('cell_clip', 'f32', 0.0), ('proj_clip', 'f32', 0.0), ('kernel_type', 'i8', 0),
                         ('asymmetric_quantize_inputs', 'bool', False)]),
    'UnidirectionalSequenceLSTMOptions': (71, [ACT, ('cell_clip', 'f32', 0.0), ('proj_clip', 'f32', 0.0),
                                               ('time_major', 'bool', False),
                                               ('asymmetric_quantize_inputs', 'bool', False),
                                               ('diagonal_recurrent_tensors', 'bool', False)]),
    'ConcatenationOptions': (10, [('axis', 'i32', 0), ACT]),
    'AddOptions': (11, [ACT, ('pot_scale_int16', 'bool', True)]),
    'L2NormOptions': (12, [ACT]),
    'ReshapeOptions': (17, [('new_shape', 'ivec', None)]),
    'SpaceToDepthOptions': (19, [('block_size', 'i32', 0)]),
    'MulOptions': (21, [ACT]),
    'PadOptions': (22, []),
    'GatherOptions': (23, [('axis', 'i32', 0), ('batch_dims', 'i32', 0)]),
    'TransposeOptions': (26, []),
    'ReducerOptions': (27, [('keep_dims', 'bool', False)]),
    'SubOptions': (28, [ACT, ('pot_scale_int16', 'bool', True)]),
    'DivOptions': (29, [ACT]),
    'SqueezeOptions': (30, [('squeeze_dims', 'ivec', None)]),
    'StridedSliceOptions': (32, [('begin_mask', 'i32', 0), ('end_mask', 'i32', 0),
                                 ('ellipsis_mask', 'i32', 0), ('new_axis_mask', 'i32', 0),
                                 ('shrink_axis_mask', 'i32', 0), ('offset', 'bool', False)]),
    'ExpOptions': (33, []),
    'SplitOptions': (35, [('num_splits', 'i32', 0)]),
    'LogSoftmaxOptions': (36, []),
    'CastOptions': (37, [('in_data_type', 'i8', 0), ('out_data_type', 'i8', 0)]),
    'MaximumMinimumOptions': (39, []),
    'ArgMaxOptions': (40, [('output_type', 'i8', 0)]),
    'LessOptions': (41, []),
    'NegOptions': (42, []),
    'GreaterOptions': (44, []),
    'GreaterEqualOptions': (45, []),
    'LessEqualOptions': (46, []),
    'SelectOptions': (47, []),
    'SliceOptions': (48, []),
    'TransposeConvOptions': (49, [('padding', 'i8', 0), ('stride_w', 'i32', 0), ('stride_h', 'i32', 0), ACT]),
    'TileOptions': (51, []),
    'ExpandDimsOptions': (52, []),
    'EqualOptions': (53, []),
    'NotEqualOptions': (54, []),
    'PowOptions': (56, []),
    'ArgMinOptions': (57, [('output_type', 'i8', 0)]),
    'PackOptions': (59, [('values_count', 'i32', 0), ('axis', 'i32', 0)]),
    'UnpackOptions': (64, [('num', 'i32', 0), ('axis', 'i32', 0)]),
    'FloorDivOptions': (65, []),
    'ResizeNearestNeighborOptions': (74, [('align_corners', 'bool', False), ('half_pixel_centers', 'bool', False)]),
    'LeakyReluOptions': (75, [('alpha', 'f32', 0.0)]),
    'SquaredDifferenceOptions': (76, []),
    'AbsOptions': (78, []),
    'SplitVOptions': (79, [('num_splits', 'i32', 0)]),
    'GatherNdOptions': (83, []),
    'HardSwishOptions': (91, []),
    'DepthToSpaceOptions': (94, [('block_size', 'i32', 0)]),
    'SelectV2Options': (98, []),
    'BatchMatMulOptions': (101, [('adj_x', 'bool', False), ('adj_y', 'bool', False),
                                 ('asymmetric_quantize_inputs', 'bool', False)]),
    'BroadcastToOptions': (104, []),
    'GeluOptions': (116, [('approximate', 'bool', False)]),
    # issue 28 (kernels/logical.c, math_ops.c, index_ops.c)
    'TopKV2Options': (34, []),
    'ShapeOptions': (55, [('out_type', 'i8', 0)]),
    'LogicalOrOptions': (60, []),
    'OneHotOptions': (61, [('axis', 'i32', 0)]),
    'LogicalAndOptions': (62, []),
    'LogicalNotOptions': (63, []),
    'SquareOptions': (66, []),
    'ZerosLikeOptions': (67, []),
    'FillOptions': (68, []),
    'RangeOptions': (73, []),
    'ReverseV2Options': (81, []),
    'CosOptions': (84, []),
    'CumsumOptions': (102, [('exclusive', 'bool', False), ('reverse', 'bool', False)]),
    'BatchToSpaceNDOptions': (24, []),
    'SpaceToBatchNDOptions': (25, []),
    'MirrorPadOptions': (77, [('mode', 'i8', 0)]),
    'SegmentSumOptions': (100, []),
}


def dtype_code(name):
    return DTYPES[name][0]


class T:
    """A tensor of a case.

    dtype: 'float32' 'int32' 'int64' 'uint8' 'bool' (any of DTYPES); shape: list of dims.
    data: flat list of values, or None for seeded random values in [lo, hi] (ints inclusive).
    const: True = constant in the model (data in a buffer); False = graph input (data -> input_<i>.bin).
    Output tensors only use dtype, shape and quant.
    quant: None, (scale, zero_point) per tensor, or ([scales], [zero_points], axis) per channel
    (TFLite QuantizationParameters: scale, zero_point, quantized_dimension).
    variable: a variable tensor (is_variable, no buffer, neither constant nor graph input: the
    operator's state, which the runtime zeroes (zero point) at allocation and keeps across invokes).
    """

    def __init__(self, dtype, shape, data=None, const=False, lo=None, hi=None, quant=None, variable=False):
        assert dtype in DTYPES, dtype
        assert not (const and variable), 'a variable tensor is not a constant'
        self.dtype, self.shape, self.data, self.const = dtype, list(shape), data, const
        self.lo, self.hi, self.quant, self.variable = lo, hi, quant, variable

    def count(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def values(self, rng):
        if self.data is not None:
            vals = list(self.data)
            assert len(vals) == self.count(), f'{len(vals)} values for shape {self.shape}'
            return vals
        n = self.count()
        if self.dtype in ('float32', 'float16'):
            lo = -1.0 if self.lo is None else self.lo
            hi = 1.0 if self.hi is None else self.hi
            return [rng.uniform(lo, hi) for _ in range(n)]
        if self.dtype == 'bool':
            return [rng.random() < 0.5 for _ in range(n)]
        lo = {'uint8': 0}.get(self.dtype, -10) if self.lo is None else self.lo
        hi = {'uint8': 255}.get(self.dtype, 10) if self.hi is None else self.hi
        return [rng.randint(lo, hi) for _ in range(n)]

    def desc(self):
        return (f"{self.dtype}[{','.join(str(d) for d in self.shape)}]{'c' if self.const else ''}"
                f"{'v' if self.variable else ''}")


def pack(dtype, vals):
    return struct.pack('<%d%s' % (len(vals), DTYPES[dtype][1]), *vals)


def unpack(dtype, raw):
    fmt, size = DTYPES[dtype][1], DTYPES[dtype][2]
    return list(struct.unpack('<%d%s' % (len(raw) // size, fmt), raw))


class Case:
    """One single-operator model.

    name: folder name under tests/golden/ops (unique, [a-z0-9_]).
    op: BuiltinOperator name ('SUB') or, with custom=True, the custom_code string.
    inputs / outputs: lists of T (an input may be None for an omitted optional input).
    options: (options table name, {field: value}) or None; custom_options: bytes for custom ops.
    golden: 'litert' (run the ref model through LiteRT.js), 'native' (run model.tflite itself through
    native TFLite's builtin kernels, ../shared/ref/native/tflite_run: the golden of every integer
    kernel, since LiteRT.js's XNNPACK rounds int8 differently) or 'hand' (expect= gives the outputs
    as flat value lists; say why in note). version: the operator version written in the model.
    intermediates: list of T written as the operator's intermediate tensors (Operator.intermediates:
    TFLite's integer LSTM reads its gate and hidden-state scales from their quantization).
    """

    def __init__(self, name, op, inputs, outputs, options=None, version=1, custom=False,
                 custom_options=None, golden='litert', expect=None, note='', shapeless_outputs=False,
                 intermediates=None):
        assert re.fullmatch(r'[a-z0-9_]+', name), name
        if golden == 'litert' and all(t.count() == 0 for t in outputs):
            # LiteRT.js cannot pass 0-element tensors in or out; the golden is empty anyway.
            golden, expect = 'hand', [[] for _ in outputs]
            note = note or '0-element output (LiteRT.js cannot pass 0-element tensors)'
        assert custom or op in BUILTIN, op
        assert golden in ('litert', 'native', 'hand')
        assert golden != 'hand' or expect is not None, f'{name}: hand golden needs expect='
        self.name, self.op, self.inputs, self.outputs = name, op, inputs, outputs
        self.options, self.version, self.custom = options, version, custom
        self.custom_options, self.golden, self.expect, self.note = custom_options, golden, expect, note
        # Write the outputs with shape [] (as converters store TFLite_Detection_PostProcess's):
        # the runtime sizes them at prepare; `outputs` still give the sizes LiteRT returns.
        self.shapeless_outputs = shapeless_outputs
        self.intermediates = intermediates or []

    def seed(self):
        return zlib.crc32(self.name.encode())

    def input_values(self):
        """Values of every input tensor (constants included), from the case's seed."""
        rng = random.Random(self.seed())
        return [t.values(rng) if t is not None else None for t in self.inputs]

    def graph_inputs(self):
        return [i for i, t in enumerate(self.inputs) if t is not None and not t.const and not t.variable]


# ---- flatbuffer writing ----------------------------------------------------------------------

def _end_vector(b, n):
    try:
        return b.EndVector(n)        # python3-flatbuffers < 2.0
    except TypeError:
        return b.EndVector()


def _int32_vector(b, vals):
    b.StartVector(4, len(vals), 4)
    for v in reversed(vals):
        b.PrependInt32(v)
    return _end_vector(b, len(vals))


def _offset_vector(b, offs):
    b.StartVector(4, len(offs), 4)
    for o in reversed(offs):
        b.PrependUOffsetTRelative(o)
    return _end_vector(b, len(offs))


def _byte_vector(b, data, align=16):
    b.StartVector(1, len(data), align)
    b.head = b.head - len(data)
    b.Bytes[b.head:b.head + len(data)] = data
    return _end_vector(b, len(data))


def _options_table(b, name, values):
    union, fields = OPTIONS[name]
    values = dict(values or {})
    unknown = set(values) - {f[0] for f in fields}
    assert not unknown, f'{name}: unknown fields {unknown}'
    vecs = {}
    for f, kind, _ in fields:
        if kind == 'ivec' and f in values:
            vecs[f] = _int32_vector(b, values[f])
    b.StartObject(len(fields))
    for slot, (f, kind, default) in enumerate(fields):
        if f not in values:
            continue
        v = values[f]
        if kind == 'ivec':
            b.PrependUOffsetTRelativeSlot(slot, vecs[f], 0)
        elif kind == 'i8':
            b.PrependInt8Slot(slot, int(v), int(v) + 1)      # never equal: always written
        elif kind == 'u8':
            b.PrependUint8Slot(slot, int(v), int(v) + 1)
        elif kind == 'bool':
            b.PrependBoolSlot(slot, bool(v), not bool(v))
        elif kind == 'i32':
            b.PrependInt32Slot(slot, int(v), int(v) + 1)
        elif kind == 'f32':
            b.PrependFloat32Slot(slot, float(v), float(v) + 1.0)
        else:
            raise ValueError(kind)
    return union, b.EndObject()


def _quant_table(b, quant):
    """QuantizationParameters {min 0, max 1, scale 2, zero_point 3, details_type 4, details 5,
    quantized_dimension 6} of (scale, zero_point) or ([scales], [zero_points], axis)."""
    if len(quant) == 3:
        scales, zps, axis = list(quant[0]), list(quant[1]), quant[2]
    else:
        scales, zps, axis = [quant[0]], [quant[1]], 0
    b.StartVector(4, len(scales), 4)
    for v in reversed(scales):
        b.PrependFloat32(float(v))
    scale_off = _end_vector(b, len(scales))
    b.StartVector(8, len(zps), 8)
    for v in reversed(zps):
        b.PrependInt64(int(v))
    zp_off = _end_vector(b, len(zps))
    b.StartObject(7)
    b.PrependUOffsetTRelativeSlot(2, scale_off, 0)
    b.PrependUOffsetTRelativeSlot(3, zp_off, 0)
    b.PrependInt32Slot(6, int(axis), 0)
    return b.EndObject()


def build_model(opcodes, tensors, operators, graph_inputs, graph_outputs, description):
    """Serialize a one-subgraph TFLite model.

    opcodes: [(builtin name or custom_code, is_custom, version)]
    tensors: [(name, dtype, shape, data bytes or None[, T for its quant / variable])]
    operators: [(opcode index, [input tensor ids], [output ids], options, custom_options)]
    """
    b = flatbuffers.Builder(4096)
    # Buffers: 0 is the empty sentinel; each constant gets its own, 16-byte aligned.
    buffers, tensor_buffer = [None], []
    for tt in tensors:
        data = tt[3]
        if data is None:
            tensor_buffer.append(0)
        else:
            tensor_buffer.append(len(buffers))
            buffers.append(data)
    buf_offs = []
    for data in buffers:
        vec = _byte_vector(b, data) if data else None
        b.StartObject(3)
        if vec is not None:
            b.PrependUOffsetTRelativeSlot(0, vec, 0)
        buf_offs.append(b.EndObject())
    buffers_vec = _offset_vector(b, buf_offs)

    t_offs = []
    for k, tt in enumerate(tensors):
        name, dtype, shape = tt[0], tt[1], tt[2]
        meta = tt[4] if len(tt) > 4 else None
        name_off = b.CreateString(name)
        shape_off = _int32_vector(b, shape)
        q_off = _quant_table(b, meta.quant) if meta is not None and meta.quant is not None else None
        b.StartObject(6)
        b.PrependUOffsetTRelativeSlot(0, shape_off, 0)
        b.PrependInt8Slot(1, dtype_code(dtype), -1)
        b.PrependUint32Slot(2, tensor_buffer[k], 0)
        b.PrependUOffsetTRelativeSlot(3, name_off, 0)
        if q_off is not None:
            b.PrependUOffsetTRelativeSlot(4, q_off, 0)
        if meta is not None and meta.variable:
            b.PrependBoolSlot(5, True, False)
        t_offs.append(b.EndObject())
    tensors_vec = _offset_vector(b, t_offs)

    op_offs = []
    for op in operators:
        opcode, ins, outs, options, custom_options = op[:5]
        inter = op[5] if len(op) > 5 else []
        ins_off, outs_off = _int32_vector(b, ins), _int32_vector(b, outs)
        inter_off = _int32_vector(b, inter) if inter else None
        union, opt_off = (0, None)
        if options is not None:
            union, opt_off = _options_table(b, options[0], options[1])
        cust_off = _byte_vector(b, custom_options, 4) if custom_options is not None else None
        b.StartObject(9)
        b.PrependUint32Slot(0, opcode, 1 << 31)
        b.PrependUOffsetTRelativeSlot(1, ins_off, 0)
        b.PrependUOffsetTRelativeSlot(2, outs_off, 0)
        if opt_off is not None:
            b.PrependUint8Slot(3, union, 0)
            b.PrependUOffsetTRelativeSlot(4, opt_off, 0)
        if cust_off is not None:
            b.PrependUOffsetTRelativeSlot(5, cust_off, 0)
        if inter_off is not None:
            b.PrependUOffsetTRelativeSlot(8, inter_off, 0)
        op_offs.append(b.EndObject())
    ops_vec = _offset_vector(b, op_offs)

    in_vec, out_vec = _int32_vector(b, graph_inputs), _int32_vector(b, graph_outputs)
    sg_name = b.CreateString('main')
    b.StartObject(5)
    b.PrependUOffsetTRelativeSlot(0, tensors_vec, 0)
    b.PrependUOffsetTRelativeSlot(1, in_vec, 0)
    b.PrependUOffsetTRelativeSlot(2, out_vec, 0)
    b.PrependUOffsetTRelativeSlot(3, ops_vec, 0)
    b.PrependUOffsetTRelativeSlot(4, sg_name, 0)
    sg = b.EndObject()
    subgraphs_vec = _offset_vector(b, [sg])

    oc_offs = []
    for op, is_custom, version in opcodes:
        cc = b.CreateString(op) if is_custom else None
        code = BUILTIN['CUSTOM'] if is_custom else BUILTIN[op]
        b.StartObject(4)
        b.PrependInt8Slot(0, min(code, 127), -1)
        if cc is not None:
            b.PrependUOffsetTRelativeSlot(1, cc, 0)
        b.PrependInt32Slot(2, version, version + 1)
        b.PrependInt32Slot(3, code, -1)
        oc_offs.append(b.EndObject())
    opcodes_vec = _offset_vector(b, oc_offs)

    desc = b.CreateString(description)
    b.StartObject(8)
    b.PrependUint32Slot(0, 3, 0)
    b.PrependUOffsetTRelativeSlot(1, opcodes_vec, 0)
    b.PrependUOffsetTRelativeSlot(2, subgraphs_vec, 0)
    b.PrependUOffsetTRelativeSlot(3, desc, 0)
    b.PrependUOffsetTRelativeSlot(4, buffers_vec, 0)
    model = b.EndObject()
    b.Finish(model, file_identifier=b'TFL3')
    return bytes(b.Output())


def _case_graph(case, values, for_ref):
    """Tensors and operators of the case's model; for_ref wraps non-JS types in CASTs."""
    tensors, operators = [], []
    opcodes = [(case.op, case.custom, case.version)]
    cast_opcode = None

    def cast_op(src, dst, a, b_):
        nonlocal cast_opcode
        if cast_opcode is None:
            cast_opcode = len(opcodes)
            opcodes.append(('CAST', False, 1))
        return (cast_opcode, [a], [b_], ('CastOptions', {'in_data_type': dtype_code(src),
                                                           'out_data_type': dtype_code(dst)}), None)

    graph_inputs, graph_outputs, op_in, op_out, pre, post = [], [], [], [], [], []
    for i, t in enumerate(case.inputs):
        if t is None:
            op_in.append(-1)
            continue
        data = pack(t.dtype, values[i]) if t.const else None
        tid = len(tensors)
        tensors.append((f'input_{i}' if not t.const else f'const_{i}', t.dtype, t.shape, data, t))
        op_in.append(tid)
        if t.const or t.variable:
            continue
        if for_ref and t.dtype not in JS_DTYPES:
            jid = len(tensors)
            tensors.append((f'input_{i}_int32', 'int32', t.shape, None))
            pre.append(cast_op('int32', t.dtype, jid, tid))
            graph_inputs.append(jid)
        else:
            graph_inputs.append(tid)
    for j, t in enumerate(case.outputs):
        tid = len(tensors)
        tensors.append((f'output_{j}', t.dtype, [] if case.shapeless_outputs else t.shape, None, t))
        op_out.append(tid)
        if for_ref and t.dtype not in JS_DTYPES:
            jid = len(tensors)
            tensors.append((f'output_{j}_int32', 'int32', [] if case.shapeless_outputs else t.shape, None))
            post.append(cast_op(t.dtype, 'int32', tid, jid))
            graph_outputs.append(jid)
        else:
            graph_outputs.append(tid)
    inter = []
    for k, t in enumerate(case.intermediates):
        inter.append(len(tensors))
        tensors.append((f'intermediate_{k}', t.dtype, t.shape, None, t))
    main = (0, op_in, op_out, case.options, case.custom_options, inter)
    return opcodes, tensors, pre + [main] + post, graph_inputs, graph_outputs


def model_bytes(case, values):
    g = _case_graph(case, values, False)
    return build_model(*g, description=f'arenad op test {case.name}')


def ref_model_bytes(case, values):
    g = _case_graph(case, values, True)
    return build_model(*g, description=f'arenad op test {case.name} (LiteRT form)')


def needs_ref_cast(case):
    return any(t is not None and not t.const and t.dtype not in JS_DTYPES for t in case.inputs) or \
        any(t.dtype not in JS_DTYPES for t in case.outputs)


# ---- shape helpers for case tables ------------------------------------------------------------

def bcast_shape(a, b):
    """NumPy broadcast of two shapes (TFLite's BroadcastShapes); AssertionError if incompatible."""
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        assert x == y or x == 1 or y == 1, f'{a} and {b} do not broadcast'
        out.append(y if x == 1 else x)
    return out


def reduce_shape(shape, axes, keep_dims):
    axes = {a % len(shape) for a in axes} if shape else set()
    if keep_dims:
        return [1 if i in axes else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in axes]


# (shape a, shape b) pairs for binary ops: equal shapes rank 1-5, broadcasting from a scalar up
# to rank 6, and edge sizes 0 and 1.
BCAST_SHAPES = [
    ([7], [7]), ([3, 4], [3, 4]), ([2, 3, 4], [4]), ([2, 1, 4, 3], [5, 1, 3]),
    ([2, 3, 2, 2, 3], [1, 3, 1, 2, 1]), ([2, 1, 2, 1, 2, 3], [2, 1, 2, 1, 3]),
    ([], [2, 3]), ([4, 1], [1, 5]), ([1], [1]), ([0, 3], [3]), ([2, 0, 3], [1, 1, 3]),
]


def shape_tag(shape):
    """'2x3x4' for [2, 3, 4], 's' for a scalar: the shape part of generated case names."""
    return 'x'.join(str(d) for d in shape) if shape else 's'


def binary_case(op, a, b, dtype='float32', out_dtype=None, options=None, name=None, const_b=False,
                lo=None, hi=None, version=1, **kw):
    """A broadcasting binary op on inputs of shapes a and b (b a constant with const_b); the output
    shape is their broadcast, its dtype out_dtype (default: the inputs')."""
    out = bcast_shape(a, b)
    name = name or f'{op.lower()}_{shape_tag(a)}_{shape_tag(b)}'
    return Case(name, op, [T(dtype, a, lo=lo, hi=hi), T(dtype, b, const=const_b, lo=lo, hi=hi)],
                [T(out_dtype or dtype, out)], options=options, version=version, **kw)


def unary_case(op, shape, dtype='float32', options=None, name=None, lo=None, hi=None, version=1,
               out_dtype=None, **kw):
    """A unary op: output of the input's shape and (default) dtype."""
    name = name or f'{op.lower()}_{shape_tag(shape)}'
    return Case(name, op, [T(dtype, shape, lo=lo, hi=hi)], [T(out_dtype or dtype, shape)],
                options=options, version=version, **kw)
