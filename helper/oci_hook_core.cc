// The pure part of ucxtls-oci-hook: a small JSON reader (enough for the OCI state and config.json,
// strict about syntax), the device rule, and the new /etc/ld.so.preload text.
#include "oci_hook_core.h"

#include <string.h>

namespace ucxtls {

namespace {

const int kMaxDepth = 64;  // config.json nests a few levels; deeper is not a runtime's document

const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool read_hex4(const char *p, const char *end, unsigned *out) {
  if (end - p < 4) return false;
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int d = hex_digit(p[i]);
    if (d < 0) return false;
    v = v * 16 + (unsigned)d;
  }
  *out = v;
  return true;
}

void put_utf8(unsigned cp, std::string *out) {
  if (cp < 0x80) {
    out->push_back((char)cp);
  } else if (cp < 0x800) {
    out->push_back((char)(0xC0 | (cp >> 6)));
    out->push_back((char)(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back((char)(0xE0 | (cp >> 12)));
    out->push_back((char)(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back((char)(0x80 | (cp & 0x3F)));
  } else {
    out->push_back((char)(0xF0 | (cp >> 18)));
    out->push_back((char)(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back((char)(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back((char)(0x80 | (cp & 0x3F)));
  }
}

// A string starting at its opening quote: the position after the closing quote, or nullptr. With
// `out`, the decoded text (no NUL allowed in it).
const char *scan_string(const char *p, const char *end, std::string *out) {
  if (p >= end || *p != '"') return nullptr;
  for (p++; p < end; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"') return p + 1;
    if (c < 0x20) return nullptr;
    if (c != '\\') {
      if (out) out->push_back((char)c);
      continue;
    }
    if (++p >= end) return nullptr;
    const char *simple = strchr("\"\\/bfnrt", *p);
    if (*p && simple) {
      if (out) out->push_back("\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"]);
      continue;
    }
    unsigned cp;
    if (*p != 'u' || !read_hex4(p + 1, end, &cp)) return nullptr;
    p += 4;
    if (cp >= 0xD800 && cp < 0xDC00 && end - p >= 7 && p[1] == '\\' && p[2] == 'u') {
      unsigned low;
      if (read_hex4(p + 3, end, &low) && low >= 0xDC00 && low < 0xE000) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        p += 6;
      }
    }
    if (out) {
      if (cp == 0) return nullptr;
      put_utf8(cp, out);
    }
  }
  return nullptr;
}

const char *scan_number(const char *p, const char *end) {
  if (p < end && *p == '-') p++;
  if (p >= end) return nullptr;
  if (*p == '0') {
    p++;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end && *p >= '0' && *p <= '9') p++;
  } else {
    return nullptr;
  }
  if (p < end && *p == '.') {
    const char *digits = ++p;
    while (p < end && *p >= '0' && *p <= '9') p++;
    if (p == digits) return nullptr;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    const char *digits = p;
    while (p < end && *p >= '0' && *p <= '9') p++;
    if (p == digits) return nullptr;
  }
  return p;
}

const char *scan_value(const char *p, const char *end, int depth);

// An object or array starting at its bracket; each member or element passed to `visit` (a key
// span, empty for arrays, and the value span). Returns the position after the closing bracket.
template <class Visit>
const char *scan_container(const char *p, const char *end, int depth, Visit visit) {
  if (depth > kMaxDepth) return nullptr;
  const bool object = *p == '{';
  const char close = object ? '}' : ']';
  p = skip_ws(p + 1, end);
  if (p < end && *p == close) return p + 1;
  while (p < end) {
    JsonSpan key;
    if (object) {
      key.begin = p;
      if (!(p = scan_string(p, end, nullptr))) return nullptr;
      key.end = p;
      p = skip_ws(p, end);
      if (p >= end || *p != ':') return nullptr;
      p = skip_ws(p + 1, end);
    }
    JsonSpan value;
    value.begin = p;
    if (!(p = scan_value(p, end, depth + 1))) return nullptr;
    value.end = p;
    visit(key, value);
    p = skip_ws(p, end);
    if (p < end && *p == close) return p + 1;
    if (p >= end || *p != ',') return nullptr;
    p = skip_ws(p + 1, end);
  }
  return nullptr;
}

const char *scan_literal(const char *p, const char *end, const char *word) {
  size_t n = strlen(word);
  return (size_t)(end - p) >= n && memcmp(p, word, n) == 0 ? p + n : nullptr;
}

const char *scan_value(const char *p, const char *end, int depth) {
  if (p >= end) return nullptr;
  switch (*p) {
    case '{':
    case '[':
      return scan_container(p, end, depth, [](JsonSpan, JsonSpan) {});
    case '"':
      return scan_string(p, end, nullptr);
    case 't':
      return scan_literal(p, end, "true");
    case 'f':
      return scan_literal(p, end, "false");
    case 'n':
      return scan_literal(p, end, "null");
    default:
      return scan_number(p, end);
  }
}

}  // namespace

JsonSpan json_document(const char *text, size_t len) {
  const char *end = text + len, *p = skip_ws(text, end);
  JsonSpan v;
  const char *after = scan_value(p, end, 0);
  if (after && skip_ws(after, end) == end) {
    v.begin = p;
    v.end = after;
  }
  return v;
}

JsonSpan json_member(JsonSpan obj, const char *key) {
  JsonSpan found;
  if (!obj.ok() || *obj.begin != '{') return found;
  scan_container(obj.begin, obj.end, 0, [&](JsonSpan k, JsonSpan v) {
    std::string name;
    if (!found.ok() && scan_string(k.begin, k.end, &name) && name == key) found = v;
  });
  return found;
}

std::vector<JsonSpan> json_elements(JsonSpan arr) {
  std::vector<JsonSpan> out;
  if (arr.ok() && *arr.begin == '[') scan_container(arr.begin, arr.end, 0, [&](JsonSpan, JsonSpan v) { out.push_back(v); });
  return out;
}

bool json_string(JsonSpan v, std::string *out) {
  out->clear();
  return v.ok() && scan_string(v.begin, v.end, out) == v.end;
}

bool read_container_spec(const char *text, size_t len, ContainerSpec *out) {
  JsonSpan doc = json_document(text, len);
  if (!json_string(json_member(json_member(doc, "root"), "path"), &out->root) || out->root.empty()) return false;
  std::string s;
  for (JsonSpan e : json_elements(json_member(json_member(doc, "process"), "env")))
    if (json_string(e, &s)) out->env.push_back(s);
  for (JsonSpan d : json_elements(json_member(json_member(doc, "linux"), "devices")))
    if (json_string(json_member(d, "path"), &s)) out->devices.push_back(s);
  return true;
}

bool read_state_bundle(const char *text, size_t len, std::string *bundle) {
  return json_string(json_member(json_document(text, len), "bundle"), bundle) && !bundle->empty();
}

namespace {

bool digits_after(const std::string &s, const char *prefix) {
  size_t n = strlen(prefix);
  if (s.size() <= n || s.compare(0, n, prefix) != 0) return false;
  for (size_t i = n; i < s.size(); i++)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

}  // namespace

bool is_gpu_device_node(const std::string &path) {
  return digits_after(path, "/dev/nvidia") || path == "/dev/kfd" || digits_after(path, "/dev/dri/renderD");
}

std::string rootfs_path(const std::string &bundle, const std::string &root) {
  if (!root.empty() && root[0] == '/') return root;
  return bundle + (bundle.empty() || bundle.back() == '/' ? "" : "/") + root;
}

bool preload_list_has_ucxtls(const std::string &list) {
  size_t i = 0;
  while (i < list.size()) {
    size_t j = list.find_first_of(" \t\n:", i);
    if (j == std::string::npos) j = list.size();
    std::string name = list.substr(i, j - i);
    size_t slash = name.rfind('/');
    if ((slash == std::string::npos ? name : name.substr(slash + 1)) == "libucxtls.so") return true;
    i = j + 1;
  }
  return false;
}

std::string env_value(const std::vector<std::string> &env, const char *name) {
  std::string prefix = std::string(name) + "=";
  std::string value;
  for (const std::string &e : env)  // the last one wins, as execve's consumers read it
    if (e.compare(0, prefix.size(), prefix) == 0) value = e.substr(prefix.size());
  return value;
}

std::string preload_file_with(const std::string &existing, const std::string &library) {
  std::string out = existing;
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  return out + library + "\n";
}

bool split_container_path(const std::string &path, std::vector<std::string> *parts) {
  parts->clear();
  if (path.empty() || path[0] != '/') return false;
  size_t i = 1;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string part = path.substr(i, j - i);
    if (part == "." || part == "..") return false;
    if (!part.empty()) parts->push_back(part);
    i = j + 1;
  }
  return !parts->empty();
}

}  // namespace ucxtls
