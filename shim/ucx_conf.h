// ucx.conf scanning: fed in chunks; reports whether any line (in any section) assigns UCX_TLS.
// INI syntax as UCX reads it: blank-trimmed key, '#' and ';' comment lines, [sections]. Pure
// (see core.h); the probe (probe.cc) finds the files and feeds them.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace ucxtls {

struct ConfScan {
  uint8_t state = 0;
  uint8_t matched = 0;
  bool found = false;
  bool prev_name = false;  // a name=value line was seen in this section (inih's multi-line rule)
  bool indented = false;   // the current line started with blanks
  size_t offset = 0;       // bytes fed so far (a BOM only counts at 0)
  void feed(const char *p, size_t n);
};

}  // namespace ucxtls
