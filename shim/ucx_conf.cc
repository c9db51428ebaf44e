// The ucx.conf scanner: pure (see ucx_conf.h).
#include "ucx_conf.h"

namespace ucxtls {

namespace {

constexpr uint8_t kLineStart = 0, kKey = 1, kAfterKey = 2, kSkip = 3, kName = 4, kBom = 5, kValue = 6;

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

// The value of the line just read: UCX's inih cuts it at an inline comment (';' after a blank)
// and strips the blanks around it.
void ConfScan::finish() {
  if (!value || state != kValue) return;
  size_t n = value_len, b = 0;
  for (size_t k = 1; k < n && !cont_; k++)  // a continuation line is taken whole (ini.c ini_parse_stream)
    if (value[k] == ';' && is_blank(value[k - 1])) n = k;
  cont_ = false;
  while (b < n && is_blank(value[b])) b++;
  while (n > b && is_blank(value[n - 1])) n--;
  for (size_t k = b; k < n; k++) value[k - b] = value[k];
  value_len = n - b;
  value[value_len] = '\0';
  state = kSkip;
}

// As UCX's inih reads it (multi-line values, a UTF-8 BOM): an assignment is the key after leading
// blanks, then blanks and '=' or ':'. An indented line after a name=value line continues that
// value, replacing it when it is the key's (ucs_config_parse_config_file_line is called again).
void ConfScan::feed(const char *p, size_t n) {
  size_t key_length = 0;
  while (key[key_length]) key_length++;
  for (size_t i = 0; i < n && !(found && !value); i++, offset++) {
    const char c = p[i];
    const bool blank = is_blank(c);
    if (offset == 0 && (unsigned char)c == 0xEF) {  // a byte-order mark may open the file
      state = kBom;
      continue;
    }
    if (state == kBom) {
      if ((offset == 1 && (unsigned char)c == 0xBB)) continue;
      if (offset == 2 && (unsigned char)c == 0xBF) {
        state = kLineStart;
        continue;
      }
      state = kName;  // not a BOM: the line starts with a byte no key starts with
    }
    if (filter && offset + 1 > captured_) captured_ = offset + 1, capture(c);
    switch (state) {
      case kLineStart:
        if (c == '\n') {
          indented = false;
        } else if (blank) {
          indented = true;
        } else if (c == '#' || c == ';') {
          state = kSkip;
        } else if (indented && prev_name) {  // a continuation of the previous value
          state = kSkip;
          if (prev_key && !skip_) {
            unsure = section_unsure_;
            if (value) {
              value_len = 0, cont_ = true, state = kValue;
              if (value_cap > 1) value[value_len++] = c;
            }
          }
        } else if (c == '[') {
          prev_name = prev_key = skip_ = section_unsure_ = false, in_section = true, state = kSkip;
        } else if (c == key[0]) {
          state = kKey, matched = 1;
        } else {
          state = kName, i--, offset--;  // read this byte again as part of another name
        }
        break;
      case kKey:
        if (matched == key_length) {  // the whole key: what follows it decides
          if (c == '=' || c == ':') assigned();
          else if (c == ' ' || c == '\t') state = kAfterKey;
          else state = kName, i--, offset--;
        } else if (c == key[matched]) {
          matched++;
        } else {
          state = kName, i--, offset--;
        }
        break;
      case kAfterKey:
        if (c == '=' || c == ':') assigned();
        else if (c != ' ' && c != '\t') state = kName, i--, offset--;
        break;
      case kName:  // some other name: a '=' or ':' on this line makes it a name=value line
        if (c == '=' || c == ':') prev_name = true, prev_key = false, state = kSkip;
        break;
      case kValue:
        if (c != '\n' && value_len + 1 < value_cap) value[value_len++] = c;
        break;
      default:
        break;
    }
    if (c == '\n') {
      finish();
      if (filter) line_end();
      state = kLineStart, indented = false;
    }
  }
}

// The key's own name=value line: found (unless a filter skips its section); its value is read to
// the end of the line, when asked for.
void ConfScan::assigned() {
  prev_name = prev_key = true;
  if (skip_) {
    state = kSkip;
    return;
  }
  found = true;
  unsure = section_unsure_;
  value_in_section = in_section;
  if (!value) return;
  value_len = 0;
  state = kValue;
}

// A name=value line's name and value, for the filters: each byte once, as inih splits the line.
void ConfScan::capture(char c) {
  if (c == '\n') return;
  if (capture_ == 0) {  // before the line's first byte that is not blank
    if (is_blank(c)) return;
    capture_ = c == '#' || c == ';' || c == '[' || (indented && prev_name) ? 3 : 1;
    name_len_ = pattern_len_ = 0;
  }
  if (capture_ == 1) {
    if (c == '=' || c == ':') capture_ = 2;
    else if (name_len_ < sizeof name_) name_[name_len_++] = c;
    else name_len_ = 0xff;  // longer than any label
  } else if (capture_ == 2) {
    if (pattern_len_ + 1u < sizeof pattern_) pattern_[pattern_len_++] = c;
    else pattern_len_ = 0xff;
  }
}

// The end of a line: a filter line decides the rest of its section (ucs_config_parse_set_section_info:
// once skipped, a section stays skipped).
void ConfScan::line_end() {
  static const char *const kLabels[] = {"CPU vendor", "CPU model", "DMI product name"};
  const uint8_t what = capture_;
  capture_ = 0;
  if (what != 2 || skip_ || name_len_ == 0xff) return;
  size_t n = name_len_;
  while (n && is_blank(name_[n - 1])) n--;
  int label = -1;
  for (int l = 0; l < 3 && label < 0; l++) {
    size_t k = 0;
    while (k < n && kLabels[l][k] == name_[k]) k++;
    if (k == n && !kLabels[l][k]) label = l;
  }
  if (label < 0) return;
  if (pattern_len_ == 0xff) {  // a pattern longer than the buffer: not told
    section_unsure_ = true;
    return;
  }
  size_t e = pattern_len_, b = 0;
  for (size_t k = 1; k < e; k++)
    if (pattern_[k] == ';' && is_blank(pattern_[k - 1])) e = k;
  while (b < e && is_blank(pattern_[b])) b++;
  while (e > b && is_blank(pattern_[e - 1])) e--;
  pattern_[e] = '\0';
  const int match = filter(filter_ctx, label, pattern_ + b);
  if (match == 0) skip_ = true;
  else if (match < 0) section_unsure_ = true;
}

}  // namespace ucxtls
