/*
 * stacktext.h - the Python stacks of the event store (store.h: frames, stacks) as text for
 * the timeline exporters' event arguments: Perfetto's "stack" debug annotation
 * ("train.py:10 train; ..." style, full paths) and the Chrome/Kineto "Call stack" argument
 * (torch.profiler's with_stack shape, "path(line): func;..."), innermost frame first. Each
 * stack's text is made once, on first use, and kept (kernels repeat their stacks), cut at a
 * frame boundary to APX_STACKTEXT_MAX bytes with a final "..." frame. Used by perfetto.c and
 * chrome.c; single-threaded.
 */
#ifndef APX_EXPORT_STACKTEXT_H
#define APX_EXPORT_STACKTEXT_H

#include <stdint.h>

#include "analysis/store.h"

#define APX_STACKTEXT_MAX 4096

enum apx_stacktext_style {
	APX_STACKTEXT_PERFETTO,		/* "/home/u/model.py:41 Model.forward; ..." */
	APX_STACKTEXT_KINETO,		/* "/home/u/model.py(41): Model.forward;..." */
};

struct apx_stacktext {
	const struct apx_store *st;
	enum apx_stacktext_style style;
	char **text;			/* per store stack, made on first use */
	int err;			/* -ENOMEM once an allocation failed (texts then NULL) */
};

void apx_stacktext_init(struct apx_stacktext *x, const struct apx_store *st,
			enum apx_stacktext_style style);
void apx_stacktext_release(struct apx_stacktext *x);
/* The text of an event's stack field (stacks[] + 1); NULL for 0, out of range or ENOMEM. */
const char *apx_stacktext(struct apx_stacktext *x, uint32_t stack);
/* The stack field of an API call: its GPU work's (kernel, copy or memset of the same
 * correlation), 0 when it launched none or that has no stack. */
uint32_t apx_stacktext_api_stack(struct apx_store *st, size_t api);

struct apx_wk_slice;
/* The stack field of a walked slice (kernel, copy, memset, sync, or an API call through its
 * GPU work); 0 for other slices or when the trace has no stacks. */
uint32_t apx_stacktext_slice_stack(struct apx_store *st, const struct apx_wk_slice *s);

#endif
