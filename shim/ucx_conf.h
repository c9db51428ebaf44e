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
  bool prev_key = false;   // ... and it was the key's: a continuation line replaces its value
  bool indented = false;   // the current line started with blanks
  size_t offset = 0;       // bytes fed so far (a BOM only counts at 0)
  // Section filters (UCX 1.17 and later: src/ucs/config/parser.c ucs_config_parse_check_filter): a
  // line "CPU vendor = P", "CPU model = P" or "DMI product name = P" whose pattern does not match
  // this machine skips the rest of its section. filter, when set, is asked at the end of such a
  // line (label 0, 1, 2 in that order; the pattern trimmed): 1 it matches, 0 it does not, -1 it
  // cannot be told. NULL (the library, UCX 1.16 and older): every section counts. `unsure`: the
  // key's last assignment is where a filter could not be told.
  int (*filter)(void *ctx, int label, const char *pattern) = nullptr;
  void *filter_ctx = nullptr;
  bool unsure = false;
  void feed(const char *p, size_t n);
  void finish();  // the end of the file: the value of a last line without its newline is trimmed

 private:
  void assigned();
  void line_end();
  void capture(char c);
  // The current line's name and value (filters only), and the section's filter state.
  char name_[20] = {}, pattern_[64] = {};
  uint8_t name_len_ = 0, pattern_len_ = 0, capture_ = 0;
  size_t captured_ = 0;  // bytes the capture has seen (the scanner reads some twice)
  bool skip_ = false, section_unsure_ = false, cont_ = false;
};

}  // namespace ucxtls
