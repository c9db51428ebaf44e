// libucxtls.so: the constructor. It wires environment -> settings -> probes -> decision -> apply,
// and nothing else; every rule lives in core.cc, every file-system call in probe.cc.
//
// It runs in every process the library is preloaded into, before main: no stdio (diagnostics are
// one write(2) line), no threads, no heap beyond setenv's own, errno left as it was found.
#include <errno.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "core.h"
#include "probe.h"
#include "sys.h"

namespace {

using namespace ucxtls;

void write_stderr(const char *p, size_t n) {
  while (n) {
    ssize_t w = write_some(2, p, n);
    if (w <= 0) return;  // stderr closed or full: the host is not ours to disturb
    p += w, n -= size_t(w);
  }
}

void apply(const Inputs &in, const Decision &d) {
  switch (d.action) {
    case Action::set: {
      const char *tls = in.get(kUcxTls), *derived = in.get(kDerived);
      bool same = tls && derived && !__builtin_strcmp(tls, d.value) && !__builtin_strcmp(derived, d.value);
      if (same) return;  // re-derived to the value already there
      setenv("UCX_TLS", d.value, 1);
      setenv("UCXTLS_DERIVED", d.value, 1);
      return;
    }
    case Action::clear:
      unsetenv("UCX_TLS");
      unsetenv("UCXTLS_DERIVED");
      return;
    default:
      return;
  }
}

__attribute__((constructor)) void ucxtls_init() {
  const int saved_errno = errno;
  Inputs in;
  // 1. Secure execution: decide before reading a single variable.
  in.secure = getauxval(AT_SECURE) != 0;
  if (!in.secure) {
    read_inputs(environ, &in);
    Settings s;
    parse_settings(in, &s);
    // The facts and the decision (about 7 KiB with the value and the reasons) live in static
    // storage: the constructor runs on the host's stack, which may be small (ulimit -s).
    UCXTLS_FILE_BACKED static Facts f;
    UCXTLS_FILE_BACKED static Decision d;
    ProbeOptions o;
    o.evidence = s.debug;  // the evidence and the reasons are read by the debug line alone
    run_ladder(in, s, o, &f, &d);
    apply(in, d);
    if (s.debug || d.error) {
      UCXTLS_FILE_BACKED static char line[1024];
      write_stderr(line, format_line(in, d, line, sizeof line));
    }
  }
  errno = saved_errno;
}

}  // namespace
