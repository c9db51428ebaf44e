/* nixl_like: the consumer as a program (libnixl_like.so's driver), for runs without Python:
     nixl_like target|initiator FD SIZE [force] [ze|cuda]
   FD: a connected stream socket to the other side (inherited). Exit status: nixl_like.h's codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nixl_like.h"

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: nixl_like target|initiator FD SIZE [force] [ze|cuda]\n");
    return NL_USAGE;
  }
  int flags = argc > 4 && !strcmp(argv[4], "force") ? NIXL_LIKE_FORCE : 0;
  const char *gpu = argc > 5 ? argv[5] : "ze";
  return nixl_like_run(argv[1], atoi(argv[2]), strtoull(argv[3], NULL, 0), flags, gpu);
}
