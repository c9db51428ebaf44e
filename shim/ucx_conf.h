// ucx.conf scanning: fed in chunks; reports whether any line (in any section) assigns a key
// (UCX_TLS for the library), and, when asked, the value of the last such line. INI syntax as UCX
// reads it: blank-trimmed key, '#' and ';' comment lines, [sections]. Pure (see core.h); the probe
// (probe.cc) finds the files and feeds them, and `ucxtls doctor` reads UCX_MODULE_DIR and
// UCX_MODULES with it.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace ucxtls {

struct ConfScan {
  const char *key = "UCX_TLS";
  // Where the value of the key's last assignment goes, with the blanks around it and an inline
  // comment (";" after a blank, as UCX's inih takes it) removed, NUL-terminated and cut at
  // value_cap - 1 bytes, once finish() is called. NULL: only `found`, and the scan stops there.
  char *value = nullptr;
  size_t value_cap = 0;
  size_t value_len = 0;
  uint8_t state = 0;
  uint8_t matched = 0;
  bool found = false;
  // The last assignment was in a [section] (UCX's parser.c applies a section's lines only where
  // its "CPU vendor", "CPU model" or product filters match this machine, which a file alone
  // cannot tell): its value may not be the one UCX reads.
  bool value_in_section = false;
  bool in_section = false;  // a [section] line was read
  bool prev_name = false;  // a name=value line was seen in this section (inih's multi-line rule)
  bool indented = false;   // the current line started with blanks
  size_t offset = 0;       // bytes fed so far (a BOM only counts at 0)
  void feed(const char *p, size_t n);
  void finish();  // the end of the file: the value of a last line without its newline is trimmed

 private:
  void assigned();
};

}  // namespace ucxtls
