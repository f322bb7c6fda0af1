/* The report page: see web_report.h. */
#include "collector/web/web_report.h"

#include <errno.h>
#include <stdlib.h>

#include "collector/store/store.h"
#include "collector/web/web_html.h"
#include "collector/web/web_job.h"
#include "proto/argus.pb-c.h"

static int web_unpack_report(void *ctx, const void *value, size_t len)
{
    *(Argus__V1__Report **)ctx = argus__v1__report__unpack(NULL, len, value);
    return 0;
}

int web_report_page(struct store *s, const char *id, FILE *out)
{
    Argus__V1__Report *r = NULL;
    int rc = store_get_report(s, id, web_unpack_report, &r);
    char *suffix = r ? web_job_rank_suffix(r->job) : NULL;

    web_html_begin(out, id);
    if (!r || !suffix) {
        fputs(rc == -ENOENT ? "<p>No report with the id " : "<p>Cannot read the report ", out);
        web_html_escape(id, out);
        fputs(rc == -ENOENT ? " in this collector (another collector of the set may hold it). "
                              "<a href=\"/\">All jobs</a>.</p>\n"
                            : ".</p>\n",
              out);
        web_html_end(out);
        if (r)
            argus__v1__report__free_unpacked(r, NULL);
        return rc == -ENOENT ? 404 : 500;
    }
    fprintf(out, "<h1>Report of job <a href=\"/job%s\">", suffix);
    web_html_escape(r->job, out);
    fputs("</a></h1>\n", out);
    web_job_report(r, suffix, out);
    web_html_end(out);
    argus__v1__report__free_unpacked(r, NULL);
    free(suffix);
    return 200;
}
