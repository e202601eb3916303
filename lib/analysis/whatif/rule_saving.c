/*
 * rule_saving.c - how a rule takes its saving from the what-if simulator (whatif.h): the
 * simulated saving of the rule's transformation replaces the rule's own estimate, which stays
 * in the finding as the metric saving_rule_ns, and the finding's model (saving_model) says
 * which transformation made the number. Called by the rules whose fix has a transformation
 * (sync-frequency, pageable-copy, copy-overlap, launch-bound, sync-copy), after they decided
 * to fire on their own measurements; their titles, evidence and fixes stay as they are. Only
 * when the model asks for it (model->whatif_savings: apx report --savings whatif); otherwise
 * the rules' own savings stand.
 */
#include "analysis/whatif/whatif.h"

#include <stdio.h>

#include "analysis/findings.h"
#include "analysis/model.h"

#include "base/banned.h"

int apx_whatif_rule_saving(const struct apx_model *m, const struct apx_wi_params *p,
			   double *ret_saving_ns)
{
	double s;

	if (!m->whatif_savings || apx_whatif_saving(m, p, &s) < 0)
		return 0;
	*ret_saving_ns = s;
	return 1;
}

void apx_whatif_rule_note(struct apx_finding *f, enum apx_wi_xform x, double rule_ns)
{
	char b[32];

	if (!f)
		return;
	snprintf(f->model, sizeof(f->model),
		 "what-if simulation (%s) of the recorded steady state: saving = simulated time "
		 "before - after (the rule's own model: %s)", apx_wi_xform_name(x),
		 apx_fmt_ns(b, sizeof(b), rule_ns));
	apx_finding_metric(f, "saving_rule_ns", rule_ns, APX_UNIT_NS);
}
