/*
 * mmc-metaserver's exit status: one code per reason a start fails, so a supervisor (systemd's
 * RestartPreventExitStatus=, a container runtime) can tell a configuration error from a crash without reading the
 * log. Documented in docs/operations.md ("Exit codes"); every failed start also logs one line
 * `op=start exit_code=N reason=... err="..."`.
 */
#ifndef MMC_EXIT_CODE_H
#define MMC_EXIT_CODE_H

enum exit_code {
	EXIT_OK = 0,            /* stopped by SIGTERM / SIGINT after draining, or --help, --version, --check-config */
	EXIT_INTERNAL = 1,      /* out of memory, the event loop or a thread could not be set up, no randomness */
	EXIT_CONFIG = 2,        /* bad command line, unknown key, bad value, conflicting values */
	EXIT_DATA_DIR = 3,      /* the data dir (or a parent) cannot be created or written, LMDB or Redis refuses */
	EXIT_LISTEN = 4,        /* a listen address cannot be bound: in use, not on this host, or not permitted */
	EXIT_DATA_DIR_BUSY = 5, /* another mmc-metaserver holds the data dir */
	EXIT_LOG_FILE = 6,      /* ock.mmc.log_path cannot be opened for appending */
};

#endif
