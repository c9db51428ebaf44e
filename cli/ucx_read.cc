// A UCX build read from its files (ucx_build.h read_build), as readelf and lddtree read them: its
// version, the transports its libuct and modules register, the modules UCX loads and why one does
// not. Nothing of it is loaded or run.
#include <ctype.h>
#include <elf.h>
#include <fnmatch.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "ld_search.h"
#include "ucx_build.h"
#include "ucx_read.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

const size_t kTlNameMax = 10;  // UCT_TL_NAME_MAX (uct/api/uct.h): a transport's name is a char[10] at its start

// Reads the ELF object at path (inside the root), symbols too.
bool read_object(Root &root, const std::string &path, ElfObject *o, std::string *why) {
  int e = 0;
  bool ok = false;
  if (!read_with(root, path, [&](const ReadAt &read) { ok = read_elf(read, o, true, why); }, &e))
    return *why = e == EINVAL || e == EISDIR ? "not a regular file" : strerror(e), false;
  if (o->symbols_cut) root.note("its limit on symbol names read, in " + root.shown + path);
  return ok;
}

// Adds the transports an object defines (elf_transports) to the build.
void add_transports(Root &root, const LoadedObject &o, UcxBuild *b) {
  read_with(root, o.path, [&](const ReadAt &read) {
    for (const std::string &tl : elf_transports(read, o.elf))
      if (!b->has(tl)) b->transports.push_back(tl), b->objects.push_back(o.path);
  });
}

bool defines(const ElfObject &o, const char *name, const ElfSymbol **sym = nullptr) {
  for (const ElfSymbol &s : o.defined)
    if (s.name == name) return sym && (*sym = &s), true;
  return false;
}

