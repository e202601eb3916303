/*
 * flame.h - the report document's flame graphs (a typed tree node of the document, doc.h):
 * GPU time by Python stack (each kernel's duration under its launch stack, root = the
 * outermost frame) and host samples (each SAMPLE's period under its thread, its state,
 * running / waiting / other, and its stack). Built from the event store by build_flame.c
 * (called from build_stacks.c for the hotspots and threads sections), drawn as inline SVG
 * icicles by html_flame.c (emit_html.c), written as a nested "flame" object by emit_json.c
 * and summed up as the top paths in the text report. Single-threaded; the document owns the
 * trees (apx_rdoc_free frees them).
 */
#ifndef APX_REPORT_FLAME_H
#define APX_REPORT_FLAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct apx_rdoc;
struct apx_store;

#define APX_FLAME_NODES_MAX 200000	/* nodes of one tree; deeper value stays in its parent */
#define APX_FLAME_JSON_NODES 400	/* nodes the JSON view writes at most */

enum apx_flame_kind {
	APX_FK_FRAME,		/* a Python frame of the program's own code */
	APX_FK_LIBRARY,		/* a library frame (apx_frame_is_library: site-packages, stdlib) */
	APX_FK_ROOT,		/* the root: everything */
	APX_FK_NONE,		/* "[no Python stack]": events without a stack */
	APX_FK_THREAD,		/* host: a thread */
	APX_FK_STATE,		/* host: running, waiting or other */
};

enum apx_flame_state { APX_FS_NONE, APX_FS_RUNNING, APX_FS_WAITING, APX_FS_OTHER };

struct apx_rflame_node {
	uint32_t file, func, line;	/* frames: store strings and line; others: UINT32_MAX */
	const char *label;		/* others: their name (document arena) */
	uint64_t value;			/* ns */
	uint32_t parent;		/* UINT32_MAX for the root (node 0) */
	uint32_t kids, nkids;		/* children: kid[kids .. kids + nkids), largest first */
	uint16_t depth;
	uint8_t kind;			/* enum apx_flame_kind */
	uint8_t state;			/* host: enum apx_flame_state of its subtree */
};

struct apx_rflame {
	const char *key;		/* "gpu", "host" (JSON member names, HTML ids) */
	const char *title;		/* the figure's caption */
	const struct apx_store *st;
	struct apx_rflame_node *n;	/* n[0]: the root */
	size_t nn, cap;
	uint32_t *kid;			/* children lists, after apx_rflame_finish */
	uint32_t *ht;			/* (parent, key) -> node, while building */
	size_t htcap;
	uint64_t unplaced_ns;		/* value kept in a parent at the node cap */
	unsigned max_depth;
};

/* ---- building (build_flame.c) ---- */
/* GPU time by launch stack of d->m->store, and host samples by thread, state and stack. NULL
 * when no kernel (no sample) has a Python stack (nothing to draw) or memory ran out. */
struct apx_rflame *apx_rflame_gpu(struct apx_rdoc *d);
struct apx_rflame *apx_rflame_host(struct apx_rdoc *d);
void apx_rflame_free(struct apx_rflame *f);
/* A node's display name: frames "func (file.py:41)" (the last path component), the others
 * their label; written into buf, NUL-terminated, raw trace bytes (escape before output). */
const char *apx_rflame_name(const struct apx_rflame *f, const struct apx_rflame_node *nd,
			    char *buf, size_t cap);
/* The top paths (by value) in text, for the text report: each "62.0% a.py:3 f > b.py:9 g",
 * at most n lines, written by fn(ctx, line). */
void apx_rflame_top_paths(const struct apx_rflame *f, unsigned n,
			  void (*fn)(void *ctx, const char *line), void *ctx);

/* ---- emitters ---- */
/* html_flame.c: an inline SVG icicle in a <figure>, root on top, widths proportional to
 * value, nodes narrower than a pixel and a half merged into one box per parent, labels cut to
 * their box with the full text in <title>, every trace byte escaped; nothing for an empty
 * tree. Deterministic. */
void apx_html_flame(FILE *out, const struct apx_rflame *f);
/* emit_json.c's: {"name","file","line","value","library","children":[...]} nested, nodes
 * under 0.5 % of the root or past depth 32 folded into their parent's "(other)" child, at
 * most APX_FLAME_JSON_NODES nodes. */
void apx_rflame_json(FILE *out, const struct apx_rflame *f);

#endif
