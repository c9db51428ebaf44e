// A UCX build read from its files (ucx_build.h read_ucx_build): nothing of it is loaded or run.
// What the old loading helper asked UCX (its version, the transports its libuct and modules
// register, the modules it loads and why one does not) is read as readelf and lddtree read it.
#include <elf.h>
#include <fnmatch.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>

#include "ld_search.h"
#include "ucx_build.h"
#include "ucx_conf.h"
#include "ucx_read.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

const size_t kTlNameMax = 10;  // UCT_TL_NAME_MAX (uct/api/uct.h): a transport's name is a char[10] at its start

std::string base_name(const std::string &p) {
  size_t k = p.rfind('/');
  return k == std::string::npos ? p : p.substr(k + 1);
}

ReadAt reader(Root &root, int fd) {
  Root *r = &root;
  return [r, fd](void *b, size_t n, off_t off) { return read_at(*r, fd, b, n, off); };
}

// Reads the ELF object at path (inside the root), symbols too.
bool read_object(Root &root, const std::string &path, ElfObject *o, std::string *why) {
  int e = 0;
  const int fd = open_regular(root, path, nullptr, &e);
  if (fd < 0) return *why = e == EINVAL ? "not a regular file" : strerror(e), false;
  const bool ok = read_elf(reader(root, fd), o, true, why);
  close(fd);
  if (o->symbols_cut) root.note("its limit on symbol names read, in " + root.shown + path);
  return ok;
}

// Adds the transports an object defines (elf_transports) to the build.
void add_transports(Root &root, const LoadedObject &o, UcxBuild *b) {
  int e = 0;
  const int fd = open_regular(root, o.path, nullptr, &e);
  if (fd < 0) return;
  for (const std::string &tl : elf_transports(reader(root, fd), o.elf))
    if (!b->has(tl)) b->transports.push_back(tl), b->objects.push_back(o.path);
  close(fd);
}

bool defines(const ElfObject &o, const char *name, const ElfSymbol **sym = nullptr) {
  for (const ElfSymbol &s : o.defined)
    if (s.name == name) return sym && (*sym = &s), true;
  return false;
}

}  // namespace

std::vector<std::string> elf_transports(const ReadAt &read, const ElfObject &o) {
  std::vector<std::string> out;
  for (const ElfSymbol &s : o.defined) {
    const size_t len = s.name.size();
    if (s.type != STT_OBJECT || len < 8 || s.name.compare(0, 4, "uct_") || s.name.compare(len - 3, 3, "_tl")) continue;
    const std::string tl = s.name.substr(4, len - 7);
    if (tl.size() >= kTlNameMax || s.size < kTlNameMax) continue;
    if (elf_bytes(read, o, s.value, tl.size() + 1) != tl + '\0') continue;
    if (std::find(out.begin(), out.end(), tl) == out.end()) out.push_back(tl);
  }
  return out;
}

std::string compiled_module_dir(const ReadAt &read, const ElfObject &libucs) {
  std::string dir;
  for (uint64_t name : find_text(read, libucs, "MODULE_DIR")) {
    const uint64_t at = relocation_to(read, libucs, name);  // the table entry's name pointer
    const uint64_t value = at ? relocated_pointer(read, libucs, at + 8) : 0;
    if (value && elf_string(read, libucs, value, 4096, &dir) && !dir.empty()) return dir;
    dir.clear();
  }
  return dir;
}

bool module_enabled(const std::string &modules, const std::string &name) {
  if (modules == "all") return true;
  const bool negate = !modules.empty() && modules[0] == '^';
  bool found = false;
  for (const std::string &p : split(modules.c_str() + (negate ? 1 : 0), ","))
    found = found || fnmatch(p.c_str(), name.c_str(), 0) == 0;
  return negate ? !found : found;
}

std::string module_extension(const std::string &libucs_name) {
  const size_t dot = libucs_name.find('.');
  return dot == std::string::npos ? ".so" : libucs_name.substr(dot);
}

bool module_name(const std::string &file, const std::string &framework, const std::string &ext, std::string *name) {
  const std::string prefix = "lib" + framework + "_";
  if (file.size() <= prefix.size() + ext.size() || file.compare(0, prefix.size(), prefix) ||
      file.compare(file.size() - ext.size(), ext.size(), ext))
    return false;
  *name = file.substr(prefix.size(), file.size() - ext.size() - prefix.size());
  return name->find('_') == std::string::npos;
}

bool UcxBuild::has(const std::string &tl) const {
  return std::find(transports.begin(), transports.end(), tl) != transports.end();
}

bool conf_value(const std::string &text, const char *name, std::string *value) {
  // The library's own reading of ucx.conf (shim/ucx_conf.h), asked for this key's value.
  char buf[4096];
  ConfScan scan;
  scan.key = name;
  scan.value = buf;
  scan.value_cap = sizeof buf;
  scan.feed(text.data(), text.size());
  scan.finish();
  if (scan.found) *value = std::string(buf, scan.value_len);
  return scan.found;
}

