/*
 * kineto_devices.c - a Kineto trace's "deviceProperties" array (Kineto's
 * createDevicePropertiesJson: id, name, totalGlobalMem, computeMajor/Minor, numSms, ...) as
 * DEVICE records. What it lacks (L2 size, memory bandwidth, PCIe link, clocks) is left absent
 * and named by kineto_facts.c. Called by kineto_walk.c in pass 2.
 */
#include "import/kineto_int.h"

#include <errno.h>

#include "base/banned.h"

static const struct {
	const char *key;
	unsigned field;
} props[] = {
	{ "id", APX_DEVICE_ID },
	{ "totalGlobalMem", APX_DEVICE_MEM_BYTES },
	{ "computeMajor", APX_DEVICE_CC_MAJOR },
	{ "computeMinor", APX_DEVICE_CC_MINOR },
	{ "numSms", APX_DEVICE_SM_COUNT },
	{ "maxThreadsPerMultiprocessor", APX_DEVICE_MAX_THREADS_PER_SM },
	{ "regsPerMultiprocessor", APX_DEVICE_REGS_PER_SM },
	{ "sharedMemPerMultiprocessor", APX_DEVICE_SMEM_PER_SM },
	{ "sharedMemPerBlockOptin", APX_DEVICE_SMEM_PER_BLOCK_OPTIN },
	{ "warpSize", APX_DEVICE_WARP_SIZE },
	{ "maxBlocksPerMultiProcessor", APX_DEVICE_MAX_BLOCKS_PER_SM },
	{ "l2CacheSize", APX_DEVICE_L2_BYTES },
};

static int device(struct apx_ki *ki, const struct apx_jp_tok *open)
{
	struct apx_jp_tok k, v;
	char name[128];
	struct apx_rec rec;
	int r;

	if (open->type != APX_JP_OBJECT)
		return apx_jp_fail(&ki->jp, open->off, -EBADMSG, "deviceProperties element: an "
				   "object expected, found %s", apx_jp_type_name(open->type));
	apx_rec_init(&rec, APX_REC_DEVICE);
	name[0] = 0;
	while ((r = apx_jp_next(&ki->jp, &k)) > 0 && k.type == APX_JP_KEY) {
		size_t i;

		if ((r = apx_jp_next(&ki->jp, &v)) <= 0)
			return r < 0 ? r : -EBADMSG;
		for (i = 0; i < sizeof(props) / sizeof(props[0]); i++)
			if (apx_jp_is(&k, props[i].key))
				break;
		if (v.type == APX_JP_NULL) {
			continue;
		} else if (i < sizeof(props) / sizeof(props[0])) {
			int64_t x;

			r = apx_ki_int(ki, &v, props[i].key, 0, INT64_MAX, &x);
			rec.v[props[i].field] = (uint64_t)x;
		} else if (apx_jp_is(&k, "name") && v.type == APX_JP_STRING) {
			apx_jp_string(&v, name, sizeof(name));
		} else {
			r = apx_jp_skip(&ki->jp, &v);
		}
		if (r < 0)
			return r;
	}
	if (r < 0)
		return r;
	apx_rec_set_str(&rec, APX_DEVICE_NAME, name[0] ? name : NULL);
	ki->ndevices++;
	/* the devices the GPU events ran on (Kineto lists every visible one) */
	if (ki->devices_used && (rec.v[APX_DEVICE_ID] >= 64 ||
				 !(ki->devices_used >> rec.v[APX_DEVICE_ID] & 1)))
		return 0;
	return apx_writer_add(ki->w, &rec);
}

int apx_ki_devices(struct apx_ki *ki, const struct apx_jp_tok *tok)
{
	struct apx_jp_tok t;
	int r;

	if (tok->type != APX_JP_ARRAY)
		return apx_jp_fail(&ki->jp, tok->off, -EBADMSG, "deviceProperties: an array "
				   "expected, found %s", apx_jp_type_name(tok->type));
	while ((r = apx_jp_next(&ki->jp, &t)) > 0 && t.type != APX_JP_CLOSE)
		if ((r = device(ki, &t)) < 0)
			return r;
	return r < 0 ? r : 0;
}
