// The template: pure functions only (see template.h).
#include "template.h"

#include <string.h>

#include "edit_distance.h"

namespace ucxtls {

const char *rdma_transports(Rdma r) {
  static const char kByRdma[][16] = {"", "rc", "rc_x,rc,dc_x,dc"};  // by Rdma: none, rc, mlx5
  return kByRdma[int(r)];
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

// One UCX_TLS entry: a placeholder, or [\]name[:aux] (UCX's allow-list item syntax).
bool entry_valid(const char *p, size_t n) {
  if (placeholder_at(p, n) != kPhNone) return true;
  entry_name(p, n, &p, &n);
  for (size_t i = 0; i < n; i++)
    if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9') || p[i] == '_'))
      return false;
  return n > 0;
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
  if (strchr(t, ' ') || strchr(t, '\t')) {
    *why = "contains a space (UCX does not trim entries: \" cuda_copy\" matches nothing)";
    return false;
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
  Text v(out, cap);
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
    entry ? v.add(entry) : v.add(e, n);
    first = false;
  }
  return !v.truncated;
}

void describe_left_out(const char *value, Family f, Text &t) {
  if (!value || value[0] == '^' || !strcmp(value, kAllTransports)) return;
  const char *const wanted[] = {"sm", "self", "tcp", ipc_transport(f), family_transport(f, Role::gdr)};
  bool first = true;
  for (const char *w : wanted) {
    bool named = !*w;  // the family has no such transport
    Items items(value);
    const char *e;
    size_t n;
    while (!named && items.next(&e, &n)) {
      entry_name(e, n, &e, &n);
      named = names_overlap(e, n, w, strlen(w));
    }
    if (named) continue;
    t.add(first ? "" : ", ").add(w);
    first = false;
  }
}

}  // namespace ucxtls
