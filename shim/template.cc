// The template and the transports it names: pure functions only (see template.h).
#include "template.h"

#include <string.h>

#include "edit_distance.h"

namespace ucxtls {

const char *family_name(Family f) {
  switch (f) {
    case Family::cuda: return "cuda";
    case Family::rocm: return "rocm";
    case Family::ze: return "ze";
    default: return "none";
  }
}

const char *copy_transport(Family f) {
  switch (f) {
    case Family::cuda: return "cuda_copy";
    case Family::rocm: return "rocm_copy";
    case Family::ze: return "ze_copy";
    default: return "";
  }
}

const char *ipc_transport(Family f) {
  switch (f) {
    case Family::cuda: return "cuda_ipc";
    case Family::rocm: return "rocm_ipc";
    default: return "";
  }
}

const char *rdma_transports(Rdma r) {
  switch (r) {
    case Rdma::mlx5: return "rc_x,rc,dc_x,dc";
    case Rdma::rc: return "rc";
    default: return "";
  }
}

const char kDefaultTemplate[] = "{rdma},{copy}";

namespace {

// The placeholders, in the order of their meaning: the family's copy and IPC transports, the
// node's RDMA transports.
enum Placeholder { kPhCopy, kPhIpc, kPhRdma, kPhCount, kPhNone = kPhCount };
const char *const kPlaceholders[kPhCount] = {"{copy}", "{ipc}", "{rdma}"};

int placeholder_at(const char *p, size_t n) {
  for (int i = 0; i < kPhCount; i++)
    if (strlen(kPlaceholders[i]) == n && !memcmp(p, kPlaceholders[i], n)) return i;
  return kPhNone;
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// One UCX_TLS entry: a placeholder, or [\]name[:aux] (UCX's allow-list item syntax).
bool entry_valid(const char *p, size_t n) {
  if (placeholder_at(p, n) != kPhNone) return true;
  size_t i = 0;
  if (i < n && p[i] == '\\') i++;
  size_t start = i;
  while (i < n && is_name_char(p[i])) i++;
  if (i == start) return false;
  if (i == n) return true;
  return n - i == 4 && !memcmp(p + i, ":aux", 4);
}

// A braced entry within two edits of a placeholder ("{rmda}"): the error names the one meant.
const char *const kMisspelt[kPhCount] = {
    "has a misspelt placeholder (did you mean {copy}?)",
    "has a misspelt placeholder (did you mean {ipc}?)",
    "has a misspelt placeholder (did you mean {rdma}?)",
};

const char *misspelt_placeholder(const char *p, size_t n) {
  if (n < 3 || p[0] != '{' || p[n - 1] != '}') return nullptr;
  for (int i = 0; i < kPhCount; i++)
    if (edit_distance(p, n, kPlaceholders[i], strlen(kPlaceholders[i])) <= 2) return kMisspelt[i];
  return nullptr;
}

static_assert(kTemplateMax == 3584, "kTooLong names it");
constexpr char kTooLong[] = "is longer than 3584 bytes";

}  // namespace

bool template_valid(const char *t, const char **why) {
  size_t len = strlen(t);
  if (len > kTemplateMax) {
    *why = kTooLong;
    return false;
  }
  for (size_t i = 0; i < len; i++) {
    if (t[i] == ' ' || t[i] == '\t') {
      *why = "contains a space (UCX does not trim entries: \" cuda_copy\" matches nothing)";
      return false;
    }
  }
  const char *p = t;
  if (*p == '^') p++;
  if (!*p) {
    *why = "names no transport";
    return false;
  }
  int entries = 0;
  bool has_all = false;
  Items items(p);
  const char *e;
  size_t n;
  while (items.next(&e, &n)) {
    if (n == 0) {
      *why = "has an empty entry (two commas, or a comma at an end)";
      return false;
    }
    if (!entry_valid(e, n)) {
      if ((*why = misspelt_placeholder(e, n))) return false;
      *why = "has an entry that is not a transport name (letters, digits, _), name:aux, {copy}, {ipc} or {rdma}";
      return false;
    }
    if (n == 3 && !memcmp(e, "all", 3)) has_all = true;
    entries++;
  }
  if (has_all && entries > 1) {
    *why = "mixes all with other transports (UCX rejects that)";
    return false;
  }
  return true;
}

bool template_uses_copy(const char *t) {
  return strstr(t, kPlaceholders[kPhCopy]) != nullptr || strstr(t, kPlaceholders[kPhIpc]) != nullptr;
}

bool template_uses_rdma(const char *t) { return strstr(t, kPlaceholders[kPhRdma]) != nullptr; }

bool compose(const char *t, Family f, Rdma r, char *out, size_t cap) {
  Text v;
  v.init(out, cap);
  const char *text[kPhCount] = {copy_transport(f), ipc_transport(f), rdma_transports(r)};
  const char *p = t;
  if (*p == '^') v.add("^"), p++;
  bool first = true;
  Items items(p);
  const char *e;
  size_t n;
  while (items.next(&e, &n)) {
    int ph = placeholder_at(e, n);
    const char *entry = ph == kPhNone ? nullptr : text[ph];
    if (entry && !*entry) continue;  // an empty placeholder disappears with its comma
    if (!first) v.add(",");
    if (entry)
      v.add(entry);
    else
      v.add(e, n);
    first = false;
  }
  return !v.truncated;
}

void entry_name(const char *e, size_t n, const char **name, size_t *len) {
  if (n && e[0] == '\\') e++, n--;
  if (n >= 4 && !memcmp(e + n - 4, ":aux", 4)) n -= 4;
  *name = e;
  *len = n;
}

namespace {

// Does the list name one of `names` (a NULL-terminated set), as written or with UCX's \ and :aux?
bool names_any(const char *value, const char *const *names) {
  Items items(value);
  const char *e;
  size_t n;
  while (items.next(&e, &n)) {
    entry_name(e, n, &e, &n);
    for (const char *const *k = names; *k; k++)
      if (strlen(*k) == n && !memcmp(*k, e, n)) return true;
  }
  return false;
}

}  // namespace

void describe_left_out(const char *value, Family f, Text &t) {
  if (!value || value[0] == '^' || !strcmp(value, kAllTransports)) return;
  static const char *const kSm[] = {"sm", "shm", "mm", "posix", "sysv", "cma", "knem", "xpmem", nullptr};
  static const char *const kSelf[] = {"self", nullptr};
  static const char *const kTcp[] = {"tcp", nullptr};
  const char *const ipc[] = {ipc_transport(f), family_name(f), nullptr};
  static const char *const kGdr[] = {"gdr_copy", "cuda", nullptr};
  struct Wanted {
    const char *name;
    const char *const *covered_by;
    bool applies;
  } const wanted[] = {{"sm", kSm, true},
                      {"self", kSelf, true},
                      {"tcp", kTcp, true},
                      {ipc_transport(f), ipc, *ipc_transport(f) != '\0'},
                      {"gdr_copy", kGdr, f == Family::cuda}};
  bool first = true;
  for (const Wanted &w : wanted) {
    if (!w.applies || names_any(value, w.covered_by)) continue;
    t.add(first ? "" : ", ").add(w.name);
    first = false;
  }
}

}  // namespace ucxtls
