"""Cases for the shape and index kernels (kernels/slice.c, pack.c, gather.c, resize.c nearest),
builtin TRANSPOSE_CONV, BATCH_MATMUL and TFLite_Detection_PostProcess: ranks 1-6 where TFLite
allows them, negative strides and every STRIDED_SLICE mask, broadcasting (BROADCAST_TO,
BATCH_MATMUL batch dims), sizes 0 and 1, int32/int64 index tensors, int32 and bool data."""
import flatbuffers.flexbuffers as flexbuffers

from oplib import Case, T, shape_tag


def i32(vals):
    return T('int32', [len(vals)], data=list(vals), const=True)


def i64(vals):
    return T('int64', [len(vals)], data=list(vals), const=True)


def ss(name, shape, b, e, s, out, dtype='float32', idx=i32, **opts):
    o = {'begin_mask': 0, 'end_mask': 0, 'ellipsis_mask': 0, 'new_axis_mask': 0,
         'shrink_axis_mask': 0, 'offset': False}
    o.update(opts)
    return Case('strided_slice_' + name, 'STRIDED_SLICE', [T(dtype, shape), idx(b), idx(e), idx(s)],
                [T(dtype, out)], options=('StridedSliceOptions', o), version=8 if o['offset'] else 4)


CASES = [
    ss('r1_step2', [7], [1], [6], [2], [3]),
    ss('r2_neg_endmask', [4, 5], [3, -1], [0, 0], [-1, -2], [3, 3], end_mask=2),
    ss('r3_shrink0', [3, 4, 5], [1, 0, 0], [2, 4, 5], [1, 1, 1], [4, 5], shrink_axis_mask=1),
    ss('r3_shrink_neg', [3, 4, 5], [0, -1, 1], [0, 0, 4], [1, 1, 1], [3, 3], shrink_axis_mask=2,
       begin_mask=1, end_mask=1),
    ss('r4_ellipsis', [2, 3, 4, 5], [0, 1], [0, 3], [1, 1], [2, 3, 4, 2], ellipsis_mask=1),
    ss('r4_newaxis', [2, 3, 2, 2], [0, 0], [0, 1], [1, 1], [1, 1, 3, 2, 2], new_axis_mask=1),
    ss('r5_strides', [2, 3, 2, 4, 3], [0, 1, 0, 1, 0], [2, 3, 2, 4, 3], [1, 1, 1, 2, 1], [2, 2, 2, 2, 3]),
    ss('r5_reverse_all', [2, 2, 3, 1, 2], [0] * 5, [0] * 5, [-1] * 5, [2, 2, 3, 1, 2],
       begin_mask=31, end_mask=31),
    ss('r2_clamped', [3, 4], [-10, 1], [10, 100], [1, 1], [3, 3]),
    ss('r1_offset', [10], [2], [3], [1], [3], offset=True),
    ss('r1_int32_data', [6], [5], [0], [-1], [5], dtype='int32'),
    ss('r2_size1', [1, 1], [0, 0], [1, 1], [1, 1], [1, 1]),
    Case('strided_slice_empty', 'STRIDED_SLICE', [T('float32', [3, 4]), i32([1, 0]), i32([1, 4]), i32([1, 1])],
         [T('float32', [0, 4])], options=('StridedSliceOptions', {}), golden='hand', expect=[[]],
         note='0 elements out'),
]

# SLICE
CASES += [
    Case('slice_r2_minus1', 'SLICE', [T('float32', [3, 4]), i32([1, 1]), i32([2, -1])], [T('float32', [2, 3])],
         options=('SliceOptions', {})),
    Case('slice_r5', 'SLICE', [T('float32', [2, 3, 2, 3, 2]), i32([0, 1, 0, 1, 1]), i32([2, 2, 2, -1, 1])],
         [T('float32', [2, 2, 2, 2, 1])], options=('SliceOptions', {}), version=5),
    Case('slice_int64_r3', 'SLICE', [T('float32', [4, 3, 2]), i64([1, 0, 1]), i64([3, 3, 1])],
         [T('float32', [3, 3, 1])], options=('SliceOptions', {})),
    Case('slice_r1_int32', 'SLICE', [T('int32', [6]), i32([2]), i32([3])], [T('int32', [3])],
         options=('SliceOptions', {})),
]


