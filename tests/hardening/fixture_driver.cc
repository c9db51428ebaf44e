// The constructor's decision, as an ordinary program built with ASan+UBSan (the preload library
// itself cannot carry ASan into /bin/sh): reads its own environment exactly as the constructor
// does, runs the same run_ladder on the machine UCXTLS_SYSROOT points at, and prints the UCX_TLS
// the process would end up with ("<unset>" when none) on stdout, and the library's stderr line
// when it would print one. A second, exhaustive pass (what `ucxtls explain` asks) runs too, so
// the whole-picture paths of the probe are covered.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "load.h"
#include "probe.h"
#include "sys.h"

using namespace ucxtls;

int main() {
  Inputs in;
  Settings s;
  load(environ, secure_execution(nullptr), &in, &s);  // as the library, from /proc/self/auxv
  static Facts f;
  static Decision d;
  run_ladder(in, s, ProbeOptions(), &f, &d);
  const char *v = effective_value(in, d);
  printf("%s\n", v ? v : "<unset>");
  if (s.debug || d.error) {
    char line[1024];
    size_t n = format_line(Decided{in, s, f, d}, line, sizeof line);
    fwrite(line, 1, n, stderr);
  }
  // The exhaustive pass must reach the same action.
  static Facts fx;
  static Decision dx;
  ProbeOptions all;
  all.exhaustive = true;
  run_ladder(in, s, all, &fx, &dx);
  if (dx.action != d.action || strcmp(dx.value, d.value)) {
    fprintf(stderr, "fixture_driver: exhaustive pass decided %s \"%s\", first pass %s \"%s\"\n",
            action_name(dx.action), dx.value, action_name(d.action), d.value);
    return 3;
  }
  return 0;
}
