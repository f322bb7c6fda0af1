/* The agent's sources and probes (agent_sources.c): what agent.c starts,
 * polls and retunes. Every function takes the agent being set up or run. */
#ifndef ARGUS_AGENT_AGENT_SOURCES_H
#define ARGUS_AGENT_AGENT_SOURCES_H

struct agent;
struct agent_config;
struct agent_source;

/* Start the probes listed in probes.enable, then CUPTI and the replay
 * sources the config asks for, into a->sources; a source with an fd joins
 * a->epfd. One that cannot run is logged and kept off with its reason. */
void agent_start_sources(struct agent *a);

/* Let source s handle what is pending; an error is logged (rate-limited). */
void agent_dispatch(struct agent *a, struct agent_source *s);

/* The CUPTI duty cycle of config c, at runtime: every traced process gets
 * the new mode over its hello socket. */
void agent_apply_sampling(struct agent *a, const struct agent_config *c);

#endif
