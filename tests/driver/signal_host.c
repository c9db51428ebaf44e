/* Preloaded beside libucxtls.so (listed after it, so its constructor runs first): the host installs
   a SIGUSR1 handler before the library's constructor runs, as a program's own earlier constructor
   or a late dlopen would find it. The handler appends "handler pid=<pid>" to $SIGNAL_HOST_LOG with
   write(2) only, so the test can see in which process a host handler ran. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *log_path;

static void on_usr1(int sig) {
  (void)sig;
  char line[48];
  int n = snprintf(line, sizeof line, "handler pid=%d\n", (int)getpid());
  int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
    close(fd);
  }
}

__attribute__((constructor)) static void install(void) {
  log_path = getenv("SIGNAL_HOST_LOG");
  if (!log_path) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
}
