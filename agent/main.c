/* argus-agent: the node daemon (agent/agent.h). */
#include "agent/agent.h"
#include "agent/config.h"
#include "common/daemon.h"
#include "common/log.h"

int main(int argc, char **argv)
{
    struct agent_config cfg = {0};
    struct config_result res;
    struct agent *a;
    int r;

    r = daemon_config(&agent_config_table, &cfg, argc, argv, &cfg.log_level, &res);
    if (r != 0)
        return r > 0 ? 0 : 2;
    log_info("main", "starting (config %s)", res.path ? res.path : "built-in defaults");
    config_log(&agent_config_table, &cfg);
    a = agent_setup(&cfg, argc, argv);
    if (!a) {
        config_free(&agent_config_table, &cfg);
        return 1;
    }
    r = agent_run(a);
    log_info("main", "stopping");
    agent_teardown(a);
    log_info("main", "stopped");
    config_free(&agent_config_table, &cfg);
    return r == 0 ? 0 : 1;
}