def transpose(shape, perm, dtype='float32'):
    return Case(f"transpose_{shape_tag(shape)}_p{''.join(map(str, perm))}" + ('' if dtype == 'float32' else '_' + dtype),
                'TRANSPOSE', [T(dtype, shape), i32(perm)], [T(dtype, [shape[p] for p in perm])],
                options=('TransposeOptions', {}), version=6 if len(shape) > 4 else 1)


CASES += [transpose([5], [0]), transpose([3, 4], [1, 0]), transpose([2, 3, 4], [2, 0, 1]),
          transpose([1, 2, 3, 4], [0, 3, 1, 2]), transpose([2, 3, 1, 4, 2], [4, 2, 0, 3, 1]),
          transpose([2, 1, 3, 2, 2, 3], [5, 4, 3, 2, 1, 0]), transpose([3, 4], [1, 0], dtype='int32')]


def tile(shape, mult, dtype='float32', idx=i32):
    return Case(f"tile_{shape_tag(shape)}_m{''.join(map(str, mult))}" + ('' if dtype == 'float32' else '_' + dtype),
                'TILE', [T(dtype, shape), idx(mult)], [T(dtype, [d * m for d, m in zip(shape, mult)])],
                options=('TileOptions', {}))


CASES += [tile([3], [3]), tile([2, 3], [2, 2]), tile([1, 2, 1, 3], [2, 1, 3, 1]),
          tile([2, 1, 2, 1, 2], [1, 2, 1, 3, 1]), tile([2, 2], [1, 3], dtype='int32', idx=i64),
          tile([2, 3], [2, 1], dtype='bool')]


def bcast(shape, to, dtype='float32'):
    return Case(f"broadcast_to_{shape_tag(shape)}_to_{shape_tag(to)}" + ('' if dtype == 'float32' else '_' + dtype),
                'BROADCAST_TO', [T(dtype, shape), i32(to)], [T(dtype, to)], options=('BroadcastToOptions', {}),
                version=2)


CASES += [bcast([3], [2, 3]), bcast([2, 1], [2, 4]), bcast([1, 3, 1], [2, 2, 3, 4]),
          bcast([], [3, 2]), bcast([2, 1, 3, 1, 2], [2, 2, 3, 2, 2]), bcast([1], [1]),
          bcast([3, 1], [2, 3, 2], dtype='int32')]

