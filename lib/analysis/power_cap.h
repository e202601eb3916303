/*
 * power_cap.h - whether the GPU ran at its power cap in the steady state (the collector's NVML
 * readings, src_nvml.c: METRIC series nvml.power_capped, nvml.power, nvml.power_limit,
 * nvml.clock_sm), and what that does to a saving that removes GPU idle time: at the cap the
 * GPU's average power is fixed, so once it idles less it runs its kernels at lower clocks
 * (power_cap.c). Read by the rules whose fix raises the GPU's duty (rule_copy_overlap.c).
 */
#ifndef APX_ANALYSIS_POWER_CAP_H
#define APX_ANALYSIS_POWER_CAP_H

#include "analysis/model.h"

struct apx_power_cap {
	int known;		/* the trace has the readings over the steady state */
	int capped;		/* the software power cap held in >= half of the steady state */
	double capped_share;	/* of the steady state, 0..1 */
	double power_w, limit_w, clock_sm_mhz;	/* steady-state means (NaN: not read) */
};

/* The readings of the device with the most kernel time (model->pm's nvml.* series). */
void apx_power_cap_read(const struct apx_model *m, struct apx_power_cap *out);

/* At the cap: the fraction of a step that removing idle time x (a fraction of the step) saves,
 * when kernels are busy d1 of the step. Model: the average power stays at the cap, the power
 * above the idle GPU's grows as the clock cubed (voltage scales with frequency), so
 * d1 * f1^3 = d2 * f2^3 and the kernels take s = f1 / f2 times longer, where d2 is the new
 * duty: s^2 * (1 - x + d1 * (s - 1)) = 1. *slow = s. x is taken as at most 1 - d1. */
double apx_power_capped_saving(double d1, double x, double *slow);

#endif
