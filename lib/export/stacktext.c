/*
 * stacktext.c - stacks as argument text for the timeline exporters (stacktext.h): one text per
 * store stack, made on first use. Trace bytes are copied as they are; each exporter escapes
 * them for its format (protobuf strings need none, JSON goes through base/json.c). Called by
 * perfetto.c and chrome.c; single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/stacktext.h"
#include "export/walk.h"

#include "base/banned.h"

void apx_stacktext_init(struct apx_stacktext *x, const struct apx_store *st,
			enum apx_stacktext_style style)
{
	*x = (struct apx_stacktext){ .st = st, .style = style };
}

void apx_stacktext_release(struct apx_stacktext *x)
{
	if (x->text)
		for (size_t i = 0; i < x->st->nstacks; i++)
			free(x->text[i]);
	free(x->text);
	x->text = NULL;
}

static char *make(const struct apx_store *st, const struct apx_es_stack *sk,
		  enum apx_stacktext_style style)
{
	char *buf = malloc(APX_STACKTEXT_MAX + 1), one[1100];
	size_t len = 0;

	if (!buf)
		return NULL;
	buf[0] = 0;
	for (uint16_t j = 0; j < sk->depth; j++) {
		const struct apx_es_frame *f = &st->frames[st->stack_frames[sk->first + j]];
		struct apx_es_text file = apx_store_string(st, f->file);
		struct apx_es_text func = apx_store_string(st, f->func);
		int n;

		if (style == APX_STACKTEXT_KINETO)
			n = snprintf(one, sizeof(one), "%s%.*s(%" PRIu32 "): %.*s", j ? ";" : "",
				     (int)(file.len > 512 ? 512 : file.len), file.p, f->line,
				     (int)(func.len > 512 ? 512 : func.len), func.p);
		else
			n = snprintf(one, sizeof(one), "%s%.*s:%" PRIu32 " %.*s", j ? "; " : "",
				     (int)(file.len > 512 ? 512 : file.len), file.p, f->line,
				     (int)(func.len > 512 ? 512 : func.len), func.p);
		if (n < 0)
			break;
		if (len + (size_t)n > APX_STACKTEXT_MAX - 8) {
			memcpy(buf + len, style == APX_STACKTEXT_KINETO ? ";..." : "; ...",
			       style == APX_STACKTEXT_KINETO ? 5 : 6);
			return buf;
		}
		memcpy(buf + len, one, (size_t)n + 1);
		len += (size_t)n;
	}
	return buf;
}

const char *apx_stacktext(struct apx_stacktext *x, uint32_t stack)
{
	const struct apx_es_stack *sk = apx_store_stack(x->st, stack);

	if (!sk || x->err)
		return NULL;
	if (!x->text && !(x->text = calloc(x->st->nstacks, sizeof(*x->text)))) {
		x->err = -ENOMEM;
		return NULL;
	}
	if (!x->text[stack - 1] && !(x->text[stack - 1] = make(x->st, sk, x->style)))
		x->err = -ENOMEM;
	return x->text[stack - 1];
}

uint32_t apx_stacktext_api_stack(struct apx_store *st, size_t api)
{
	enum apx_es_type type;
	size_t i;

	if (!st->nstacks || apx_store_gpu_of_api(st, api, &type, &i) < 0)
		return 0;
	switch (type) {
	case APX_ES_KERNEL:
		return st->k.stack[i];
	case APX_ES_COPY:
		return st->c.stack[i];
	case APX_ES_MEMSET:
		return st->s.stack[i];
	default:
		return 0;
	}
}

uint32_t apx_stacktext_slice_stack(struct apx_store *st, const struct apx_wk_slice *s)
{
	if (!st->nstacks)
		return 0;
	switch (s->type) {
	case APX_ES_KERNEL:
		return st->k.stack[s->index];
	case APX_ES_COPY:
		return st->c.stack[s->index];
	case APX_ES_MEMSET:
		return st->s.stack[s->index];
	case APX_ES_SYNC:
		return st->y.stack[s->index];
	case APX_ES_API:
		return apx_stacktext_api_stack(st, s->index);
	default:
		return 0;
	}
}
