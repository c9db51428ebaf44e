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
  for (size_t k = 1; k < n; k++)
    if (value[k] == ';' && is_blank(value[k - 1])) n = k;
  while (b < n && is_blank(value[b])) b++;
  while (n > b && is_blank(value[n - 1])) n--;
  for (size_t k = b; k < n; k++) value[k - b] = value[k];
  value_len = n - b;
  value[value_len] = '\0';
  state = kSkip;
}

// ucx.conf as UCX's INI reader (inih, with multi-line values and a UTF-8 BOM allowed) reads it:
// a line is an assignment of the key when its key, after leading blanks, is exactly the key
// followed by blanks and '=' (or ':'). Comment lines ('#', ';') and [section] lines never are, and
// neither is an indented line that follows a name=value line of the same section: inih takes it
// as the continuation of that value.
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
    switch (state) {
      case kLineStart:
        if (c == '\n') indented = false;
        else if (blank) indented = true;
        else if (c == '#' || c == ';') state = kSkip;
        else if (indented && prev_name) state = kSkip;  // a continuation of the previous value
        else if (c == '[') prev_name = false, in_section = true, state = kSkip;
        else if (c == key[0]) state = kKey, matched = 1;
        else state = kName, i--, offset--;  // read this byte again as part of another name
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
        if (c == '=' || c == ':') prev_name = true, state = kSkip;
        break;
      case kValue:
        if (c != '\n' && value_len + 1 < value_cap) value[value_len++] = c;
        break;
      default:
        break;
    }
    if (c == '\n') {
      finish();
      state = kLineStart, indented = false;
    }
  }
}

// The key's own name=value line: found; its value is read to the end of the line, when asked for.
void ConfScan::assigned() {
  found = true;
  prev_name = true;
  value_in_section = in_section;
  if (!value) return;
  value_len = 0;
  state = kValue;
}

}  // namespace ucxtls
