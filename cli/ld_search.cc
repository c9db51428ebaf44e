// ld.so's search, from files alone (see ld_search.h). glibc 2.36's elf/dl-load.c is the reference.
#include "ld_search.h"

#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

namespace ucxtls {
namespace cli {
namespace {

// The ld.so.cache entry flags for this class and machine (glibc's sysdeps/generic/ldconfig.h:
// FLAG_ELF_LIBC6 | FLAG_X8664_LIB64 ...; _dl_cache_check_flags).
int cache_flags(bool is64, unsigned machine) {
  if (machine == EM_X86_64 && is64) return 0x0303;
  if (machine == EM_AARCH64) return 0x0a03;
  if (machine == EM_386 || machine == EM_X86_64) return 0x0003;
  return -1;  // another machine: any libc6 entry
}

uint32_t u32(const std::string &s, size_t at) {
  uint32_t v;
  memcpy(&v, s.data() + at, 4);
  return v;
}

}  // namespace

std::vector<std::string> library_path_of(const std::vector<std::string> &env, bool secure) {
  std::vector<std::string> dirs;
  const std::string *last = nullptr;  // rtld.c process_envvars: each LD_LIBRARY_PATH replaces the one before
  for (const std::string &e : env)
    if (!e.compare(0, 16, "LD_LIBRARY_PATH=")) last = &e;
  if (!last || secure) return dirs;  // secure execution: ld.so ignores it
  const std::string v = last->substr(16);
  size_t b = 0;
  for (;;) {  // fillin_rpath (elf/dl-load.c): separators ':' and ';', an empty entry is "./"
    size_t e = v.find_first_of(":;", b);
    std::string d = v.substr(b, e == std::string::npos ? std::string::npos : e - b);
    dirs.push_back(d.empty() ? "." : d);
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return dirs;
}

std::string ld_cache_lookup(const std::string &cache, const std::string &name, bool is64, unsigned machine) {
  static const char kOld[] = "ld.so-1.7.0", kNew[] = "glibc-ld.so.cache1.1";
  size_t base = 0;
  if (cache.size() >= 16 && !memcmp(cache.data(), kOld, sizeof kOld - 1)) {
    const uint64_t nlibs = u32(cache, 12);  // struct cache_file: magic[11] padded to 12, nlibs, 12-byte entries
    base = size_t(std::min<uint64_t>((16 + nlibs * 12 + 7) & ~uint64_t(7), cache.size()));
  }
  if (cache.size() < base + 48 || memcmp(cache.data() + base, kNew, sizeof kNew - 1)) return "";
  const uint64_t nlibs = u32(cache, base + 20);
  const int want = cache_flags(is64, machine);
  for (uint64_t i = 0; i < nlibs; i++) {
    const uint64_t at = base + 48 + i * 24;  // struct file_entry_new: flags, key, value, osversion, hwcap
    if (at + 24 > cache.size()) break;
    const int32_t flags = int32_t(u32(cache, size_t(at)));
    const uint64_t key = base + u32(cache, size_t(at + 4)), value = base + u32(cache, size_t(at + 8));
    if ((want >= 0 ? flags != want : (flags & 0xff) != 3) || key >= cache.size() || value >= cache.size()) continue;
    const char *k = cache.data() + key;
    if (strnlen(k, cache.size() - key) == name.size() && !memcmp(k, name.data(), name.size())) {
      const char *v = cache.data() + value;
      return std::string(v, strnlen(v, cache.size() - value));
    }
  }
  return "";
}

void LdSearch::init(Root *r, const std::vector<std::string> &env, bool secure, const std::string &exe_path) {
  root = r;
  library_path = library_path_of(env, secure);
  exe = exe_path;
  std::vector<std::string> probe;
  // Debian's multiarch glibc: $LIB is lib/<triplet> and those come first among the defaults
  // (`ld.so --help`); elsewhere lib64 (glibc's own SYSTEM_DIRS for 64-bit x86).
  const char *triplet = !is64 ? "i386-linux-gnu" : machine == EM_AARCH64 ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
  platform_ = !is64 ? "i686" : machine == EM_AARCH64 ? "aarch64" : "x86_64";
  if (list_dir(*root, std::string("/lib/") + triplet, &probe)) {
    lib_ = std::string("lib/") + triplet;
    defaults_ = {"/lib/" + std::string(triplet), "/usr/lib/" + std::string(triplet), "/lib", "/usr/lib"};
  } else {
    lib_ = is64 ? "lib64" : "lib";
    defaults_ = is64 ? std::vector<std::string>{"/lib64", "/usr/lib64"} : std::vector<std::string>{"/lib", "/usr/lib"};
  }
  // The hwcaps subdirectories, most specific first; each is searched in every directory before
  // the directory itself. glibc-hwcaps: only the levels this CPU supports (dl-hwcaps.c). Legacy
  // subdirectories (glibc before 2.37): all of them, which may find a library ld.so would pass over.
  subdirs_.clear();
  if (is64 && machine == EM_X86_64) {
#if !defined(__x86_64__) && !defined(__i386__)  // another CPU's compiler has no x86 feature names
    const bool v2 = false, v3 = false, v4 = false;
#elif defined(__clang__) && __clang_major__ < 16  // no level names (the fuzz build): the features that make each level
    const bool v2 = __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("ssse3");
    const bool v3 = v2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma");
    const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd");
#else
    const bool v2 = __builtin_cpu_supports("x86-64-v2"), v3 = __builtin_cpu_supports("x86-64-v3"),
               v4 = __builtin_cpu_supports("x86-64-v4");
#endif
    if (v4) subdirs_.push_back("glibc-hwcaps/x86-64-v4/");
    if (v3) subdirs_.push_back("glibc-hwcaps/x86-64-v3/");
    if (v2) subdirs_.push_back("glibc-hwcaps/x86-64-v2/");
    static const char *const legacy[] = {"tls", "haswell", "avx512_1", "x86_64"};
    for (int m = 15; m > 0; m--) {
      std::string s;
      for (int b = 0; b < 4; b++)
        if (m & (8 >> b)) s += std::string(legacy[b]) + "/";
      subdirs_.push_back(s);
    }
  }
  subdirs_.push_back("");
  if (!exe.empty()) {
    std::string why;
    int e = 0;
    const int fd = open_regular(*root, exe, nullptr, &e);
    if (fd >= 0) {
      Root *rp = root;
      read_elf([rp, fd](void *b, size_t n, off_t o) { return read_at(*rp, fd, b, n, o); }, &exe_elf, false, &why);
      close(fd);
    }
  }
}

bool LdSearch::candidate(const std::string &path) {
  int e = 0;
  const int fd = open_regular(*root, path, nullptr, &e);
  if (fd < 0) return false;
  unsigned char h[20] = {};
  const bool ok = read_at(*root, fd, h, sizeof h, 0) == ssize_t(sizeof h) && !memcmp(h, ELFMAG, SELFMAG) &&
                  (h[EI_CLASS] == ELFCLASS64) == is64 && unsigned(h[18] | h[19] << 8) == machine;
  close(fd);
  return ok;  // ld.so passes over a file of another class or machine (elf/dl-load.c open_verify)
}

std::vector<std::string> LdSearch::expand(const std::string &list, const std::string &origin, const char *seps) {
  std::vector<std::string> dirs;
  size_t b = 0;
  for (;;) {
    size_t e = list.find_first_of(seps, b);
    std::string d = list.substr(b, e == std::string::npos ? std::string::npos : e - b), out;
    for (size_t i = 0; i < d.size();) {  // _dl_dst_substitute: $NAME and ${NAME}
      static const struct {
        const char *name;
        int which;
      } kTokens[] = {{"ORIGIN", 0}, {"LIB", 1}, {"PLATFORM", 2}};
      bool done = false;
      if (d[i] == '$') {
        for (const auto &t : kTokens) {
          const size_t n = strlen(t.name);
          const bool braced = d.compare(i + 1, n + 2, std::string("{") + t.name + "}") == 0;
          const bool bare = !braced && d.compare(i + 1, n, t.name) == 0 &&
                            (i + 1 + n >= d.size() || !(isalnum((unsigned char)d[i + 1 + n]) || d[i + 1 + n] == '_'));
          if (!braced && !bare) continue;
          out += t.which == 0 ? origin : t.which == 1 ? lib_ : platform_;
          i += 1 + n + (braced ? 2 : 0);
          done = true;
          break;
        }
      }
      if (!done) out += d[i++];
    }
    dirs.push_back(out.empty() ? "." : out);
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return dirs;
}

bool LdSearch::find(const std::string &name, const std::vector<LoadedObject> &objects, int from, std::string *path) {
  if (name.find('/') != std::string::npos) return candidate(name) && (*path = name, true);  // a path: opened as it is
  for (const auto &m : mapped)
    if (m.first == name) return *path = m.second, true;
  std::vector<std::string> dirs;
  const ElfObject &self = objects[size_t(from)].elf;
  if (!self.has_runpath) {
    // The DT_RPATH of the object, of the one that loaded it, and on up; then the program's
    // (elf/dl-load.c _dl_map_object). An object with DT_RUNPATH has no DT_RPATH for ld.so
    // (elf/get-dynamic-info.h).
    for (int i = from; i >= 0; i = objects[size_t(i)].parent) {
      const LoadedObject &l = objects[size_t(i)];
      if (l.elf.has_rpath && !l.elf.has_runpath)
        for (const std::string &d : expand(l.elf.rpath, dir_of(l.path), ":")) dirs.push_back(d);
      if (objects[size_t(i)].parent >= i) break;
    }
    if (!exe.empty() && exe_elf.has_rpath && !exe_elf.has_runpath)
      for (const std::string &d : expand(exe_elf.rpath, dir_of(exe), ":")) dirs.push_back(d);
  }
  for (const std::string &d : library_path)
    for (const std::string &x : expand(d, exe.empty() ? "." : dir_of(exe), ":")) dirs.push_back(x);
  if (self.has_runpath)
    for (const std::string &d : expand(self.runpath, dir_of(objects[size_t(from)].path), ":")) dirs.push_back(d);
  for (const std::string &d : dirs)
    for (const std::string &s : subdirs_)
      if (candidate(d + "/" + s + name)) return *path = d + "/" + s + name, true;
  // ld.so reads /etc/ld.so.cache alone, never ld.so.conf (ldconfig reads that to write the cache):
  // glibc's elf/dl-load.c _dl_map_object asks _dl_load_cache_lookup (elf/dl-cache.c), which maps
  // the cache file and, when there is none, answers nothing; then the default directories.
  // DF_1_NODEFLIB of the object asking: no cache entry from a default directory, no defaults.
  const bool nodeflib = self.flags_1 & DF_1_NODEFLIB;
  auto in_defaults = [&](const std::string &p) {
    for (const std::string &d : defaults_)
      if (!p.compare(0, d.size() + 1, d + "/")) return true;  // a prefix, as dl-load.c compares
    return false;
  };
  if (!cache_read_) {
    cache_read_ = true;
    read_small(*root, "/etc/ld.so.cache", size_t(64) << 20, &cache_);
  }
  const std::string cached = ld_cache_lookup(cache_, name, is64, machine);
  if (!cached.empty() && !(nodeflib && in_defaults(cached)) && candidate(cached)) return *path = cached, true;
  if (nodeflib) return false;
  for (const std::string &d : defaults_)
    for (const std::string &s : subdirs_)
      if (candidate(d + "/" + s + name)) return *path = d + "/" + s + name, true;
  return false;
}

std::string LdSearch::load_closure(std::vector<LoadedObject> *objects, int start, bool symbols) {
  std::string missing;
  for (size_t i = size_t(start); i < objects->size() && objects->size() < 512; i++) {
    const std::vector<std::string> needed = (*objects)[i].elf.needed;
    for (const std::string &n : needed) {
      bool seen = false;  // _dl_name_match_p: a name or soname already loaded
      for (const LoadedObject &o : *objects) seen = seen || o.name == n || o.elf.soname == n;
      if (seen) continue;
      std::string path;
      if (!find(n, *objects, int(i), &path)) {
        if (missing.empty()) missing = n + ": cannot open shared object file: No such file or directory";
        continue;
      }
      LoadedObject o;
      o.name = n, o.path = path, o.parent = int(i);
      int e = 0;
      const int fd = open_regular(*root, path, nullptr, &e);
      std::string why;
      if (fd >= 0) {
        Root *rp = root;
        read_elf([rp, fd](void *b, size_t k, off_t off) { return read_at(*rp, fd, b, k, off); }, &o.elf, symbols, &why);
        close(fd);
      }
      objects->push_back(std::move(o));
    }
  }
  return missing;
}

}  // namespace cli
}  // namespace ucxtls
