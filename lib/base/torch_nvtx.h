/*
 * torch_nvtx.h - the names PyTorch gives the NVTX ranges of its ops (torch.autograd.profiler.
 * emit_nvtx, nsys --pytorch=autograd-nvtx): "aten::addmm, seq = 12, op_id = 345" (torch 2.x:
 * torch/csrc/profiler/util.cpp getNvtxStr, "{}, seq = {}" then ", op_id = {}", ", sizes = [...]",
 * ", input_op_ids = [...]"), "aten::addmm, seq = 12" (1.13), "AddmmBackward0, seq = 12" (an
 * autograd node's apply(): its sequence number is the forward op's), "aten::mm, op_id = 7" (no
 * sequence number: grad mode off), and the older "AddmmBackward, stashed seq=12". Used by the
 * collector's writer (encode.c: the name is cut to the op and the number kept in the MARKER
 * record's seq field, so that the strings table does not get one string per op call) and by
 * the analysis (backward.c, nvtx.c, steps.c: traces written by other tools). Pure function.
 */
#ifndef APX_BASE_TORCH_NVTX_H
#define APX_BASE_TORCH_NVTX_H

#include <stddef.h>
#include <stdint.h>

/* Whether name (len bytes, not NUL-terminated) is the range of a PyTorch op: one of the
 * suffixes above, an op name of PyTorch's namespaces ("aten::mm", "c10d::allreduce_",
 * prim::, _c10d_functional::, profiler::, torchvision::: letters, digits, '_', '.', "::" only;
 * never another library's, "cub::DeviceRadixSort"), or the autograd engine's ("autograd::engine::evaluate_function:
 * AddmmBackward0"). On 1: *ret_op_len = the length of the op's name (before the first
 * suffix), *ret_seq = the sequence number + 1 (0 = none). On 0 the outputs are untouched. */
int apx_torch_nvtx_parse(const char *name, size_t len, size_t *ret_op_len, uint64_t *ret_seq);

/* Whether an op name is an autograd node's ("AddmmBackward0", "MyFnBackward"): ends in
 * "Backward" and optional digits. */
int apx_torch_nvtx_is_backward(const char *op, size_t len);

#endif
