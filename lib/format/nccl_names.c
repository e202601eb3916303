/*
 * nccl_names.c - names and element sizes of the NCCL enumerations of the COLLECTIVE record
 * (include/apx/format.h, docs/format.md "collective"). Called by apx info/report/export and the
 * collector's NCCL plugin (src_nccl.c maps NCCL's strings onto these enums). Read-only data,
 * any thread.
 */
#include <apx/format.h>

#include "base/banned.h"

#define NAME_OF(table, i) ((i) < sizeof(table) / sizeof(table[0]) && table[i] ? table[i] : "unknown")

unsigned apx_nccl_dtype_bytes(unsigned dtype)
{
	static const unsigned char size[APX_DT__COUNT] = {
		[APX_DT_INT8] = 1, [APX_DT_UINT8] = 1, [APX_DT_INT32] = 4, [APX_DT_UINT32] = 4,
		[APX_DT_INT64] = 8, [APX_DT_UINT64] = 8, [APX_DT_FLOAT16] = 2, [APX_DT_FLOAT32] = 4,
		[APX_DT_FLOAT64] = 8, [APX_DT_BFLOAT16] = 2, [APX_DT_FP8_E4M3] = 1,
		[APX_DT_FP8_E5M2] = 1,
	};
	return dtype < APX_DT__COUNT ? size[dtype] : 0;
}

const char *apx_coll_func_name(unsigned func)
{
	static const char *const names[] = {
		[APX_COLL_UNKNOWN] = "unknown", [APX_COLL_ALL_REDUCE] = "all_reduce",
		[APX_COLL_ALL_GATHER] = "all_gather", [APX_COLL_REDUCE_SCATTER] = "reduce_scatter",
		[APX_COLL_BROADCAST] = "broadcast", [APX_COLL_REDUCE] = "reduce",
		[APX_COLL_ALL_TO_ALL] = "all_to_all", [APX_COLL_SEND] = "send",
		[APX_COLL_RECV] = "recv", [APX_COLL_GATHER] = "gather", [APX_COLL_SCATTER] = "scatter",
	};
	return NAME_OF(names, func);
}

const char *apx_nccl_algo_name(unsigned algo)
{
	static const char *const names[] = {
		[APX_ALGO_UNKNOWN] = "unknown", [APX_ALGO_TREE] = "tree", [APX_ALGO_RING] = "ring",
		[APX_ALGO_COLLNET_DIRECT] = "collnet_direct", [APX_ALGO_COLLNET_CHAIN] = "collnet_chain",
		[APX_ALGO_NVLS] = "nvls", [APX_ALGO_NVLS_TREE] = "nvls_tree", [APX_ALGO_PAT] = "pat",
	};
	return NAME_OF(names, algo);
}

const char *apx_nccl_proto_name(unsigned proto)
{
	static const char *const names[] = {
		[APX_PROTO_UNKNOWN] = "unknown", [APX_PROTO_LL] = "ll", [APX_PROTO_LL128] = "ll128",
		[APX_PROTO_SIMPLE] = "simple",
	};
	return NAME_OF(names, proto);
}
