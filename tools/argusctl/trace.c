#include "tools/argusctl/trace.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int trace_write(const Argus__V1__TraceResponse *resp, const char *report_id, const char *path)
{
    char fallback[320];
    FILE *f;
    int r = 0;

    if (strcmp(path, TRACE_DEFAULT_OUTPUT) == 0) {
        snprintf(fallback, sizeof(fallback), "trace-%s.json", report_id);
        path = fallback;
    }
    f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f) {
        r = -errno;
        fprintf(stderr, "argusctl: cannot write %s: %s\n", path, strerror(-r));
        return r;
    }
    if (fwrite(resp->chrome_json.data, 1, resp->chrome_json.len, f) != resp->chrome_json.len)
        r = -EIO;
    if (f != stdout && fclose(f) != 0 && !r)
        r = -errno;
    if (r) {
        fprintf(stderr, "argusctl: writing %s: %s\n", path, strerror(-r));
        return r;
    }
    if (f != stdout)
        fprintf(stderr, "trace of report %s (%u captured windows, %zu bytes) written to %s\n",
                report_id, resp->windows, resp->chrome_json.len, path);
    return 0;
}
