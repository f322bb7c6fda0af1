/* Remote write: the per-job series (collector/series/series.h) pushed to a
 * Prometheus-compatible TSDB (Prometheus with
 * --web.enable-remote-write-receiver, Mimir, Thanos receive,
 * VictoriaMetrics) with the remote write 1.0 protocol: a
 * prometheus.WriteRequest (proto/remote_write.proto), snappy block
 * compressed, POSTed with Content-Encoding: snappy, Content-Type:
 * application/x-protobuf and X-Prometheus-Remote-Write-Version: 0.1.0.
 *
 * One sender thread: every interval it collects the series (through the
 * caller's collect function) into one request and appends it to a queue
 * bounded by queue_bytes (full: the oldest requests are dropped and their
 * samples counted); it sends the queue's head, oldest first. A 2xx
 * response removes it; 4xx other than 429 removes it too (the receiver
 * refused the data: retrying cannot help; counted as rejected); 5xx, 429
 * and transport errors keep it and retry with exponential backoff (0.5 s
 * doubling to 30 s), meanwhile new collections queue up behind it. */
#ifndef ARGUS_COLLECTOR_REMOTE_WRITE_H
#define ARGUS_COLLECTOR_REMOTE_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct series_set;

struct remote_write_options {
    const char *url;               /* the receiver's endpoint (copied) */
    uint64_t interval_ns;          /* between collections */
    uint64_t timeout_ns;           /* of one POST */
    uint64_t queue_bytes;          /* compressed requests waiting, at most */
    const char *bearer_token_file; /* NULL or "": no Authorization header */
    const char *replica;           /* NULL or "": no replica label (copied) */
    const char *collector;         /* this collector's name (cluster.self, else the host
                                    * name): label collector, unless replica is set (copied) */
};

/* Append the series to send to out (zeroed); 0 or -errno (nothing sent
 * then). Runs on the sender thread. */
typedef int (*remote_write_collect_fn)(void *ctx, struct series_set *out);

struct remote_write_stats {
    uint64_t collections;                   /* requests built */
    uint64_t requests_sent;                 /* 2xx */
    uint64_t requests_failed;               /* 5xx, 429 or transport errors: each retried */
    uint64_t samples_sent;                  /* in 2xx requests */
    uint64_t samples_dropped;               /* in requests dropped from the full queue */
    uint64_t samples_rejected;              /* in requests answered 4xx (not retried) */
    uint64_t queued_requests, queued_bytes; /* gauges */
    double last_success_unix;               /* 0: never */
    long last_status;                       /* of the last response; 0: transport error or none */
};

struct remote_write;

/* Read the token file, start the sender. NULL with a sentence naming what
 * was wrong in err (unreadable or empty token file, bad URL scheme,
 * ENOMEM). The collect function and ctx must outlive the sender. */
struct remote_write *remote_write_new(const struct remote_write_options *o,
                                      remote_write_collect_fn collect, void *ctx, char *err,
                                      size_t errlen);

/* Stop the sender (an in-flight POST finishes or times out first) and
 * free; what is queued is lost. NULL is fine. */
void remote_write_free(struct remote_write *w);

void remote_write_get_stats(struct remote_write *w, struct remote_write_stats *out);

/* --- the pure parts, for tests ---------------------------------------------- */

/* Encode the set as a snappy-compressed WriteRequest, every sample at
 * timestamp_ms, each series' labels sorted by name (__name__ first), with
 * replica="REPLICA" added when replica is neither NULL nor "" (the
 * collector's name in an HA pair: the TSDB drops the label and keeps one of
 * the pair's identical series), else collector="COLLECTOR" when collector
 * is neither (which collector sent it, as a scrape's instance label says:
 * with replica set that label is the replica's, and a collector label
 * would keep the pair's series apart). *out is malloc'd (the caller
 * frees). Returns 0 or -ENOMEM. */
int remote_write_encode(const struct series_set *s, const char *collector, const char *replica,
                        int64_t timestamp_ms, void **out, size_t *len);

enum remote_write_verdict {
    REMOTE_WRITE_SENT,   /* 2xx: done */
    REMOTE_WRITE_REJECT, /* 4xx except 429: drop, count, do not retry */
    REMOTE_WRITE_RETRY,  /* transport error, 429, 5xx (and anything else) */
};

/* What to do after a POST: transport_ok false for a transport error. */
enum remote_write_verdict remote_write_classify(bool transport_ok, long status);

/* The wait before retry number attempt (1, 2, ...): 0.5 s doubling, at
 * most 30 s. */
uint64_t remote_write_backoff_ns(unsigned attempt);

#endif
