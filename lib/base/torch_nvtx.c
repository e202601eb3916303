/*
 * torch_nvtx.c - parses the names of PyTorch's op ranges (torch_nvtx.h). Called by the
 * collector's writer thread (encode.c) and by the analysis; no allocation, no state.
 */
#include "base/torch_nvtx.h"

#include <string.h>

#include "base/banned.h"

static const char *find(const char *s, size_t len, const char *what)
{
	size_t n = strlen(what);

	for (size_t i = 0; n <= len && i <= len - n; i++)
		if (s[i] == what[0] && !memcmp(s + i, what, n))
			return s + i;
	return NULL;
}

/* Decimal digits at p (before end) into *ret; 1 when there was at least one (capped). */
static int number(const char *p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;
	int any = 0;

	while (p < end && *p == ' ')
		p++;
	for (; p < end && *p >= '0' && *p <= '9'; p++, any = 1)
		v = v < UINT64_MAX / 10 - 1 ? v * 10 + (uint64_t)(*p - '0') : UINT64_MAX - 1;
	*ret = v;
	return any;
}

static int op_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == ':';
}

/* An op of PyTorch's own namespaces ("aten::mm"): letters, digits, '_', '.' and ':' only.
 * Other libraries' ranges ("cub::DeviceRadixSort", CCCL's) are theirs, never ops. */
static int namespaced(const char *s, size_t len)
{
	static const char *const ns[] = { "aten::", "prim::", "c10d::", "_c10d_functional::",
					  "profiler::", "autograd::", "torchvision::" };
	int known = 0;

	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		if (len > strlen(ns[i]) && !memcmp(s, ns[i], strlen(ns[i])))
			known = 1;
	if (!known)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!op_char(s[i]))
			return 0;
	return 1;
}

int apx_torch_nvtx_parse(const char *name, size_t len, size_t *ret_op_len, uint64_t *ret_seq)
{
	/* suffixes in the order torch writes them; the op's name ends at the first */
	static const char *const cuts[] = { ", stashed seq", ", seq", ", op_id = ", ", sizes = ",
					    ", input_op_ids = ", " stashed seq=", " seq=" };
	const char *end = name + len, *cut = NULL, *p;
	uint64_t seq = 0, v;
	int torch = 0;

	if (!name || !len)
		return 0;
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		p = find(name, len, cuts[i]);
		if (p && p > name && (!cut || p < cut))
			cut = p;
	}
	/* the sequence number: ", seq = N", ", stashed seq = N", "seq=N", "stashed seq=N" */
	p = cut ? find(cut, (size_t)(end - cut), "seq") : NULL;
	if (p) {
		const char *q = p + 3;

		while (q < end && *q == ' ')
			q++;
		if (q < end && *q == '=' && number(q + 1, end, &v)) {
			seq = v + 1;
			torch = 1;
		}
	}
	if (cut && (find(cut, (size_t)(end - cut), ", op_id = ") ||
		    find(cut, (size_t)(end - cut), ", sizes = [")))
		torch = 1;
	if (!torch && !cut && namespaced(name, len))
		torch = 1;
	/* the engine's wrapper of a node: "autograd::engine::evaluate_function: AddmmBackward0" */
	if (!torch && len > 10 && !memcmp(name, "autograd::", 10))
		torch = 1;
	if (!torch)
		return 0;
	*ret_op_len = cut ? (size_t)(cut - name) : len;
	*ret_seq = seq;
	return 1;
}

int apx_torch_nvtx_is_backward(const char *op, size_t len)
{
	while (len && op[len - 1] >= '0' && op[len - 1] <= '9')
		len--;
	return len > 8 && !memcmp(op + len - 8, "Backward", 8);
}
