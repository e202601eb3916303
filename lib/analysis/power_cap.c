/*
 * power_cap.c - the power cap in the steady state and its effect on savings that remove idle
 * time (power_cap.h). On the H200 (tests/gpu/suite/clocks.py, copy_overlap): at the 700 W cap
 * the SM clock was 1605 MHz with kernels busy 77 % of a step and 1440 MHz once the copies were
 * hidden and they were busy all the time; the step fell 1.50 ms, not the 2.42 ms of copy time.
 * Called by the rules on the finished model; pure, single-threaded.
 */
#include <math.h>
#include <string.h>

#include "analysis/power_cap.h"
#include "collector/nvml_metrics.h"

#include "base/banned.h"

/* Is series p the collector's reading r (nvml_metrics.h names them)? */
static int is(const struct apx_an_pm *p, enum apx_nvml_reading r)
{
	const char *name = apx_nvml_readings[r].name;

	return p->name_len == strlen(name) && !memcmp(p->name, name, p->name_len);
}

void apx_power_cap_read(const struct apx_model *m, struct apx_power_cap *out)
{
	uint32_t dev = 0;
	uint64_t most = 0;

	memset(out, 0, sizeof(*out));
	out->power_w = out->limit_w = out->clock_sm_mhz = NAN;
	for (size_t j = 0; j < m->names.n; j++) {	/* the device with the most kernel time */
		const struct apx_an_name *nm = APX_VEC_AT(&m->names, struct apx_an_name, j);

		if (nm->total_ns > most)
			most = nm->total_ns, dev = nm->device;
	}
	for (size_t i = 0; i < m->pm.n; i++) {
		const struct apx_an_pm *p = APX_VEC_AT(&m->pm, struct apx_an_pm, i);

		if (p->device != dev || !p->have_steady)
			continue;
		if (is(p, APX_NV_CAPPED)) {
			out->known = 1;
			out->capped_share = p->mean;
			out->capped = p->mean >= 0.5;
		} else if (is(p, APX_NV_POWER)) {
			out->power_w = p->mean;
		} else if (is(p, APX_NV_LIMIT)) {
			out->limit_w = p->mean;
		} else if (is(p, APX_NV_CLOCK_SM)) {
			out->clock_sm_mhz = p->mean;
		}
	}
}

double apx_power_capped_saving(double d1, double x, double *slow)
{
	double lo = 1.0, hi = 2.0;

	if (!(d1 > 0) || !(x > 0)) {
		*slow = 1.0;
		return x > 0 ? x : 0;
	}
	if (d1 > 1)
		d1 = 1;
	if (x > 1 - d1)
		x = 1 - d1;
	for (int i = 0; i < 60; i++) {	/* s^2 * (1 - x + d1 * (s - 1)) grows with s */
		double s = (lo + hi) / 2;

		if (s * s * (1 - x + d1 * (s - 1)) < 1)
			lo = s;
		else
			hi = s;
	}
	*slow = (lo + hi) / 2;
	x -= d1 * (*slow - 1);
	return x > 0 ? x : 0;
}
