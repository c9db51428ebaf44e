// The pure part of ucxtls-oci-hook: the OCI state and config.json read with nlohmann-json (its
// non-throwing parse; this code is built without exceptions, so a throw would abort, and none is
// reachable from the calls below), the device rule, and /etc/ld.so.preload read as glibc reads it.
#include "oci_hook_core.h"

#include <string.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "../cli/root_fs.h"

namespace ucxtls {

namespace {

using nlohmann::json;

// The document, or false when it is not one JSON value or nests deeper than kJsonMaxDepth (what is
// deeper is not even kept while parsing).
bool parse_document(const char *text, size_t len, json *out) {
  bool too_deep = false;
  json::parser_callback_t keep = [&too_deep](int depth, json::parse_event_t, json &) {
    if (depth > kJsonMaxDepth) too_deep = true;
    return !too_deep;
  };
  *out = json::parse(text, text + len, keep, /*allow_exceptions=*/false);
  return !out->is_discarded() && !too_deep;
}

// obj[key] when obj is an object that has it, else nullptr.
const json *member(const json *obj, const char *key) {
  if (!obj || !obj->is_object()) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() ? nullptr : &*it;
}

// A string without NUL bytes (paths and environment entries cannot hold one).
bool text_of(const json *v, std::string *out) {
  if (!v || !v->is_string()) return false;
  const std::string &s = v->get_ref<const std::string &>();
  if (s.find('\0') != std::string::npos) return false;
  *out = s;
  return true;
}

// Each element of an array (none when `arr` is not one).
template <class Visit>
void each_element(const json *arr, Visit visit) {
  if (arr && arr->is_array())
    for (const json &e : *arr) visit(e);
}

}  // namespace

bool read_container_state(const char *text, size_t len, ContainerState *out) {
  json doc;
  if (!parse_document(text, len, &doc)) return false;
  text_of(member(&doc, "id"), &out->id);
  return text_of(member(&doc, "bundle"), &out->bundle) && !out->bundle.empty();
}

bool read_container_spec(const char *text, size_t len, ContainerSpec *out) {
  json doc;
  if (!parse_document(text, len, &doc)) return false;
  if (!text_of(member(member(&doc, "root"), "path"), &out->root) || out->root.empty()) return false;
  std::string s;
  each_element(member(member(&doc, "process"), "env"), [&](const json &e) {
    if (text_of(&e, &s)) out->env.push_back(s);
  });
  each_element(member(member(&doc, "linux"), "devices"), [&](const json &d) {
    if (text_of(member(&d, "path"), &s)) out->devices.push_back(s);
  });
  each_element(member(&doc, "mounts"), [&](const json &m) {
    ContainerMount cm;
    if (!text_of(member(&m, "destination"), &cm.destination)) return;
    text_of(member(&m, "type"), &cm.type);
    text_of(member(&m, "source"), &cm.source);
    each_element(member(&m, "options"), [&](const json &o) {
      if (!text_of(&o, &s)) return;
      cm.bind = cm.bind || s == "bind" || s == "rbind";
      cm.recursive = cm.recursive || s == "rbind";
      cm.copyup = cm.copyup || s == "tmpcopyup";
    });
    out->mounts.push_back(cm);
  });
  each_element(member(member(&doc, "linux"), "maskedPaths"), [&](const json &p) {
    if (text_of(&p, &s)) out->masked.push_back(s);
  });
  return true;
}

namespace {

bool digits_after(const std::string &s, const char *prefix) {
  const size_t n = strlen(prefix);
  return s.size() > n && !s.compare(0, n, prefix) && s.find_first_not_of("0123456789", n) == std::string::npos;
}

bool is_ucxtls(const std::string &name) { return files::base_name(name) == "libucxtls.so"; }

// The separators of /etc/ld.so.preload (elf/rtld.c: strsep (&runp, ": \t\n")).
bool glibc_separator(char c) { return c == ' ' || c == '\t' || c == '\n' || c == ':'; }

}  // namespace

bool is_gpu_device_node(const std::string &path) {
  return digits_after(path, "/dev/nvidia") || path == "/dev/kfd" || digits_after(path, "/dev/dri/renderD");
}

std::string rootfs_path(const std::string &bundle, const std::string &root) {
  if (!root.empty() && root[0] == '/') return root;
  return bundle + (bundle.empty() || bundle.back() == '/' ? "" : "/") + root;
}

bool preload_list_has_ucxtls(const std::string &list) {
  for (size_t i = 0, j; i < list.size(); i = j + 1) {
    j = std::min(list.find_first_of(" :", i), list.size());  // the LD_PRELOAD variable's: strcspn (p, " :")
    if (is_ucxtls(list.substr(i, j - i))) return true;
  }
  return false;
}

std::string env_value(const std::vector<std::string> &env, const char *name) {
  const char *value = files::env_lookup(env, name, files::Dup::last);  // as ld.so reads LD_PRELOAD
  return value ? value : "";
}

std::vector<std::string> glibc_preload_names(const std::string &file) {
  std::vector<std::string> names;
  const size_t size = file.size();
  if (size == 0) return names;  // _dl_sysdep_read_whole_file maps nothing for an empty file
  std::string f = file;
  // "Eliminate comments": memchr from the start each time, over what `rest` still counts.
  size_t rest = size;
  while (rest > 0) {
    const void *hit = memchr(&f[0], '#', rest);
    if (!hit) break;
    size_t c = size_t(static_cast<const char *>(hit) - &f[0]);
    rest -= c;
    do
      f[c] = ' ';
    while (--rest > 0 && f[++c] != '\n');
  }
  // A last name without a separator after it is loaded on its own, up to a NUL in it.
  size_t problem = size, main_end;  // the split covers [0, main_end), ending at a NUL
  bool has_problem = !glibc_separator(f[size - 1]);
  if (has_problem) {
    while (problem > 0 && !glibc_separator(f[problem - 1])) problem--;
    main_end = problem > 0 ? problem - 1 : 0;
  } else {
    main_end = size - 1;
  }
  if (!has_problem || problem > 0) {
    size_t nul = f.find('\0');
    if (nul < main_end) main_end = nul;
    size_t i = 0;
    while (i <= main_end) {
      size_t j = i;
      while (j < main_end && !glibc_separator(f[j])) j++;
      if (j > i) names.push_back(f.substr(i, j - i));
      i = j + 1;
    }
  }
  if (has_problem) {
    std::string last = f.substr(problem);
    names.push_back(last.substr(0, last.find('\0')));
  }
  return names;
}

PreloadPlan plan_preload_file(const std::string &existing, const std::string &library) {
  const std::vector<std::string> names = glibc_preload_names(existing);
  for (const std::string &n : names)
    if (is_ucxtls(n)) return {PreloadPlan::kAlreadyListed, ""};
  std::string text = existing;
  if (!text.empty() && text.back() != '\n') text.push_back('\n');
  text += library + "\n";
  // ld.so must read our line as its last name, and no name the image's file did not give already
  // (a longer file lets glibc's comment loop blank more of a later comment, never less).
  std::vector<std::string> after = glibc_preload_names(text);
  size_t kept = 0;
  for (size_t i = 0; i + 1 < after.size(); i++) {
    while (kept < names.size() && names[kept] != after[i]) kept++;
    if (kept++ >= names.size()) break;
  }
  if (after.empty() || after.back() != library || kept > names.size())
    return {PreloadPlan::kRefuse, existing.find('\0') != std::string::npos
                                      ? "the image's /etc/ld.so.preload holds a NUL byte (ld.so reads no name after it)"
                                      : "ld.so would not read a line appended to the image's /etc/ld.so.preload"};
  return {PreloadPlan::kWrite, text};
}

bool split_container_path(const std::string &path, std::vector<std::string> *parts) {
  *parts = files::path_parts(path);
  for (const std::string &part : *parts)
    if (part == "." || part == "..") return false;
  return !path.empty() && path[0] == '/' && !parts->empty();
}

bool mount_hides(const std::string &destination, const std::string &path) {
  std::vector<std::string> d, p;
  if (!split_container_path(destination, &d)) return destination.find_first_not_of('/') == std::string::npos;
  if (!split_container_path(path, &p) || d.size() > p.size()) return false;
  for (size_t i = 0; i < d.size(); i++)
    if (d[i] != p[i]) return false;
  return true;
}

MountView mount_view(const ContainerMount &m) {
  if (m.bind) return MountView::kSource;
  if (m.type == "tmpfs") return m.copyup ? MountView::kCopy : MountView::kNoLinks;
  if (m.type == "devpts" || m.type == "mqueue" || m.type == "cgroup" || m.type == "cgroup2") return MountView::kNoLinks;
  if (m.type == "sysfs") return MountView::kLinksInside;
  if (m.type == "proc") return MountView::kProc;
  return MountView::kUnknown;
}

bool is_process_dir(const std::string &name) {
  return name == "self" || name == "thread-self" || (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos);
}

}  // namespace ucxtls
