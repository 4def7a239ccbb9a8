"""One machine vector of floats as a Numba value: load, store, zero, add and broadcast multiply-add.

LLVM vectorises a loop over d in the tile kernels, but the dot products it makes need a horizontal
sum each, and at d = 50 those sums and the loop's tail cost about as much as the products. The
GEMM way round is to keep a vector of filters per sample in a register and add x_k · W_k to it,
k = 1..d: no horizontal sum and no tail. LLVM does not find that form in scalar code (neither as
scalar accumulators nor as a loop over filters), so `Vec` is an LLVM vector type that Numba keeps in
registers, the intrinsics below are the five operations the kernels need, and `lanes` their width.
A vector is 64 bytes (`LANES`: 8 float64 or 16 float32), the width of one AVX-512 register; LLVM
splits it on machines with narrower vectors. Indices are flat offsets into a C-contiguous array,
not checked: the callers (`lab.kernels._tiles`) compute them from padded shapes. Numba's cache does
not follow imports: after editing this module, delete `lab/kernels/__pycache__/*.nb*`.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

VECTOR_BYTES = 64
LANES = {types.float64: VECTOR_BYTES // 8, types.float32: VECTOR_BYTES // 4}


class Vec(types.Type):
    """`LANES[dtype]` floats of one dtype in one LLVM vector."""

    def __init__(self, dtype):
        self.dtype, self.lanes = dtype, LANES[dtype]
        super().__init__(name=f"Vec({dtype})")


@register_model(Vec)
class VecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        element = dmm.lookup(fe_type.dtype).get_value_type()
        super().__init__(dmm, fe_type, ir.VectorType(element, fe_type.lanes))


@njit(cache=True, error_model="numpy", inline="always")
def lanes(arr):
    """The floats of arr's dtype in one vector."""
    return VECTOR_BYTES // arr.itemsize


def _address(context, builder, arrty, arr, offset, vty):
    data = cgutils.create_struct_proxy(arrty)(context, builder, value=arr).data
    return builder.bitcast(builder.gep(data, [offset]), vty.as_pointer())


@intrinsic
def vload(typingctx, arr, offset):
    """The vector arr.flat[offset : offset + lanes]."""
    vec = Vec(arr.dtype)

    def codegen(context, builder, sig, args):
        vty = context.get_value_type(vec)
        return builder.load(_address(context, builder, sig.args[0], args[0], args[1], vty), align=1)

    return vec(arr, offset), codegen


@intrinsic
def vstore(typingctx, arr, offset, value):
    """arr.flat[offset : offset + lanes] = value."""

    def codegen(context, builder, sig, args):
        target = _address(context, builder, sig.args[0], args[0], args[1], args[2].type)
        builder.store(args[2], target, align=1)
        return context.get_dummy_value()

    return types.none(arr, offset, value), codegen


@intrinsic
def vzero(typingctx, arr):
    """A vector of zeros in arr's dtype."""
    vec = Vec(arr.dtype)

    def codegen(context, builder, sig, args):
        return ir.Constant(context.get_value_type(vec), None)

    return vec(arr), codegen


@intrinsic
def vfma(typingctx, acc, x, w):
    """acc + x · w with the scalar x in every lane, one fused multiply-add."""

    def codegen(context, builder, sig, args):
        total, scalar, vector = args
        vty = total.type
        scalar = context.cast(builder, scalar, sig.args[1], sig.args[0].dtype)
        lanes = ir.Constant(ir.VectorType(ir.IntType(32), vty.count), [0] * vty.count)
        first = builder.insert_element(ir.Constant(vty, ir.Undefined), scalar, ir.Constant(ir.IntType(32), 0))
        broadcast = builder.shuffle_vector(first, ir.Constant(vty, ir.Undefined), lanes)
        kind = "f64" if isinstance(vty.element, ir.DoubleType) else "f32"
        fma = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(vty, [vty] * 3), f"llvm.fma.v{vty.count}{kind}"
        )
        return builder.call(fma, [broadcast, vector, total])

    return acc(acc, x, w), codegen


@intrinsic
def vadd(typingctx, a, b):
    """a + b, lane by lane."""

    def codegen(context, builder, sig, args):
        return builder.fadd(args[0], args[1])

    return a(a, b), codegen


def empty_aligned(shape: tuple[int, ...], dtype) -> np.ndarray:
    """np.empty(shape, dtype) starting on a `VECTOR_BYTES` boundary, so that a vector of a row whose
    length is whole vectors never straddles two cache lines (NumPy's large arrays start 16 bytes past
    one: the router's gradient took 11 % longer in such buffers)."""
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    raw = np.empty(size + VECTOR_BYTES, dtype=np.uint8)
    start = -raw.ctypes.data % VECTOR_BYTES
    return raw[start : start + size].view(dtype).reshape(shape)


def zeros_aligned(shape: tuple[int, ...], dtype) -> np.ndarray:
    """np.zeros(shape, dtype) starting on a `VECTOR_BYTES` boundary (`empty_aligned`)."""
    out = empty_aligned(shape, dtype)
    out.fill(0)
    return out
