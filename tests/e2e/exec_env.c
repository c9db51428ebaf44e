/* exec_env ENTRY... -- PROGRAM [ARG...]: execs PROGRAM (a path) with exactly the given
 * environment entries, byte for byte. A shell, env(1) and Python's os.execve all write
 * NAME=value; only a program's own execve can pass an entry without '=' (tests/e2e/test_names.py). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  int sep = 1;
  while (sep < argc && strcmp(argv[sep], "--") != 0) sep++;
  if (sep + 1 >= argc) {
    fprintf(stderr, "usage: exec_env ENTRY... -- PROGRAM [ARG...]\n");
    return 2;
  }
  char *envp[256];
  int n = 0;
  for (int i = 1; i < sep && n < 255; i++) envp[n++] = argv[i];
  envp[n] = NULL;
  execve(argv[sep + 1], argv + sep + 1, envp);
  perror("exec_env: execve");
  return 127;
}
