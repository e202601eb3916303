/*
 * tune_fixes.c - the table of apx tune's fixes (tune.h): each one answers findings of some
 * rules, and is applied from outside the program, by apx_site.py's hook of its name
 * (APX_TUNE_FIXES, lib/collector/py/apx_site.py) and, for the allocator, an environment
 * variable. optimizer-foreach's finding about a Python loop of the user's own (tensor_loop.c)
 * has no such fix: its code must change. Called by cmd_tune.c.
 */
#include "cli/tune.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/banned.h"

struct fix_rule {
	const char *rule, *fix;
};

static const struct apx_tune_fix fixes[] = {
	{ "tf32", "tf32", "TF32 for fp32 matmuls and convolutions (torch.backends.cuda.matmul."
	  "allow_tf32, torch.backends.cudnn.allow_tf32, set_float32_matmul_precision('high'); "
	  "on torch 2.9+ also fp32_precision 'tf32' for cuda.matmul, cudnn.conv and cudnn.rnn)",
	  NULL, NULL, 0.01, 0 },
	{ "pin_memory", "pin_memory", "DataLoader(pin_memory=True); pinned batches copied with "
	  "non_blocking=True", NULL, NULL, 0, 0 },
	{ "workers", "workers", "DataLoader(num_workers=0) given worker processes "
	  "(persistent_workers=True)", NULL, NULL, 0, 0 },
	{ "foreach", "foreach", "torch.optim optimizers built with foreach=False made fused=True "
	  "(Adam, AdamW, SGD where torch has it, every parameter a floating-point CUDA tensor), "
	  "else foreach=True", NULL, NULL, 1e-4, 1 },
	{ "set_to_none", "set_to_none", "zero_grad(set_to_none=True)", NULL, NULL, 0, 1 },
	{ "no_empty_cache", "no_empty_cache", "torch.cuda.empty_cache() does nothing; the "
	  "caching allocator's expandable segments on", "PYTORCH_CUDA_ALLOC_CONF",
	  "expandable_segments:True", 0, 0 },
};

static const struct fix_rule by_rule[] = {
	{ "fp32-matmul", "tf32" },
	{ "pageable-copy", "pin_memory" },
	{ "dataloader-workers", "workers" },
	{ "input-pipeline", "workers" },
	{ "optimizer-foreach", "foreach" },
	{ "zero-grad-memset", "set_to_none" },
	{ "allocator-churn", "no_empty_cache" },
};

const struct apx_tune_fix *apx_tune_fix_find(const char *name)
{
	for (size_t i = 0; i < sizeof(fixes) / sizeof(fixes[0]); i++)
		if (!strcmp(fixes[i].name, name))
			return &fixes[i];
	return NULL;
}

static int has_metric(const struct apx_finding *f, const char *key)
{
	for (unsigned i = 0; i < f->nmetrics; i++)
		if (f->metrics[i].key && !strcmp(f->metrics[i].key, key))
			return 1;
	return 0;
}

const struct apx_tune_fix *apx_tune_fix_for(const struct apx_finding *f)
{
	if (!f->rule)
		return NULL;
	/* a loop of the program's own (tensor_loop.c) is not torch.optim's: a code change */
	if (!strcmp(f->rule, "optimizer-foreach") && !has_metric(f, "tensors_per_step"))
		return NULL;
	for (size_t i = 0; i < sizeof(by_rule) / sizeof(by_rule[0]); i++)
		if (!strcmp(by_rule[i].rule, f->rule))
			return apx_tune_fix_find(by_rule[i].fix);
	return NULL;
}

int apx_tune_fix_in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return 1;
		p = c ? c + 1 : NULL;
	}
	return 0;
}

int apx_tune_fix_list_check(const char *list, char *why, size_t cap)
{
	if (!*list) {
		snprintf(why, cap, "give fix names (tf32, pin_memory, workers, foreach, "
			 "set_to_none, no_empty_cache)");
		return -EINVAL;
	}
	for (const char *p = list; p && *p;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		int ok = 0;

		for (size_t i = 0; i < sizeof(fixes) / sizeof(fixes[0]) && !ok; i++)
			ok = strlen(fixes[i].name) == len && !strncmp(fixes[i].name, p, len);
		if (!ok) {
			snprintf(why, cap, "no fix '%.*s' (tf32, pin_memory, workers, foreach, "
				 "set_to_none, no_empty_cache)", (int)(len < 64 ? len : 64), p);
			return -EINVAL;
		}
		p = c ? c + 1 : NULL;
	}
	return 0;
}