std::string ucx_setting(BuildPlace &place, const std::string &libucs, const char *name, std::string *from) {
  from->clear();
  const std::string key = std::string(name) + "=";
  for (const std::string &e : place.env)  // the environment wins over every file (parser.c:1937)
    if (!e.compare(0, key.size(), key)) return *from = "environment", e.substr(key.size());
  // ucs_config_parse_config_files (src/ucs/config/parser.c:2001 of v1.22.0): each file in this
  // order overrides the ones before it.
  std::vector<std::string> files = {"/etc/ucx/ucx.conf"};
  if (!libucs.empty()) files.push_back(dir_of(libucs) + "/../etc/ucx/ucx.conf");
  for (const char *var : {"HOME", "UCX_CONFIG_DIR"})
    for (const std::string &e : place.env)
      if (!e.compare(0, strlen(var) + 1, std::string(var) + "=")) files.push_back(e.substr(strlen(var) + 1) + "/ucx.conf");
  files.push_back("ucx.conf");  // the working directory's
  std::string value;
  for (const std::string &f : files) {
    std::string text;
    if (!read_small(*place.root, f, 1 << 20, &text)) continue;
    std::string v;
    if (conf_value(text, name, &v)) value = v, *from = f;
  }
  return value;
}

namespace {
bool read_build_files(BuildPlace &place, const std::string &libucp, UcxBuild *b, std::string *err);
}  // namespace

bool read_ucx_build(BuildPlace &place, const std::string &libucp, UcxBuild *b, std::string *err) {
  Root &root = *place.root;
  const bool read = read_build_files(place, libucp, b, err);
  if (root.reached.empty()) return read;
  // A bound stopped the reading: what the build seems to lack may be what was not read, and
  // what else could not be told may be that too: one line says why.
  b->bound = "doctor's bound on reading was reached: " + root.reached;
  b->unread = {"what it serves: " + b->bound};
  if (!read) *err = "could not tell what the UCX at " + root.shown + libucp + " is: " + b->bound;
  return read;
}