CASES += [
    Case(f"space_to_depth_{shape_tag(s)}_b{b}", 'SPACE_TO_DEPTH', [T('float32', s)],
         [T('float32', [s[0], s[1] // b, s[2] // b, s[3] * b * b])], options=('SpaceToDepthOptions', {'block_size': b}))
    for s, b in (([1, 4, 4, 2], 2), ([2, 6, 4, 3], 2), ([1, 3, 3, 1], 3), ([1, 2, 2, 1], 1))
]

# SPLIT / SPLIT_V / PACK / UNPACK / SQUEEZE / EXPAND_DIMS


def split(shape, n, axis):
    a = axis % len(shape)
    out = [d if i != a else d // n for i, d in enumerate(shape)]
    return Case(f"split_{shape_tag(shape)}_n{n}_a{axis}".replace('-', 'm'), 'SPLIT',
                [T('int32', [], data=[axis], const=True), T('float32', shape)], [T('float32', out)] * n,
                options=('SplitOptions', {'num_splits': n}))


CASES += [split([4, 6], 2, 1), split([2, 6, 3], 3, -2), split([2, 2, 4, 1, 3], 2, 2), split([5], 1, 0)]
CASES += [
    Case('split_v_4x6_sizes_1_m1_2', 'SPLIT_V', [T('float32', [4, 6]), i32([1, -1, 2]), T('int32', [], data=[1], const=True)],
         [T('float32', [4, 1]), T('float32', [4, 3]), T('float32', [4, 2])], options=('SplitVOptions', {'num_splits': 3})),
    Case('split_v_r3_axis0', 'SPLIT_V', [T('float32', [5, 2, 3]), i32([2, 3]), T('int32', [], data=[0], const=True)],
         [T('float32', [2, 2, 3]), T('float32', [3, 2, 3])], options=('SplitVOptions', {'num_splits': 2})),
]


def pack(shape, n, axis, dtype='float32'):
    a = axis % (len(shape) + 1)
    out = shape[:a] + [n] + shape[a:]
    return Case(f"pack_{shape_tag(shape)}_n{n}_a{axis}".replace('-', 'm') + ('' if dtype == 'float32' else '_' + dtype),
                'PACK', [T(dtype, shape) for _ in range(n)], [T(dtype, out)],
                options=('PackOptions', {'values_count': n, 'axis': axis}))


def unpack(shape, axis):
    a = axis % len(shape)
    out = [d for i, d in enumerate(shape) if i != a]
    return Case(f"unpack_{shape_tag(shape)}_a{axis}".replace('-', 'm'), 'UNPACK', [T('float32', shape)],
                [T('float32', out)] * shape[a], options=('UnpackOptions', {'num': shape[a], 'axis': axis}))


CASES += [pack([2, 3], 3, 0), pack([2, 3], 2, -1), pack([2, 1, 3, 2], 2, 2), pack([4], 1, 0),
          pack([3], 2, 1, dtype='int32'), unpack([3, 2, 4], 0), unpack([2, 3, 4], -1), unpack([2, 2, 1, 3, 2], 3)]

CASES += [
    Case('squeeze_1x3x1x2_all', 'SQUEEZE', [T('float32', [1, 3, 1, 2])], [T('float32', [3, 2])],
         options=('SqueezeOptions', {'squeeze_dims': []})),
    Case('squeeze_1x3x1x2_d0', 'SQUEEZE', [T('float32', [1, 3, 1, 2])], [T('float32', [3, 1, 2])],
         options=('SqueezeOptions', {'squeeze_dims': [0]})),
    Case('squeeze_r5_dm1', 'SQUEEZE', [T('float32', [2, 1, 3, 1, 1])], [T('float32', [2, 1, 3, 1])],
         options=('SqueezeOptions', {'squeeze_dims': [-1]})),
    Case('expand_dims_2x3_a0', 'EXPAND_DIMS', [T('float32', [2, 3]), T('int32', [1], data=[0], const=True)],
         [T('float32', [1, 2, 3])], options=('ExpandDimsOptions', {})),
    Case('expand_dims_2x3_am1', 'EXPAND_DIMS', [T('float32', [2, 3]), T('int32', [1], data=[-1], const=True)],
         [T('float32', [2, 3, 1])], options=('ExpandDimsOptions', {})),
    Case('expand_dims_r4_a2_int64', 'EXPAND_DIMS', [T('float32', [2, 1, 3, 2]), T('int64', [1], data=[2], const=True)],
         [T('float32', [2, 1, 1, 3, 2])], options=('ExpandDimsOptions', {})),
]

# GATHER / GATHER_ND: indices are graph inputs (their values never change a shape).
CASES += [
    Case('gather_5x3_axis0', 'GATHER', [T('float32', [5, 3]), T('int32', [4], data=[4, 0, 2, 2])],
         [T('float32', [4, 3])], options=('GatherOptions', {'axis': 0})),
    Case('gather_2x4x3_axis1_2d', 'GATHER', [T('float32', [2, 4, 3]), T('int32', [2, 2], data=[3, 1, 0, 3])],
         [T('float32', [2, 2, 2, 3])], options=('GatherOptions', {'axis': 1})),
    Case('gather_r4_axism1_int64', 'GATHER', [T('float32', [2, 3, 2, 4]), T('int64', [3], data=[3, 0, 1])],
         [T('float32', [2, 3, 2, 3])], options=('GatherOptions', {'axis': -1})),
    Case('gather_batch_dims1', 'GATHER', [T('float32', [2, 4, 3]), T('int32', [2, 2], data=[3, 0, 1, 1])],
         [T('float32', [2, 2, 3])], options=('GatherOptions', {'axis': 1, 'batch_dims': 1}), version=5),
    Case('gather_int32_params', 'GATHER', [T('int32', [6]), T('int32', [3], data=[5, 0, 3])],
         [T('int32', [3])], options=('GatherOptions', {'axis': 0})),
    Case('gather_nd_points', 'GATHER_ND', [T('float32', [3, 4]), T('int32', [2, 2], data=[2, 1, 0, 3])],
         [T('float32', [2])], options=('GatherNdOptions', {})),
    Case('gather_nd_rows', 'GATHER_ND', [T('float32', [2, 3, 4]), T('int32', [2, 1], data=[1, 0])],
         [T('float32', [2, 3, 4])], options=('GatherNdOptions', {})),
    Case('gather_nd_r4_depth2', 'GATHER_ND', [T('float32', [2, 3, 2, 2]), T('int32', [3, 2], data=[1, 2, 0, 0, 1, 1])],
         [T('float32', [3, 2, 2])], options=('GatherNdOptions', {})),
]


def nn(shape, size, ac, hp):
    tag = ('_ac' if ac else '') + ('_hp' if hp else '')
    return Case(f"resize_nearest_{shape_tag(shape)}_to_{size[0]}x{size[1]}{tag}", 'RESIZE_NEAREST_NEIGHBOR',
                [T('float32', shape), i32(size)], [T('float32', [shape[0], size[0], size[1], shape[3]])],
                options=('ResizeNearestNeighborOptions', {'align_corners': ac, 'half_pixel_centers': hp}),
                version=3 if hp else 1)


CASES += [nn([1, 2, 3, 2], [4, 5], False, False), nn([1, 2, 3, 2], [4, 5], True, False),
          nn([1, 2, 3, 2], [4, 5], False, True), nn([2, 5, 7, 1], [2, 3], False, True),
          nn([1, 5, 7, 3], [3, 3], True, False), nn([1, 1, 1, 2], [3, 2], False, False)]


def tconv(n, h, w, ci, co, k, s, same, bias=True, act=0, out_hw=None):
    oh, ow = out_hw or ((h * s, w * s) if same else ((h - 1) * s + k, (w - 1) * s + k))
    ins = [T('int32', [4], data=[n, oh, ow, co], const=True), T('float32', [co, k, k, ci], const=True),
           T('float32', [n, h, w, ci])]
    if bias:
        ins.append(T('float32', [co], const=True))
    name = f"transpose_conv_{n}x{h}x{w}x{ci}_o{co}_k{k}s{s}_{'same' if same else 'valid'}" + \
        ('' if bias else '_nobias') + (f'_act{act}' if act else '')
    return Case(name, 'TRANSPOSE_CONV', ins, [T('float32', [n, oh, ow, co])],
                options=('TransposeConvOptions', {'padding': 0 if same else 1, 'stride_w': s, 'stride_h': s,
                                                  'fused_activation_function': act}),
                version=4 if act else 3)


CASES += [tconv(1, 4, 4, 3, 2, 3, 2, True), tconv(1, 4, 4, 3, 2, 2, 2, False), tconv(2, 3, 5, 2, 3, 3, 1, True),
          tconv(1, 3, 3, 4, 2, 3, 2, False, bias=False), tconv(1, 5, 5, 2, 4, 4, 2, True, act=1),
          tconv(1, 3, 4, 2, 1, 3, 2, True, out_hw=(5, 7))]


def bmm(a, b, adj_x=False, adj_y=False):
    m = a[-1] if adj_x else a[-2]
    n = b[-2] if adj_y else b[-1]
    ba, bb = a[:-2], b[:-2]
    r = max(len(ba), len(bb))
    ba, bb = [1] * (r - len(ba)) + ba, [1] * (r - len(bb)) + bb
    batch = [max(x, y) for x, y in zip(ba, bb)]
    tag = ('_ax' if adj_x else '') + ('_ay' if adj_y else '')
    return Case(f"batch_matmul_{shape_tag(a)}_{shape_tag(b)}{tag}", 'BATCH_MATMUL', [T('float32', a), T('float32', b)],
                [T('float32', batch + [m, n])],
                options=('BatchMatMulOptions', {'adj_x': adj_x, 'adj_y': adj_y}))


CASES += [bmm([2, 3], [3, 4]), bmm([2, 2, 3], [3, 4]), bmm([2, 1, 3, 4], [3, 4, 5]),
          bmm([2, 4, 3], [2, 4, 5], adj_x=True), bmm([3, 2, 4], [5, 4], adj_y=True),
          bmm([1, 2, 1, 3, 2], [2, 1, 4, 2, 3], adj_x=True, adj_y=True), bmm([1, 1], [1, 1])]


# TFLite_Detection_PostProcess: 12 anchors on a grid, 3 classes + background.
def _dpp_options(max_det, per_det, regular, per_class=100):
    b = flexbuffers.Builder()
    with b.Map():
        b.Int('max_detections', max_det)
        b.Int('max_classes_per_detection', per_det)
        b.Int('detections_per_class', per_class)
        b.Int('num_classes', 3)
        b.Bool('use_regular_nms', regular)
        b.Float('nms_score_threshold', 0.3)
        b.Float('nms_iou_threshold', 0.5)
        b.Float('y_scale', 10.0)
        b.Float('x_scale', 10.0)
        b.Float('h_scale', 5.0)
        b.Float('w_scale', 5.0)
    return bytes(b.Finish())


def _anchors(nb):
    a = []
    for i in range(nb):
        a += [0.15 + 0.2 * (i % 4), 0.2 + 0.3 * (i // 4), 0.4, 0.5]
    return a


def dpp(name, max_det, per_det, regular, per_class=100, nb=12, shapeless=False):
    n = max_det * per_det
    return Case('detection_postprocess_' + name, 'TFLite_Detection_PostProcess',
                [T('float32', [1, nb, 4], lo=-1, hi=1), T('float32', [1, nb, 4], lo=0, hi=1),
                 T('float32', [nb, 4], data=_anchors(nb), const=True)],
                [T('float32', [1, n, 4]), T('float32', [1, n]), T('float32', [1, n]), T('float32', [1])],
                custom=True, custom_options=_dpp_options(max_det, per_det, regular, per_class),
                shapeless_outputs=shapeless)


CASES += [dpp('fast_5x1', 5, 1, False), dpp('fast_4x2', 4, 2, False), dpp('regular_6', 6, 1, True),
          dpp('regular_6_per_class2', 6, 1, True, per_class=2)]


# Outputs stored with shape [] like real SSD files, sized at prepare. LiteRT.js fails on such
# outputs, so the inputs are hand-made and the golden hand-computed (check_interp runs the same):
# anchor 5 scores 0.9 for class 2 (column 3, after the background), anchor 0 0.6 for class 0,
# anchor 1 0.5 for class 1 with encoding (-5, 0, 0, 0), which decodes onto anchor 0's box
# (yc = 0.35 - 5/10 * 0.4 = 0.15) and is suppressed (IoU 1). Anchors 0 and 5 overlap by IoU
# 0.04/0.36: both kept. Boxes are [yc -+ 0.2, xc -+ 0.25] of their anchors.
def _dpp_shapeless():
    enc, cls = [0.0] * 48, [0.0] * 48
    enc[4] = -5.0
    cls[5 * 4 + 3], cls[0 * 4 + 1], cls[1 * 4 + 2] = 0.9, 0.6, 0.5
    c = dpp('fast_5x1_shapeless', 5, 1, False, shapeless=True)
    c.inputs[0] = T('float32', [1, 12, 4], data=enc)
    c.inputs[1] = T('float32', [1, 12, 4], data=cls)
    c.golden, c.note = 'hand', 'outputs stored as []: LiteRT.js fails on them; hand-made inputs'
    c.expect = [[0.15, 0.25, 0.55, 0.75, -0.05, -0.05, 0.35, 0.45] + [0.0] * 12,
                [2.0, 0.0, 0.0, 0.0, 0.0], [0.9, 0.6, 0.0, 0.0, 0.0], [2.0]]
    return c


CASES += [_dpp_shapeless()]
