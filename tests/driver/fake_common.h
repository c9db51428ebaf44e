/* Shared by the fake driver libraries: answers come from environment variables, and every call
   can be logged (FAKE_LOG=path) so that a test sees what the helper asked, and from which process. */
#ifndef FAKE_COMMON_H
#define FAKE_COMMON_H

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long fake_num(const char *name, long def) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 0) : def;
}

/* Appends "<what> pid=<pid> exe=<exe> fds=<open fds>" to $FAKE_LOG. */
static void fake_log(const char *what) {
  const char *path = getenv("FAKE_LOG");
  if (!path || !*path) return;
  char line[1024], exe[256] = "?";
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) exe[n] = '\0';
  int len = snprintf(line, sizeof line, "%s pid=%d exe=%s fds=", what, (int)getpid(), exe);
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) && len < (int)sizeof line - 16) {
      if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d)) continue;
      len += snprintf(line + len, sizeof line - len, "%s,", e->d_name);
    }
    closedir(d);
  }
  len += snprintf(line + len, sizeof line - len, "\n");
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ssize_t w = write(fd, line, (size_t)len);
    (void)w;
    close(fd);
  }
}

/* FAKE_<X>_HANG=ms sleeps; FAKE_<X>_CRASH=abort|segv dies; FAKE_<X>_NOISE=text goes to stdout and
   stderr (the helper's, which must never reach the host's); FAKE_<X>_CHILD=ms leaves a child
   process behind that sleeps that long (a driver that starts a daemon), logged as "child pid=N". */
static void fake_misbehave(const char *prefix) {
  char name[64];
  snprintf(name, sizeof name, "FAKE_%s_DAEMON", prefix);  /* =ms: a setsid child, out of the group */
  long daemon_ms = fake_num(name, 0);
  if (daemon_ms > 0 && fork() == 0) {
    setsid();
    struct timespec ts = {daemon_ms / 1000, (daemon_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
    _exit(0);
  }
  snprintf(name, sizeof name, "FAKE_%s_CHILD", prefix);
  long child_ms = fake_num(name, 0);
  if (child_ms > 0) {
    pid_t pid = fork();
    if (pid == 0) {
      struct timespec ts = {child_ms / 1000, (child_ms % 1000) * 1000000L};
      while (nanosleep(&ts, &ts) != 0) {
      }
      _exit(0);
    }
    char what[64];
    snprintf(what, sizeof what, "%s child=%d", prefix, (int)pid);
    fake_log(what);
  }
  snprintf(name, sizeof name, "FAKE_%s_NOISE", prefix);
  const char *noise = getenv(name);
  if (noise) {
    printf("%s\n", noise);
    fflush(stdout);
    fprintf(stderr, "%s\n", noise);
  }
  snprintf(name, sizeof name, "FAKE_%s_HANG", prefix);
  long ms = fake_num(name, 0);
  if (ms > 0) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
  }
  snprintf(name, sizeof name, "FAKE_%s_CRASH", prefix);
  const char *crash = getenv(name);
  if (crash && !strcmp(crash, "abort")) abort();
  if (crash && !strcmp(crash, "segv")) {
    volatile int *p = NULL;
    *p = 1;
  }
}

#endif
