/* The only file that knows the layout of CUPTI activity records: CUDA 13's
 * CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemset4,
 * CUpti_ActivityMarker2 and CUpti_ActivityAPI. Another CUDA major gets its
 * own translate function here, chosen by cuptiGetVersion at init. */
#include <stddef.h>
#include <string.h>

#include "agent/cupti/records.h"

#include "common/work_id.h"

const char *records_copy_name(uint32_t copy_kind)
{
    switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
        return "Memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
        return "Memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
        return "Memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
        return "Memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
        return "Memcpy PtoP";
    default:
        return "Memcpy";
    }
}

static uint64_t records_dur(uint64_t start, uint64_t end)
{
    return end > start ? end - start : 0;
}

static int records_kernel(const CUpti_ActivityKernel10 *k, struct lib_record *out)
{
    out->span.kind = CUPTI_SPAN_KERNEL;
    out->span.start_ns = k->start;
    out->span.dur_ns = records_dur(k->start, k->end);
    out->span.stream = k->streamId;
    out->span.correlation = k->correlationId;
    /* the launch shape: what work the kernel was given (KernelGroup.work_id) */
    out->span.aux = work_id_shape((uint32_t)k->gridX, (uint32_t)k->gridY, (uint32_t)k->gridZ,
                                  (uint32_t)k->blockX, (uint32_t)k->blockY, (uint32_t)k->blockZ);
    out->name = k->name ? k->name : "unknown_kernel";
    out->name_stable = k->name != NULL;
    return 1;
}

static int records_marker(const CUpti_ActivityMarker2 *m, struct lib_record *out)
{
    uint32_t tid = 0;

    if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD)
        tid = m->objectId.pt.threadId;
    out->span.start_ns = m->timestamp;
    out->span.stream = tid;
    out->span.aux = m->id;
    if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        out->span.kind = CUPTI_SPAN_RANGE_END;
        out->range_end = true;
        return 1;
    }
    if (!(m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) || !m->name)
        return 0; /* instantaneous marks: not phases */
    out->span.kind = CUPTI_SPAN_MARKER;
    out->name = m->name;
    return 1;
}

int records_translate(const CUpti_Activity *rec, struct lib_record *out)
{
    memset(out, 0, sizeof(*out));
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return records_kernel((const CUpti_ActivityKernel10 *)rec, out);
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *c = (const CUpti_ActivityMemcpy6 *)rec;
        out->span.kind = CUPTI_SPAN_MEMCPY;
        out->span.start_ns = c->start;
        out->span.dur_ns = records_dur(c->start, c->end);
        out->span.stream = c->streamId;
        out->span.correlation = c->correlationId;
        out->name = records_copy_name(c->copyKind);
        out->name_stable = true;
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *s = (const CUpti_ActivityMemset4 *)rec;
        out->span.kind = CUPTI_SPAN_MEMSET;
        out->span.start_ns = s->start;
        out->span.dur_ns = records_dur(s->start, s->end);
        out->span.stream = s->streamId;
        out->span.correlation = s->correlationId;
        out->name = "Memset";
        out->name_stable = true;
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)rec;
        out->span.kind = CUPTI_SPAN_API;
        out->span.start_ns = a->start;
        out->span.dur_ns = records_dur(a->start, a->end);
        out->span.stream = a->threadId;
        out->span.correlation = a->correlationId;
        out->span.aux = a->cbid;
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_MARKER:
        return records_marker((const CUpti_ActivityMarker2 *)rec, out);
    default:
        return 0;
    }
}
