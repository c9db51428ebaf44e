// ucx.conf scanning, fed in chunks: does any line assign a key, and the value of the last one,
// as UCX's inih reads it. Pure (see core.h).
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace ucxtls {

struct ConfScan {
  const char *key = "UCX_TLS";
  // The last assignment's value, trimmed, without an inline comment (";" after a blank), cut at
  // value_cap - 1, once finish() is called. NULL: only `found`.
  char *value = nullptr;
  size_t value_cap = 0;
  size_t value_len = 0;
  uint8_t state = 0;
  uint8_t matched = 0;
  bool found = false;
  // The last assignment was in a [section], which applies only where its filters match.
  bool value_in_section = false;
  bool in_section = false;  // a [section] line was read
  bool prev_name = false;  // a name=value line was seen in this section (inih's multi-line rule)
  bool prev_key = false;   // ... and it was the key's: a continuation line replaces its value
  bool indented = false;   // the current line started with blanks
  size_t offset = 0;       // bytes fed so far (a BOM only counts at 0)
  // Section filters (UCX 1.17+, src/ucs/config/parser.c ucs_config_parse_check_filter): a "CPU
  // vendor", "CPU model" or "DMI product name" line (label 0, 1, 2) whose pattern does not match
  // skips its section; filter answers 1, 0, or -1 (cannot tell: `unsure`). NULL: every section.
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
