// The ucx.conf scanner: pure (see ucx_conf.h).
#include "ucx_conf.h"

namespace ucxtls {

// ucx.conf as UCX's INI reader (inih, with multi-line values and a UTF-8 BOM allowed) reads it:
// a line is an assignment of UCX_TLS when its key, after leading blanks, is exactly UCX_TLS
// followed by blanks and '=' (or ':'). Comment lines ('#', ';') and [section] lines never are, and
// neither is an indented line that follows a name=value line of the same section: inih takes it
// as the continuation of that value.
void ConfScan::feed(const char *p, size_t n) {
  static const char key[] = "UCX_TLS";
  constexpr uint8_t kKeyLength = sizeof key - 1;
  const uint8_t kLineStart = 0, kKey = 1, kAfterKey = 2, kSkip = 3, kName = 4, kBom = 5;
  for (size_t i = 0; i < n && !found; i++, offset++) {
    const char c = p[i];
    const bool blank = c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
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
        else if (c == '[') prev_name = false, state = kSkip;
        else if (c == key[0]) state = kKey, matched = 1;
        else state = kName, i--, offset--;  // read this byte again as part of another name
        break;
      case kKey:
        if (matched == kKeyLength) {  // the whole key: what follows it decides
          if (c == '=' || c == ':') found = true;
          else if (c == ' ' || c == '\t') state = kAfterKey;
          else state = kName, i--, offset--;
        } else if (c == key[matched]) {
          matched++;
        } else {
          state = kName, i--, offset--;
        }
        break;
      case kAfterKey:
        if (c == '=' || c == ':') found = true;
        else if (c != ' ' && c != '\t') state = kName, i--, offset--;
        break;
      case kName:  // some other name: a '=' or ':' on this line makes it a name=value line
        if (c == '=' || c == ':') prev_name = true, state = kSkip;
        break;
      default:
        break;
    }
    if (c == '\n' && !found) state = kLineStart, indented = false;
  }
}

}  // namespace ucxtls
