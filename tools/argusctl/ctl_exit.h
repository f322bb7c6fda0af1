/* argusctl's exit codes, shared by its commands. */
#ifndef ARGUS_ARGUSCTL_CTL_EXIT_H
#define ARGUS_ARGUSCTL_CTL_EXIT_H

enum ctl_exit {
    CTL_OK = 0,
    CTL_NOT_FOUND = 1,   /* no such job or report */
    CTL_USAGE = 2,       /* bad flags or arguments */
    CTL_UNREACHABLE = 3, /* the collector did not answer */
    CTL_ERROR = 4,       /* any other error the collector reported */
    CTL_TLS = 5,         /* the collector is there but the TLS handshake fails (why is printed) */
};

#endif
