#include "collector/transport/transport_peers.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRANSPORT_PEERS_BUCKETS 1024

struct transport_peer_entry {
    struct transport_peer_entry *next;
    uint32_t calls;
    char key[TRANSPORT_PEER_KEY];
};

struct transport_peers {
    pthread_mutex_t lock;
    uint32_t max_calls;
    size_t count;
    struct transport_peer_entry *buckets[TRANSPORT_PEERS_BUCKETS];
};

struct transport_peers *transport_peers_new(uint32_t max_calls)
{
    struct transport_peers *p = calloc(1, sizeof(*p));

    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    p->max_calls = max_calls;
    return p;
}

void transport_peers_free(struct transport_peers *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < TRANSPORT_PEERS_BUCKETS; i++) {
        while (p->buckets[i]) {
            struct transport_peer_entry *e = p->buckets[i];
            p->buckets[i] = e->next;
            free(e);
        }
    }
    pthread_mutex_destroy(&p->lock);
    free(p);
}

void transport_peers_key(const char *address, char *key)
{
    const char *colon = strrchr(address, ':');
    const char *first = strchr(address, ':');
    size_t n = strlen(address);

    /* "ipv4:HOST:PORT": drop the port; "unix:PATH" has a single colon */
    if (colon && colon != first)
        n = (size_t)(colon - address);
    if (n >= TRANSPORT_PEER_KEY)
        n = TRANSPORT_PEER_KEY - 1;
    memcpy(key, address, n);
    key[n] = '\0';
}

static size_t transport_peers_hash(const char *key)
{
    size_t h = 5381;

    for (; *key; key++)
        h = h * 33 + (unsigned char)*key;
    return h % TRANSPORT_PEERS_BUCKETS;
}

/* The entry of key in its bucket, or where to link a new one (*link). */
static struct transport_peer_entry **transport_peers_find(struct transport_peers *p,
                                                          const char *key)
{
    struct transport_peer_entry **link = &p->buckets[transport_peers_hash(key)];

    while (*link && strcmp((*link)->key, key) != 0)
        link = &(*link)->next;
    return link;
}

int transport_peers_enter(struct transport_peers *p, const char *key)
{
    struct transport_peer_entry **link, *e;
    int r;

    pthread_mutex_lock(&p->lock);
    link = transport_peers_find(p, key);
    e = *link;
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (e) {
            snprintf(e->key, sizeof(e->key), "%s", key);
            *link = e;
            p->count++;
        }
    }
    if (!e)
        r = -ENOMEM;
    else if (p->max_calls && e->calls >= p->max_calls)
        r = -EBUSY;
    else
        r = (int)++e->calls;
    pthread_mutex_unlock(&p->lock);
    return r;
}

void transport_peers_leave(struct transport_peers *p, const char *key)
{
    struct transport_peer_entry **link, *e;

    pthread_mutex_lock(&p->lock);
    link = transport_peers_find(p, key);
    e = *link;
    if (e && e->calls > 0 && --e->calls == 0) {
        *link = e->next;
        free(e);
        p->count--;
    }
    pthread_mutex_unlock(&p->lock);
}

size_t transport_peers_count(struct transport_peers *p)
{
    size_t n;

    pthread_mutex_lock(&p->lock);
    n = p->count;
    pthread_mutex_unlock(&p->lock);
    return n;
}
