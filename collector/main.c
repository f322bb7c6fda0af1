/* argus-collector: the server. */
#include <string.h>
#include <unistd.h>

#include "collector/config.h"
#include "common/daemon.h"
#include "common/log.h"

int main(int argc, char **argv)
{
    struct collector_config cfg = {0};
    struct config_result res;
    int sigfd, r;

    r = daemon_config(&collector_config_table, &cfg, argc, argv, &cfg.log_level, &res);
    if (r != 0)
        return r > 0 ? 0 : 2;
    sigfd = daemon_signalfd();
    if (sigfd < 0) {
        log_error("main", "signalfd: %s", strerror(-sigfd));
        config_free(&collector_config_table, &cfg);
        return 1;
    }
    log_info("main", "starting (config %s)", res.path ? res.path : "built-in defaults");
    config_log(&collector_config_table, &cfg);
    while (daemon_wait_signal(sigfd, -1) != DAEMON_SIGNAL_STOP)
        ;
    log_info("main", "stopped");
    close(sigfd);
    config_free(&collector_config_table, &cfg);
    return 0;
}