namespace {
bool read_build_files(BuildPlace &place, const std::string &libucp, UcxBuild *b, std::string *err) {
  Root &root = *place.root;
  LdSearch ld;
  std::vector<LoadedObject> objs(1);
  objs[0].name = objs[0].path = libucp;
  std::string why;
  if (!read_object(root, libucp, &objs[0].elf, &why)) return *err = root.shown + libucp + ": " + why, false;
  ld.is64 = objs[0].elf.is64, ld.machine = objs[0].elf.machine;
  ld.init(&root, place.env, place.secure, place.exe);
  ld.mapped = place.mapped;
  const ElfSymbol *version = nullptr;
  if (!defines(objs[0].elf, "ucp_get_version_string", &version))
    return *err = "the UCX at " + root.shown + libucp + ": it is not a UCX libucp: it has no ucp_get_version_string", false;
  {
    int e = 0;
    const int fd = open_regular(root, libucp, nullptr, &e);
    if (fd >= 0) b->version = returned_string(reader(root, fd), objs[0].elf, *version), close(fd);
  }
  const ElfObject &ucp = objs[0].elf;
  if (b->version.empty() && ucp.is64 && (ucp.machine == EM_X86_64 || ucp.machine == EM_AARCH64))
    b->unread.push_back("its version (ucp_get_version_string's body is not a plain `return \"...\"`)");
  else if (b->version.empty())  // 32-bit, or a machine whose code doctor does not decode
    b->unread.push_back("its version (doctor decodes x86-64 and AArch64 code; this is a " + std::string(ucp.is64 ? "64" : "32") +
                        "-bit object of ELF machine " + std::to_string(ucp.machine) + ")");
  if (b->version.empty()) b->untold = b->unread.back();
  const std::string missing = ld.load_closure(&objs, 0, true);
  if (!missing.empty()) b->unread.push_back("part of what it needs: " + missing);
  // libucs: the first object that defines ucs_status_string, in ld.so's lookup order (breadth first).
  int ucs = -1;
  for (size_t i = 0; i < objs.size() && ucs < 0; i++)
    if (defines(objs[i].elf, "ucs_status_string")) ucs = int(i);
  for (const LoadedObject &o : objs) add_transports(root, o, b);
  if (ucs < 0) {
    b->unread.push_back("its modules (no libucs found beside it)");
    return true;
  }
  b->libucs = objs[size_t(ucs)].path;
  // The module directories (src/ucs/sys/module.c of v1.22.0: ucs_module_loader_add_dl_dir, lines
  // 60-116, <dir of libucs>/ucx; ucs_module_loader_add_install_dir, 119-123, UCX_MODULE_DIR, whose
  // default is compiled in), and the extension: libucs's own name from its first '.' (lines 86-91).
  const std::string ucs_name = base_name(b->libucs);
  const std::string ext = module_extension(ucs_name);
  std::string from;
  std::string module_dir = ucx_setting(place, b->libucs, "UCX_MODULE_DIR", &from);
  if (module_dir.empty()) {
    int e = 0;
    const int fd = open_regular(root, b->libucs, nullptr, &e);
    if (fd >= 0) module_dir = compiled_module_dir(reader(root, fd), objs[size_t(ucs)].elf), close(fd);
  }
  std::vector<std::string> dirs = {dir_of(b->libucs) + "/ucx"};
  if (!module_dir.empty()) dirs.push_back(module_dir);
  else b->unread.push_back("the module directory compiled into " + ucs_name);
  std::string modules = ucx_setting(place, b->libucs, "UCX_MODULES", &from);
  if (from.empty()) modules = "all";
  for (const std::string &d : dirs) b->module_dir += (b->module_dir.empty() ? "" : ":") + root.shown + d;
  // Frameworks: uct's modules (lib<framework>_<name><ext>, no '_' in name: module.c:326-336), and
  // each loaded module's own framework (uct_ib loads libuct_ib_<name>: UCS_MODULE_FRAMEWORK_LOAD in
  // src/uct/ib/base/ib_md.c). A name loaded from one directory is not loaded again (loaded_set).
  std::vector<std::pair<std::string, int>> frameworks = {{"uct", ucs}};
  std::vector<std::string> loaded;
  for (size_t f = 0; f < frameworks.size() && f < 32 && !root.out_of_bounds(); f++) {
    for (const std::string &d : dirs) {
      std::vector<std::string> names;
      if (!list_dir(root, d, &names)) continue;
      for (const std::string &n : names) {
        std::string name;
        if (!module_name(n, frameworks[f].first, ext, &name)) continue;
        const std::string base = n.substr(0, n.size() - ext.size());
        if (std::find(loaded.begin(), loaded.end(), base) != loaded.end()) continue;
        if (root.out_of_bounds()) break;  // read_ucx_build says so: no module of the rest is named
        UcxModule m;
        m.path = root.shown + d + "/" + n;
        // The module and what it needs are appended to what is loaded already (which counts as
        // found), and taken off again after: never a copy of the whole load per module name.
        const size_t before = objs.size();
        LoadedObject o;
        o.name = o.path = d + "/" + n, o.parent = frameworks[f].second;
        if (!module_enabled(modules, name)) {
          m.state = "not-loaded", m.why = "UCX_MODULES=" + modules + " (" + from + ") leaves it out";
        } else if (!read_object(root, o.path, &o.elf, &why)) {
          m.state = "error", m.why = why;
        } else if (o.elf.is64 != objs[0].elf.is64 || o.elf.machine != objs[0].elf.machine) {
          m.state = "error", m.why = "it is an ELF object of another class or machine";
        } else {
          objs.push_back(std::move(o));
          const std::string miss = ld.load_closure(&objs, int(before), true);
          m.state = miss.empty() ? "loaded" : "error", m.why = miss;
        }
        if (root.out_of_bounds()) m.state = "error", m.why = "could not tell: doctor's bound on reading was reached: " + root.reached;
        b->modules.push_back(m);
        if (m.state != "loaded") {
          objs.resize(before);
          continue;
        }
        loaded.push_back(base);
        for (size_t i = before; i < objs.size(); i++) add_transports(root, objs[i], b);
        objs.resize(before + 1);  // the module itself: its own framework is loaded from it
        frameworks.push_back({frameworks[f].first + "_" + name, int(before)});
      }
    }
  }
  return true;
}
}  // namespace

bool program_libucp(BuildPlace &place, const std::string &program, std::string *libucp, std::string *err) {
  Root &root = *place.root;
  std::vector<LoadedObject> objs(1);
  objs[0].name = objs[0].path = program;
  std::string why, text;
  if (!read_object(root, program, &objs[0].elf, &why)) {
    if (read_small(root, program, 2, &text) && text == "#!")
      return *err = "could not tell which UCX " + program + " runs: it is a script, and doctor runs nothing to ask it; "
                    "name the build with --ucx PATH", false;
    return *err = "could not tell which UCX " + program + " runs (" + why + "): name the build with --ucx PATH", false;
  }
  LdSearch ld;
  ld.is64 = objs[0].elf.is64, ld.machine = objs[0].elf.machine;
  ld.init(&root, place.env, place.secure, program);
  for (const std::string &n : objs[0].elf.needed) {
    if (!is_libucp_name(n.c_str())) continue;
    std::string path;
    if (!ld.find(n, objs, 0, &path))
      return *err = root.reached.empty() ? "ld.so finds no " + n + " for " + program
                                         : "could not tell which " + n + " ld.so gives " + program + ": doctor's bound on reading was reached: " + root.reached,
             false;
    return *libucp = path, true;
  }
  return *err = "could not tell which UCX " + program + " runs: it needs no libucp; name the build with --ucx PATH", false;
}

}  // namespace cli
}  // namespace ucxtls
