/* bench_spawn: process-start time of one program under several environments, interleaved.
 *
 *   bench_spawn [-n ROUNDS] [-w WARMUP] -c LABEL [NAME=VALUE...] [-c LABEL ...] -- PROGRAM [ARG...]
 *
 * Each -c starts a configuration: the harness's own environment plus the NAME=VALUE entries that
 * follow it (they replace entries of the same name). Every round spawns PROGRAM once per
 * configuration (posix_spawn + wait4, nothing else between the two clock readings), starting
 * each round at the next configuration, so that a slow spell of the machine hits every
 * configuration alike. WARMUP rounds are run first and discarded.
 *
 * Output, one tab-separated line per configuration, in the order given:
 *   label  runs  median_us  q1_us  q3_us  min_us  minflt_median
 * A child that fails (exit status not 0) stops the run with status 2.
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

struct config {
  const char *label;
  char **env;
  double *us;
  long *minflt;
};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return x < y ? -1 : x > y;
}

static double quantile(const double *sorted, int n, double q) {
  double pos = q * (n - 1);
  int i = (int)pos;
  double f = pos - i;
  return i + 1 < n ? sorted[i] * (1 - f) + sorted[i + 1] * f : sorted[i];
}

/* The harness's environment with `extra` entries added, replacing entries of the same name. */
static char **make_env(char **extra, int nextra) {
  int n = 0;
  while (environ[n]) n++;
  char **env = calloc((size_t)(n + nextra + 1), sizeof *env);
  int k = 0;
  for (int i = 0; i < n; i++) {
    const char *eq = strchr(environ[i], '=');
    size_t len = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
    int replaced = 0;
    for (int j = 0; j < nextra; j++)
      if (!strncmp(extra[j], environ[i], len) && extra[j][len] == '=') replaced = 1;
    if (!replaced) env[k++] = environ[i];
  }
  for (int j = 0; j < nextra; j++) env[k++] = extra[j];
  env[k] = NULL;
  return env;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void usage(void) {
  fprintf(stderr, "usage: bench_spawn [-n ROUNDS] [-w WARMUP] -c LABEL [NAME=VALUE...] ... -- PROGRAM [ARG...]\n");
  exit(64);
}

int main(int argc, char **argv) {
  int rounds = 1000, warmup = 20, nconf = 0;
  struct config conf[64];  /* bench.sh: about 17 configurations, twice with BENCH_BEFORE */
  char **prog = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-n") && i + 1 < argc) {
      rounds = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "-w") && i + 1 < argc) {
      warmup = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
      if (nconf == 64) usage();
      conf[nconf].label = argv[++i];
      int first = i + 1, n = 0;
      while (first + n < argc && strchr(argv[first + n], '=') && argv[first + n][0] != '-') n++;
      conf[nconf].env = make_env(argv + first, n);
      nconf++;
      i += n;
    } else if (!strcmp(argv[i], "--") && i + 1 < argc) {
      prog = argv + i + 1;
      break;
    } else {
      usage();
    }
  }
  if (!prog || !nconf || rounds < 1 || warmup < 0) usage();
  for (int c = 0; c < nconf; c++) {
    conf[c].us = calloc((size_t)rounds, sizeof(double));
    conf[c].minflt = calloc((size_t)rounds, sizeof(long));
  }

  for (int r = -warmup; r < rounds; r++) {
    int start = (r + warmup) % nconf;
    for (int k = 0; k < nconf; k++) {
      struct config *c = &conf[(start + k) % nconf];
      pid_t pid;
      int status;
      struct rusage ru;
      double t0 = now_us();
      if (posix_spawn(&pid, prog[0], NULL, NULL, prog, c->env) != 0) {
        perror("bench_spawn: posix_spawn");
        return 2;
      }
      if (wait4(pid, &status, 0, &ru) != pid) {
        perror("bench_spawn: wait4");
        return 2;
      }
      double t1 = now_us();
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_spawn: %s under config %s: status %d\n", prog[0], c->label, status);
        return 2;
      }
      if (r >= 0) {
        c->us[r] = t1 - t0;
        c->minflt[r] = ru.ru_minflt;
      }
    }
  }

  for (int c = 0; c < nconf; c++) {
    qsort(conf[c].us, (size_t)rounds, sizeof(double), cmp_double);
    qsort(conf[c].minflt, (size_t)rounds, sizeof(long), cmp_long);
    printf("%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%ld\n", conf[c].label, rounds, quantile(conf[c].us, rounds, 0.5),
           quantile(conf[c].us, rounds, 0.25), quantile(conf[c].us, rounds, 0.75), conf[c].us[0],
           conf[c].minflt[rounds / 2]);
  }
  return 0;
}
