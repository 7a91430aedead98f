/* Readiness for systemd's Type=notify, without libsystemd: one datagram to $NOTIFY_SOCKET (sd_notify(3)). */
#ifndef MMC_SD_NOTIFY_H
#define MMC_SD_NOTIFY_H

/* Sends msg ("READY=1", "STATUS=...", "STOPPING=1") when $NOTIFY_SOCKET is set; does nothing otherwise. Errors are
 * logged, never fatal. */
void sd_notify_send(const char *msg);

#endif
