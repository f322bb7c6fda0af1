/* Pipeline waits (docs/design.md section 7, the pipeline-stage straggler): in a
 * pipeline, a slow stage makes its neighbours wait inside their own phases
 * (activations flow forward, gradients backward), so one slow rank shows as
 * a long phase on every stage downstream of it in the same pipeline. Kernel
 * busy time tells the culprit from the waiting when kernels are traced; this
 * module settles it when they are not: among ranks of one pipeline (same DP
 * replica and TP rank) flagged on the same phase, the culprit is the first
 * stage in the direction the work flows (lowest stage for forward phases,
 * highest for backward ones) and the others are waiting, not suspects.
 */
#ifndef ARGUS_COLLECTOR_DIAG_PIPELINE_H
#define ARGUS_COLLECTOR_DIAG_PIPELINE_H

#include <stdint.h>

#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_groups.h"
#include "collector/diag/diag_persist.h"

/* Clear the COMPUTE flags (L2, phase, without kernel evidence: aux == 0) of
 * ranks that only wait for another flagged stage of their pipeline.
 * coords[0..n) give the pipelines. Returns the number of flags cleared, or
 * -ENOMEM. O(flags log flags). */
int diag_pipeline_resolve(const struct diag_coord *coords, uint32_t n, const struct diag_dict *d,
                          struct diag_flag *flags);

#endif
