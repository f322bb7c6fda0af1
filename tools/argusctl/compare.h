/* argusctl compare: two runs side by side, the way a trace diff is used to
 * hunt a regression.
 *
 *   argusctl compare --job A --job B          (second --job = --vs-job B)
 *   argusctl compare --job A --steps X-Y --vs-steps Z-W
 *   ... [--vs-job B] [--top N] [--json] [--collector ADDR]
 *
 * Side A is job A (steps X-Y when given, else all), side B is job B (or job
 * A again) over Z-W (else all). The step records of every rank come from the
 * collector (Query/Steps, paged). For the step time, each phase name and each
 * kernel name (its groups on every stream pooled) it prints the distribution
 * of both sides: count, p50, p90, mean (ns shown as ms), the W1 (earth
 * mover's) distance between the two distributions, and the impact: the
 * change of time per step record, B's total / B's records - A's total / A's
 * records (a kernel twice as slow that runs 10 ms a step has an impact of
 * +10 ms). The top changes are the rows sorted by |impact|, largest first.
 *
 * Samples: a step or a phase is one exact sample per record; a kernel
 * group reaches argusctl only as the agent's clusters, which become a model
 * with bounds (compare_dist.h): the ranks a cluster knows (its p50, its p99,
 * min and max when sent) exactly, the others between them, so quantiles and
 * W1 are of the kernels' own durations within stated bounds; a kernel's
 * mean and total use the exact sum_ns when the agent sent it. A kernel's
 * impact is per record whose kernels were traced (StepRecord.sampled: the
 * agent's duty cycle leaves the others without kernels).
 *
 * The table prints the numbers in fixed columns and the full name last.
 */
#ifndef ARGUS_ARGUSCTL_COMPARE_H
#define ARGUS_ARGUSCTL_COMPARE_H

/* The compare command. argv is argusctl's whole command line (the first
 * "compare" word is dropped). Returns argusctl's exit code. */
int compare_main(int argc, char **argv);

#endif
