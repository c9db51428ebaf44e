// UCX's settings as a release reads them (ucx_read.h): the environment first, then each ucx.conf
// in UCX's order, read by the library's own scanner with the release's section filters; the
// allow list's parse; the release's rules from its version.
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "ucx_conf.h"
#include "ucx_read.h"
#include "util.h"

namespace ucxtls {
namespace cli {

bool allow_list_valid(const std::string &modules) {
  const std::vector<std::string> names = split(modules.c_str() + (!modules.empty() && modules[0] == '^'), ",");
  return names.empty() || names[0] != "all" || names.size() == 1;
}

int ucx_minor(const std::string &version) {
  int major = 0, minor = 0;
  if (sscanf(version.c_str(), "%d.%d", &major, &minor) != 2 || major < 0 || minor < 0) return -1;
  return major > 1 ? 99 : major < 1 ? 0 : minor;  // a 0.x is older than any rule here
}

namespace {

// UCX's ucs_cpu_vendor_name (src/ucs/arch/cpu.c) for this machine, from CPUID's vendor string
// (src/ucs/arch/x86_64/cpu.c ucs_arch_get_cpu_vendor); "" where doctor cannot tell.
std::string cpu_vendor_name() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return "";
  char v[13] = {};
  memcpy(v, &b, 4), memcpy(v + 4, &d, 4), memcpy(v + 8, &c, 4);
  if (!strcmp(v, "GenuineIntel")) return "Intel";
  if (!strcmp(v, "AuthenticAMD")) return "AMD";
  if (!strcmp(v, "CentaurHauls") || !strcmp(v, "  Shanghai  ")) return "Zhaoxin";
  return "Unknown";  // UCS_VALUE_UNKNOWN_STR
#else
  return "";
#endif
}

// ucs_config_parse_check_filter: fnmatch(pattern, this machine's name, FNM_CASEFOLD). The vendor
// is told; a CPU model or DMI product name only by a pattern that matches anything.
int filter_matches(void *, int label, const char *pattern) {
  if (fnmatch(pattern, "", FNM_CASEFOLD) == 0 && fnmatch(pattern, "any name", FNM_CASEFOLD) == 0) return 1;
  if (label != 0) return -1;
  const std::string vendor = cpu_vendor_name();
  return vendor.empty() ? -1 : fnmatch(pattern, vendor.c_str(), FNM_CASEFOLD) == 0;
}

}  // namespace

bool conf_value(const std::string &text, const char *name, std::string *value, bool filters, bool *unsure) {
  // The library's own reading of ucx.conf (shim/ucx_conf.h), asked for this key's value.
  char buf[4096];
  ConfScan scan;
  scan.key = name;
  scan.value = buf;
  scan.value_cap = sizeof buf;
  if (filters) scan.filter = filter_matches;
  scan.feed(text.data(), text.size());
  scan.finish();
  if (scan.found) *value = std::string(buf, scan.value_len);
  if (unsure) *unsure = scan.found && scan.unsure;
  return scan.found;
}

namespace {

// The value of a UCX setting from the ucx.conf files, as one release reads them (parser.c
// ucs_config_parse_config_files: each file overrides the ones before it): <libdir>/../etc/ucx.conf
// up to 1.16, <libdir>/../etc/ucx/ucx.conf and section filters from 1.17. getenv's HOME and
// UCX_CONFIG_DIR: the first of the environment.
std::string conf_setting(BuildPlace &place, const std::string &libucs, const char *name, bool v17, std::string *from,
                         bool *unsure) {
  std::vector<std::string> files = {"/etc/ucx/ucx.conf"};
  if (!libucs.empty()) files.push_back(dir_of(libucs) + (v17 ? "/../etc/ucx/ucx.conf" : "/../etc/ucx.conf"));
  for (const char *var : {"HOME", "UCX_CONFIG_DIR"})
    if (const char *dir = env_lookup(place.env, var, Dup::first)) files.push_back(std::string(dir) + "/ucx.conf");
  files.push_back("ucx.conf");  // the working directory's
  std::string value;
  for (const std::string &f : files) {
    std::string text, v;
    bool u = false;
    if (!read_small(*place.root, f, 1 << 20, &text)) continue;
    if (conf_value(text, name, &v, v17, &u)) value = v, *from = f, *unsure = u;
  }
  return value;
}

}  // namespace

std::string ucx_setting(BuildPlace &place, const std::string &libucs, const char *name, std::string *from, int minor,
                        std::string *unsure) {
  from->clear();
  if (unsure) unsure->clear();
  if (const char *env = env_lookup(place.env, name, Dup::first))  // the environment wins over every file (parser.c:1937)
    return *from = "environment", env;
  bool u = false;
  std::string value = conf_setting(place, libucs, name, minor < 0 || minor >= 17, from, &u);
  if (minor < 0) {  // both releases' files and filters: they must agree
    std::string old_from;
    bool old_u = false;
    const std::string old = conf_setting(place, libucs, name, false, &old_from, &old_u);
    if (old != value || old_from.empty() != from->empty()) u = true;
  }
  if (u && unsure)
    *unsure = std::string(name) + " (" + (from->empty() ? std::string("ucx.conf") : *from) +
              (minor < 0 ? ": its version is unknown, and UCX 1.16 and 1.17 read ucx.conf files differently)"
                         : ": a section filter on the CPU model or DMI product name)");
  return value;
}

}  // namespace cli
}  // namespace ucxtls
