/* Preloaded beside libucxtls.so, its constructor runs first and installs a SIGCHLD handler, as a
   host program's earlier constructor might; its destructor reports on stderr how many SIGCHLD the
   process got and whether UCX_TLS was still unset when the handler went in (so it really was in
   place before the library's constructor). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static volatile sig_atomic_t count;
static int before;

static void on_chld(int sig) {
  (void)sig;
  count++;
}

__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_chld;
  sigaction(SIGCHLD, &sa, NULL);
  before = getenv("UCX_TLS") == NULL;
  if (getenv("SIGCHLD_COUNTER_SELFTEST")) { /* the positive control: a plain child is counted */
    /* SIGCHLD stays blocked until sigsuspend atomically unblocks and waits: a signal that lands
       between the test of count and the wait cannot be lost (pause() could sleep forever). */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &old);
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    while (count == 0) sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
  }
}

__attribute__((destructor)) static void report(void) {
  char line[96];
  int n = snprintf(line, sizeof line, "sigchld-counter: %d SIGCHLD, installed before ucxtls: %s\n", (int)count,
                   before ? "yes" : "no");
  ssize_t w = write(2, line, (size_t)n);
  (void)w;
}
