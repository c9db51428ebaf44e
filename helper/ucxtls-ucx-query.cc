// ucxtls-ucx-query: asks one UCX build which transports it has. `ucxtls doctor --ucx/--pid` starts
// it as its bounded child (cli/bounded_child.h): loading a UCX runs its constructors, which may
// hang, crash or print, so that never happens in the command or in a host process.
//
// It loads the given libucp (any name) with RTLD_LOCAL, so nothing else in this process can bind
// to it, asks its version (ucp_get_version_string) and lets UCX load its transport modules as it
// always does (uct_query_components, UCX's public API). A transport is registered by the
// definition UCX's UCT_TL_DEFINE macros write in libuct or in a module: a global `uct_<name>_tl`
// whose first field is the name. Those definitions are read from the dynamic symbols of every
// object the load mapped and checked against memory, so the names are those of the loaded build,
// whether or not this machine has a device for them (a query of device resources would list
// none on a node without RDMA or GPUs). Module files beside the build that UCX did not load are
// tried once, for the reason (dlerror).
//
//   ucxtls-ucx-query [--report-fd=N] LIBUCP     (default: stdout, for a person at a shell)
//
// The report, one fact a line: "ucxtls-ucx 1", "stage <what is being asked>" before each step
// (the last one names where a hang or crash happened), "loaded <path>", "version <v>",
// "libucs <path>", "component <name> <md resources>", "transport <name> <object>",
// "module <path> <loaded|not-loaded|error> [<dlerror>]", "error <text>", and "end".
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

int out_fd = 1;

void say(const char *fmt, const char *a = "", const char *b = "", const char *c = "") {
  dprintf(out_fd, fmt, a, b, c);
}

// UCX's public ABI, as in uct/api/uct.h (the same from v1.7 to v1.22): no UCX header is needed.
typedef int ucs_status_t;
typedef struct uct_component *uct_component_h;
const size_t kComponentNameMax = 16;  // UCT_COMPONENT_NAME_MAX
const uint64_t kAttrName = 1u << 0, kAttrMdResourceCount = 1u << 1;
struct uct_component_attr_t {
  uint64_t field_mask;
  char name[kComponentNameMax];
  unsigned md_resource_count;
  void *md_resources;
  uint64_t flags;
};
typedef const char *(*version_string_fn)(void);
typedef ucs_status_t (*query_components_fn)(uct_component_h **, unsigned *);
typedef ucs_status_t (*component_query_fn)(uct_component_h, uct_component_attr_t *);
typedef void (*release_components_fn)(uct_component_h *);

const size_t kTlNameMax = 10;  // UCT_TL_NAME_MAX: the transport name is a char[10] at the start

// The transports an object defines: its dynamic symbols `uct_<name>_tl` (data, defined) whose
// memory starts with "<name>\0". The file is read for the symbol table; memory for the check.
void report_transports(const char *path, ElfW(Addr) base) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  void *map = fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(ElfW(Ehdr))
                  ? mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  close(fd);
  if (map == MAP_FAILED) return;
  const char *file = static_cast<const char *>(map);
  const size_t size = size_t(st.st_size);
  const ElfW(Ehdr) *eh = reinterpret_cast<const ElfW(Ehdr) *>(file);
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
      eh->e_shoff + size_t(eh->e_shnum) * sizeof(ElfW(Shdr)) > size) {
    munmap(map, size);
    return;
  }
  const ElfW(Shdr) *sh = reinterpret_cast<const ElfW(Shdr) *>(file + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum) continue;
    const ElfW(Shdr) &strs = sh[sh[i].sh_link];
    if (sh[i].sh_offset + sh[i].sh_size > size || strs.sh_offset + strs.sh_size > size) continue;
    const ElfW(Sym) *sym = reinterpret_cast<const ElfW(Sym) *>(file + sh[i].sh_offset);
    const size_t n = sh[i].sh_size / sizeof(ElfW(Sym));
    for (size_t k = 0; k < n; k++) {
      if ((sym[k].st_info & 0xf) != STT_OBJECT || sym[k].st_shndx == SHN_UNDEF) continue;
      if (sym[k].st_name >= strs.sh_size) continue;
      const char *name = file + strs.sh_offset + sym[k].st_name;
      const size_t len = strnlen(name, strs.sh_size - sym[k].st_name);
      if (len < 8 || strncmp(name, "uct_", 4) || strcmp(name + len - 3, "_tl")) continue;
      const size_t tl_len = len - 7;
      if (tl_len >= kTlNameMax || sym[k].st_size < kTlNameMax) continue;
      const char *mem = reinterpret_cast<const char *>(base + sym[k].st_value);
      if (strncmp(mem, name + 4, tl_len) || mem[tl_len] != '\0') continue;
      char tl[kTlNameMax];
      memcpy(tl, name + 4, tl_len);
      tl[tl_len] = '\0';
      say("transport %s %s\n", tl, path);
    }
  }
  munmap(map, size);
}

// The objects mapped now, as device:inode pairs (to tell which module files UCX loaded).
const int kObjectsMax = 512;
struct Mapped {
  int n = 0;
  dev_t dev[kObjectsMax];
  ino_t ino[kObjectsMax];
  bool has(const struct stat &st) const {
    for (int i = 0; i < n; i++)
      if (dev[i] == st.st_dev && ino[i] == st.st_ino) return true;
    return false;
  }
};