// The module list compiled into a framework's object (UCS_MODULE_FRAMEWORK_LOAD passes
// <framework>_MODULES, configure's ":ib:rdmacm:cma"): the NUL-delimited texts of that form in its
// loaded segments. None: it names none; several: could not tell.
std::vector<std::string> compiled_module_lists(const ReadAt &read, const ElfObject &o) {
  std::vector<std::string> out;
  for (const ElfObject::Load &l : o.loads) {
    std::string seg(size_t(std::min<uint64_t>(l.filesz, uint64_t(64) << 20)), '\0');
    if (seg.empty() || read(&seg[0], seg.size(), off_t(l.offset)) != ssize_t(seg.size())) continue;
    for (size_t at = seg.find(":"); at != std::string::npos && out.size() < 8; at = seg.find(':', at + 1)) {
      if (at == 0 || seg[at - 1] != '\0') continue;  // a text starts after a NUL
      size_t e = at;
      bool ok = true;
      while (ok && e < seg.size() && seg[e] == ':') {  // (":" [a-z][a-z0-9]*)+ then NUL
        size_t k = ++e;
        while (k < seg.size() && (islower((unsigned char)seg[k]) || (k > e && isdigit((unsigned char)seg[k])))) k++;
        ok = k > e;
        e = k;
      }
      if (!ok || e >= seg.size() || seg[e] != '\0') continue;
      const std::string list = seg.substr(at, e - at);
      if (std::find(out.begin(), out.end(), list) == out.end()) out.push_back(list);
    }
  }
  return out;
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
  const bool negate = !modules.empty() && modules[0] == '^';
  const std::vector<std::string> names = split(modules.c_str() + (negate ? 1 : 0), ",");
  if (!names.empty() && names[0] == "all") return true;  // "all" and "^all" alike: UCS_CONFIG_ALLOW_LIST_ALLOW_ALL
  bool found = false;
  for (const std::string &p : names) found = found || fnmatch(p.c_str(), name.c_str(), 0) == 0;
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

bool read_with(Root &root, const std::string &path, const std::function<void(const ReadAt &)> &use, int *err) {
  int e = 0;
  const int fd = open_regular(root, path, nullptr, &e);
  if (err) *err = e;
  if (fd < 0) return false;
  Root *r = &root;
  use([r, fd](void *b, size_t n, off_t off) { return read_at(*r, fd, b, n, off); });
  close(fd);
  return true;
}

bool UcxBuild::has(const std::string &tl) const {
  return std::find(transports.begin(), transports.end(), tl) != transports.end();
}

namespace {

// What loading the modules reads: the objects loaded before them (libucp and what it needs), the
// one that loads uct's modules (libucs), their extension, UCX_MODULES and why it leaves one out.
struct ModuleSearch {
  Root &root;
  LdSearch &ld;
  const std::vector<LoadedObject> &objs;
  int ucs;
  std::string ext, modules, modules_why, version;
};

// Which files UCX opens: 1.22 every lib<framework>_<name><ext> of each directory, no '_' in name
// (module.c ucs_module_load_from_dir); 1.13 to 1.21 only the names of the framework's compiled
// list (module.c ucs_load_modules, ucs_module_load_one: each directory in turn until one loads).
// Frameworks: uct's, and each loaded module's own (uct_ib loads libuct_ib_<name>:
// UCS_MODULE_FRAMEWORK_LOAD in src/uct/ib/base/ib_md.c). A name loaded from one directory is not
// loaded again. An unknown version: both readings, and a module counts only where both load it.
void load_modules(const ModuleSearch &ms, bool scan, const std::vector<std::string> &search, UcxBuild *out) {
  Root &root = ms.root;
  LdSearch &ld = ms.ld;
  std::string why;
  std::vector<LoadedObject> have = ms.objs;
  struct Framework {
    std::string name;
    int loader, holder;  // the object that dlopens its modules; the one whose list it is (-1: libuct)
  };
  std::vector<Framework> frameworks = {{"uct", ms.ucs, -1}};
  std::vector<std::string> loaded;
  for (size_t f = 0; f < frameworks.size() && f < 32 && !root.out_of_bounds(); f++) {
    const Framework fw = frameworks[f];
    const std::string prefix = "lib" + fw.name + "_";
    // (dir, file) in the order UCX opens them; the framework's other files, not opened.
    std::vector<std::pair<std::string, std::string>> order, unopened;
    std::vector<std::string> listed;
    bool list_known = true;
    std::string list_text;
    if (!scan) {
      // The list is in the framework's own object: libuct (the object that defines
      // uct_query_components; without one, any object of the build), or the module.
      std::vector<std::string> lists;
      int holder = fw.holder;
      for (size_t i = 0; i < have.size() && holder < 0; i++)
        if (defines(have[i].elf, "uct_query_components")) holder = int(i);
      for (size_t i = 0; i < have.size(); i++) {
        if (holder >= 0 && int(i) != holder) continue;
        read_with(root, have[i].path, [&](const ReadAt &read) {
          for (const std::string &l : compiled_module_lists(read, have[i].elf))
            if (std::find(lists.begin(), lists.end(), l) == lists.end()) lists.push_back(l);
        });
      }
      list_known = lists.size() <= 1;
      if (lists.size() == 1) list_text = lists[0], listed = split(lists[0].c_str() + 1, ":");
    }
    for (const std::string &d : search) {
      std::vector<std::string> names;
      if (!list_dir(root, d, &names)) continue;
      for (const std::string &n : names) {
        std::string name;
        if (!module_name(n, fw.name, ms.ext, &name)) continue;
        const bool opens = scan || std::find(listed.begin(), listed.end(), name) != listed.end();
        (opens ? order : unopened).push_back({d, n});
      }
    }
    if (!scan) {  // the list's order, each name through the directories in turn
      std::vector<std::pair<std::string, std::string>> by_list;
      for (const std::string &l : listed)
        for (const auto &o : order)
          if (o.second == prefix + l + ms.ext) by_list.push_back(o);
      order = by_list;
    }
    for (const auto &u : unopened) {
      UcxModule m;
      m.path = root.shown + u.first + "/" + u.second, m.state = list_known ? "not-loaded" : "error";
      m.why = !list_known ? "could not tell whether UCX " + ms.version + " opens it: " + fw.name +
                                "'s compiled module list could not be read"
                          : "UCX " + ms.version + " opens only the modules it was built with (" +
                                (list_text.empty() ? std::string("none") : list_text.substr(1)) + "), not every file";
      out->modules.push_back(m);
    }
    if (!list_known && !unopened.empty())
      out->unread.push_back("which " + fw.name + " modules UCX loads (its compiled list could not be read)");
    for (const auto &file : order) {
      if (root.out_of_bounds()) break;  // read_build says so: no module of the rest is named
      const std::string &d = file.first, &n = file.second;
      std::string name;
      module_name(n, fw.name, ms.ext, &name);
      const std::string base = n.substr(0, n.size() - ms.ext.size());
      if (std::find(loaded.begin(), loaded.end(), base) != loaded.end()) continue;
      UcxModule m;
      m.path = root.shown + d + "/" + n;
      // The module and what it needs are appended to what is loaded already (which counts as
      // found), and taken off again if it fails: never a copy of the whole load per module name.
      const size_t before = have.size();
      LoadedObject o;
      o.name = o.path = d + "/" + n, o.parent = fw.loader, o.dlopened = true;
      if (!module_enabled(ms.modules, name)) {
        m.state = "not-loaded", m.why = ms.modules_why;
      } else if (!read_object(root, o.path, &o.elf, &why)) {
        m.state = "error", m.why = why;
      } else if (o.elf.is64 != ms.objs[0].elf.is64 || o.elf.machine != ms.objs[0].elf.machine) {
        m.state = "error", m.why = "it is an ELF object of another class or machine";
      } else {
        // --pid: a module the process maps has loaded, and what it needs is what it maps; one it
        // does not map has not, and what it needs is what ld.so finds from what was loaded
        // before it (a library another module loaded later must not count).
        bool module_mapped = ld.mapped.empty();
        for (const auto &mp : ld.mapped) module_mapped = module_mapped || mp.second == o.path;
        std::vector<std::pair<std::string, std::string>> unmapped;
        if (!module_mapped) unmapped.swap(ld.mapped);
        have.push_back(std::move(o));
        const std::string miss = ld.load_closure(&have, int(before), true);
        if (!module_mapped) unmapped.swap(ld.mapped);
        m.state = miss.empty() ? "loaded" : "error", m.why = miss;
      }
      if (root.out_of_bounds()) m.state = "error", m.why = "could not tell: doctor's bound on reading was reached: " + root.reached;
      out->modules.push_back(m);
      if (m.state != "loaded") {
        have.resize(before);
        continue;
      }
      loaded.push_back(base);
      for (size_t i = before; i < have.size(); i++) add_transports(root, have[i], out);
      // The module and what it needed stay loaded (dlopen keeps them): a later module finds them
      // by name, as ld.so does. Its own framework is loaded from it.
      frameworks.push_back({fw.name + "_" + name, int(before), int(before)});
    }
  }
}

// An unknown version: what UCX 1.22's reading (every module file) and older releases' (their
// compiled list) both load is counted; a module they disagree on could not be told.
void both_readings(const UcxBuild &newer, const UcxBuild &older, UcxBuild *b) {
  bool differ = false;
  for (const UcxModule &m : newer.modules) {
    const UcxModule *o = nullptr;
    for (const UcxModule &k : older.modules) o = !o && k.path == m.path ? &k : o;
    UcxModule both = m;
    if ((m.state == "loaded") != (o && o->state == "loaded")) {
      differ = true;
      both.state = "error", both.why = "could not tell whether UCX loads it: its version is unknown, and UCX 1.22 "
                                       "opens every module file where older releases open only their compiled list";
    }
    b->modules.push_back(both);
  }
  for (size_t i = 0; i < newer.transports.size(); i++)
    if (older.has(newer.transports[i]) && !b->has(newer.transports[i]))
      b->transports.push_back(newer.transports[i]), b->objects.push_back(newer.objects[i]);
  for (const UcxBuild *r : {&newer, &older})
    for (const std::string &u : r->unread)
      if (std::find(b->unread.begin(), b->unread.end(), u) == b->unread.end()) b->unread.push_back(u);
  if (differ)
    b->could_not_tell("which modules UCX loads: its version is unknown, so only what both UCX 1.22's reading and "
                        "older releases' load is counted", true);
}

// Everything read_build reads, in the order UCX and ld.so read it.
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
  read_with(root, libucp, [&](const ReadAt &read) { b->version = returned_string(read, objs[0].elf, *version); });
  const ElfObject &ucp = objs[0].elf;
  if (b->version.empty() && ucp.is64 && (ucp.machine == EM_X86_64 || ucp.machine == EM_AARCH64))
    b->could_not_tell("its version (ucp_get_version_string's body is not a plain `return \"...\"`)", true);
  else if (b->version.empty())  // 32-bit, or a machine whose code doctor does not decode
    b->could_not_tell("its version (doctor decodes x86-64 and AArch64 code; this is a " + std::string(ucp.is64 ? "64" : "32") +
                          "-bit object of ELF machine " + std::to_string(ucp.machine) + ")", true);
  if (b->version.empty()) b->untold = b->unread.back();
  const std::string missing = ld.load_closure(&objs, 0, true);
  if (!missing.empty()) b->could_not_tell("part of what it needs: " + missing, true);
  // libucs: the first object that defines ucs_status_string, in ld.so's lookup order (breadth first).
  int ucs = -1;
  for (size_t i = 0; i < objs.size() && ucs < 0; i++)
    if (defines(objs[i].elf, "ucs_status_string")) ucs = int(i);
  for (const LoadedObject &o : objs) add_transports(root, o, b);
  if (ucs < 0) {
    b->could_not_tell("its modules (no libucs found beside it)", true);
    return true;
  }
  b->libucs = objs[size_t(ucs)].path;
  // The module directories (src/ucs/sys/module.c of v1.22.0: ucs_module_loader_add_dl_dir, lines
  // 60-116, <dir of libucs>/ucx; ucs_module_loader_add_install_dir, 119-123, UCX_MODULE_DIR, whose
  // default is compiled in), and the extension: libucs's own name from its first '.' (lines 86-91).
  const int minor = ucx_minor(b->version);
  const std::string ucs_name = base_name(b->libucs);
  const std::string ext = module_extension(ucs_name);
  std::string from, unsure;
  // UCX_MODULE_DIR is a string option: set, even empty, it replaces the compiled default.
  std::string module_dir = ucx_setting(place, b->libucs, "UCX_MODULE_DIR", &from, minor, &unsure);
  if (!unsure.empty()) b->could_not_tell(unsure, true);
  bool module_dir_known = !from.empty();
  if (!module_dir_known) {
    read_with(root, b->libucs, [&](const ReadAt &read) { module_dir = compiled_module_dir(read, objs[size_t(ucs)].elf); });
    module_dir_known = !module_dir.empty();
  }
  std::vector<std::string> dirs = {dir_of(b->libucs) + "/ucx"};
  if (module_dir_known) dirs.push_back(module_dir);
  else b->unread.push_back("the module directory compiled into " + ucs_name);
  // UCX_PLUGIN_PATH (1.22: global_opts.c "PLUGIN_PATH", a ':' list searched before the others).
  std::vector<std::string> plugin_dirs;
  if (minor < 0 || minor >= 22) {
    const std::string plugins = ucx_setting(place, b->libucs, "UCX_PLUGIN_PATH", &from, minor, &unsure);
    if (!unsure.empty()) b->could_not_tell(unsure, true);
    for (const std::string &d : split(plugins.c_str(), ":"))
      if (!plugins.empty()) plugin_dirs.push_back(d);
  }
  std::string modules = ucx_setting(place, b->libucs, "UCX_MODULES", &from, minor, &unsure);
  if (!unsure.empty()) b->could_not_tell(unsure, true);
  const std::string modules_why = "UCX_MODULES=" + modules + " (" + from + ") leaves it out";
  // Unset, or invalid ("all" with other names is an error in parser.c): UCX keeps its default, all.
  if (from.empty() || !allow_list_valid(modules)) modules = "all";
  const ModuleSearch ms{root, ld, objs, ucs, ext, modules, modules_why, b->version};
  std::vector<std::string> scanned = plugin_dirs;
  scanned.insert(scanned.end(), dirs.begin(), dirs.end());
  for (const std::string &d : scanned) b->module_dir += (b->module_dir.empty() ? "" : ":") + root.shown + d;
  if (minor >= 0) {
    load_modules(ms, minor >= 22, minor >= 22 ? scanned : dirs, b);
    return true;
  }
  auto newer = std::make_unique<UcxBuild>(), older = std::make_unique<UcxBuild>();
  newer->transports = older->transports = b->transports, newer->objects = older->objects = b->objects;
  load_modules(ms, true, scanned, newer.get());
  load_modules(ms, false, dirs, older.get());
  both_readings(*newer, *older, b);
  return true;
}

}  // namespace

bool read_build(BuildPlace &place, const std::string &libucp, UcxBuild *b, std::string *err) {
  Root &root = *place.root;
  b->libucp = root.shown + libucp;
  const bool read = read_build_files(place, libucp, b, err);
  if (root.reached.empty()) return read;
  // A bound stopped the reading: what the build seems to lack may be what was not read, and
  // what else could not be told may be that too: one line says why.
  b->bound = "doctor's bound on reading was reached: " + root.reached;
  b->unread = {"what it serves: " + b->bound};
  if (!read) *err = "could not tell what the UCX at " + root.shown + libucp + " is: " + b->bound;
  return read;
}

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
