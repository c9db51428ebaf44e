// ucx_oracle: the test oracle for what `ucxtls doctor` reads of a UCX build. It loads the build,
// as UCX's users do, and says what loading found: the way the old loading helper asked UCX, kept
// here as a test program only (never installed, run by tests/cli/test_doctor_oracle.py as an
// unprivileged user). Loading runs the build's code: that is why doctor never does it.
//
// It dlopens LIBUCP (RTLD_LOCAL), asks its version (ucp_get_version_string), lets UCX load its
// transport modules (uct_query_components), then reads the `uct_<name>_tl` definitions (the name
// is the first field: UCX's UCT_TL_DEFINE) of every mapped object, checked in memory. Module files
// in <dir of libucs>/ucx (lib<uct...>_<name><ext>, <ext> being libucs's name from its first '.')
// that UCX did not load are dlopened once, for dlerror.
//
//   ucx_oracle [--load-modules] LIBUCP    one fact a line: "version V", "libucs PATH", "transport NAME OBJECT",
//                        "module PATH loaded", "module PATH not-loaded", "module PATH error WHY",
//                        "error TEXT", then "end"
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

typedef struct uct_component *uct_component_h;
typedef const char *(*version_fn)(void);
typedef int (*query_fn)(uct_component_h **, unsigned *);
typedef void (*release_fn)(uct_component_h *);
const size_t kTlNameMax = 10;  // UCT_TL_NAME_MAX (uct/api/uct.h)

// The transports an object defines: its defined dynamic data symbols uct_<name>_tl whose memory
// starts with "<name>\0" (the symbol table from the file, the check in memory).
void transports(const char *path, ElfW(Addr) base) {
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
  if (!memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_shentsize == sizeof(ElfW(Shdr)) &&
      eh->e_shoff + size_t(eh->e_shnum) * sizeof(ElfW(Shdr)) <= size) {
    const ElfW(Shdr) *sh = reinterpret_cast<const ElfW(Shdr) *>(file + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
      if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum) continue;
      const ElfW(Shdr) &strs = sh[sh[i].sh_link];
      if (sh[i].sh_offset + sh[i].sh_size > size || strs.sh_offset + strs.sh_size > size) continue;
      const ElfW(Sym) *sym = reinterpret_cast<const ElfW(Sym) *>(file + sh[i].sh_offset);
      for (size_t k = 0; k < sh[i].sh_size / sizeof(ElfW(Sym)); k++) {
        if ((sym[k].st_info & 0xf) != STT_OBJECT || sym[k].st_shndx == SHN_UNDEF || sym[k].st_name >= strs.sh_size) continue;
        const char *name = file + strs.sh_offset + sym[k].st_name;
        const size_t len = strnlen(name, strs.sh_size - sym[k].st_name);
        if (len < 8 || strncmp(name, "uct_", 4) || strncmp(name + len - 3, "_tl", 3)) continue;
        const size_t tl = len - 7;
        if (tl >= kTlNameMax || sym[k].st_size < kTlNameMax) continue;
        const char *mem = reinterpret_cast<const char *>(base + sym[k].st_value);
        if (!strncmp(mem, name + 4, tl) && mem[tl] == '\0') printf("transport %.*s %s\n", int(tl), name + 4, path);
      }
    }
  }
  munmap(map, size);
}

struct Mapped {
  int n = 0;
  dev_t dev[1024];
  ino_t ino[1024];
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
  transports(info->dlpi_name, info->dlpi_addr);
  if (m->n < 1024) m->dev[m->n] = st.st_dev, m->ino[m->n++] = st.st_ino;
  return 0;
}

// The module files UCX would find beside libucs, each given to visit (its path; "" if not regular).
template <typename Visit>
void module_files(const char *libucs, Visit visit) {
  char dir[4096], ext[256];
  snprintf(dir, sizeof dir, "%s", libucs);
  char *slash = strrchr(dir, '/');
  const char *dot = slash ? strchr(slash + 1, '.') : nullptr;
  if (!slash || !dot) return;
  snprintf(ext, sizeof ext, "%s", dot);
  snprintf(slash, sizeof dir - size_t(slash - dir), "/ucx");
  DIR *d = opendir(dir);
  if (!d) return;
  const size_t ext_len = strlen(ext);
  while (dirent *e = readdir(d)) {
    const size_t len = strlen(e->d_name);
    if (strncmp(e->d_name, "libuct_", 7) || len <= ext_len + 7 || strcmp(e->d_name + len - ext_len, ext)) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    visit(path);
  }
  closedir(d);
}

void modules(const char *libucs, const Mapped &mapped) {
  module_files(libucs, [&](const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
      printf("module %s error not a regular file\n", path);
      return;
    }
    if (mapped.has(st)) {
      printf("module %s loaded\n", path);
    } else if (dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
      printf("module %s not-loaded\n", path);
    } else {
      const char *why = dlerror();
      printf("module %s error ", path);
      for (const char *c = why ? why : "?"; *c; c++) putchar(*c == '\n' ? ' ' : *c);
      putchar('\n');
    }
  });
}

}  // namespace

int main(int argc, char **argv) {
  // --load-modules: a fake libucp has no module loader of its own: each module file is dlopened
  // as UCX's loader does it (ucs_module_load, src/ucs/sys/module.c: dlopen RTLD_NOW|RTLD_LOCAL).
  const bool load_modules = argc == 3 && !strcmp(argv[1], "--load-modules");
  if (argc != 2 && !load_modules) return fprintf(stderr, "usage: ucx_oracle [--load-modules] LIBUCP\n"), 2;
  argv += load_modules;
  setvbuf(stdout, nullptr, _IOLBF, 0);  // each fact out before the next step (a crash keeps them)
  void *ucp = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!ucp) {
    const char *why = dlerror();
    printf("error cannot load it: %s\nend\n", why ? why : "?");
    return 0;
  }
  version_fn version = reinterpret_cast<version_fn>(dlsym(ucp, "ucp_get_version_string"));
  query_fn query = reinterpret_cast<query_fn>(dlsym(ucp, "uct_query_components"));
  release_fn release = reinterpret_cast<release_fn>(dlsym(ucp, "uct_release_component_list"));
  void *in_libucs = dlsym(ucp, "ucs_status_string");
  if (!version) return printf("error it is not a UCX libucp: it has no ucp_get_version_string\nend\n"), 0;
  printf("version %s\n", version());
  Dl_info where;
  const char *libucs = in_libucs && dladdr(in_libucs, &where) && where.dli_fname ? where.dli_fname : nullptr;
  if (libucs) printf("libucs %s\n", libucs);
  if (query && release) {
    uct_component_h *components = nullptr;
    unsigned n = 0;
    if (query(&components, &n) == 0) release(components);  // UCX loads its modules here
  }
  if (load_modules && libucs) module_files(libucs, [](const char *path) { dlopen(path, RTLD_NOW | RTLD_LOCAL); });
  Mapped mapped;
  dl_iterate_phdr(each_object, &mapped);
  if (libucs) modules(libucs, mapped);
  printf("end\n");
  _exit(0);  // no UCX destructor runs after the answer
}