int each_object(struct dl_phdr_info *info, size_t, void *data) {
  Mapped *m = static_cast<Mapped *>(data);
  struct stat st;
  if (!info->dlpi_name || !info->dlpi_name[0] || stat(info->dlpi_name, &st) != 0) return 0;
  report_transports(info->dlpi_name, info->dlpi_addr);
  if (m->n < kObjectsMax) m->dev[m->n] = st.st_dev, m->ino[m->n++] = st.st_ino;
  return 0;
}

// The module files in <dir of libucs>/ucx named as UCX names them: lib<framework>_<module><ext>,
// <ext> being libucs's own name from its first '.' (UCX's ucs/sys/module.c).
void report_modules(const char *libucs, const Mapped &mapped) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", libucs);
  char *slash = strrchr(dir, '/');
  const char *ext = strchr(slash ? slash + 1 : dir, '.');
  if (!slash || !ext) return;
  char ext_copy[64];
  snprintf(ext_copy, sizeof ext_copy, "%s", ext);
  snprintf(slash, sizeof dir - size_t(slash - dir), "/ucx");
  say("module-dir %s\n", dir);
  DIR *d = opendir(dir);
  if (!d) return;
  const size_t ext_len = strlen(ext_copy);
  while (dirent *e = readdir(d)) {
    const size_t len = strlen(e->d_name);
    if (strncmp(e->d_name, "libuct_", 7) || len <= ext_len + 7 || strcmp(e->d_name + len - ext_len, ext_copy)) continue;
    char path[4096 + 256];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0) continue;
    if (mapped.has(st)) {
      say("module %s loaded\n", path);
      continue;
    }
    // UCX left it out: why? (a dependency missing here, such as libcuda.so.1, is the usual one)
    if (void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
      say("module %s not-loaded\n", path);
      (void)h;
    } else {
      const char *why = dlerror();
      char one_line[512];
      snprintf(one_line, sizeof one_line, "%s", why ? why : "?");
      for (char *c = one_line; *c; c++)
        if (*c == '\n') *c = ' ';
      say("module %s error %s\n", path, one_line);
    }
  }
  closedir(d);
}

}  // namespace

int main(int argc, char **argv) {
  const char *libucp = nullptr;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--report-fd=", 12)) out_fd = atoi(argv[i] + 12);
    else if (argv[i][0] != '-' && !libucp) libucp = argv[i];
    else return fprintf(stderr, "usage: ucxtls-ucx-query [--report-fd=N] LIBUCP\n"), 2;
  }
  if (!libucp) return fprintf(stderr, "usage: ucxtls-ucx-query [--report-fd=N] LIBUCP\n"), 2;
  say("ucxtls-ucx 1\nstage load\n");
  void *ucp = dlopen(libucp, RTLD_NOW | RTLD_LOCAL);
  if (!ucp) {
    const char *why = dlerror();
    say("error cannot load it: %s\nend\n", why ? why : "?");
    _exit(0);
  }
  say("stage version\n");
  version_string_fn version = reinterpret_cast<version_string_fn>(dlsym(ucp, "ucp_get_version_string"));
  query_components_fn query = reinterpret_cast<query_components_fn>(dlsym(ucp, "uct_query_components"));
  component_query_fn component_query = reinterpret_cast<component_query_fn>(dlsym(ucp, "uct_component_query"));
  release_components_fn release = reinterpret_cast<release_components_fn>(dlsym(ucp, "uct_release_component_list"));
  void *in_libucs = dlsym(ucp, "ucs_status_string");
  if (!version) {
    say("error it is not a UCX libucp: it has no ucp_get_version_string\nend\n");
    _exit(0);
  }
  Dl_info where;
  if (dladdr(reinterpret_cast<void *>(version), &where) && where.dli_fname) say("loaded %s\n", where.dli_fname);
  say("version %s\n", version());
  if (in_libucs && dladdr(in_libucs, &where) && where.dli_fname) say("libucs %s\n", where.dli_fname);
  if (!query || !component_query || !release) {
    say("error its libuct has no uct_query_components (UCX older than 1.7?)\nend\n");
    _exit(0);
  }
  say("stage components\n");
  uct_component_h *components = nullptr;
  unsigned ncomponents = 0;
  if (query(&components, &ncomponents) != 0) {
    say("error uct_query_components failed\nend\n");
    _exit(0);
  }
  for (unsigned i = 0; i < ncomponents; i++) {
    uct_component_attr_t attr;
    memset(&attr, 0, sizeof attr);
    attr.field_mask = kAttrName | kAttrMdResourceCount;
    if (component_query(components[i], &attr) != 0) continue;
    attr.name[kComponentNameMax - 1] = '\0';
    char count[16];
    snprintf(count, sizeof count, "%u", attr.md_resource_count);
    say("component %s %s\n", attr.name, count);
  }
  release(components);
  say("stage transports\n");
  Mapped mapped;
  dl_iterate_phdr(each_object, &mapped);
  if (in_libucs && dladdr(in_libucs, &where) && where.dli_fname) {
    say("stage modules\n");
    report_modules(where.dli_fname, mapped);
  }
  say("end\n");
  _exit(0);  // no UCX destructor runs after the answer
}
