// ld.so's search, from files alone (see ld_search.h). glibc 2.36's elf/dl-load.c is the reference.
#include "ld_search.h"

#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>

#include "util.h"

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

// Whether path is one of dirs or below one (a prefix up to a '/', as elf/dl-load.c compares).
bool at_or_below(const std::vector<std::string> &dirs, const std::string &path) {
  for (const std::string &d : dirs)
    if (!(path + "/").compare(0, d.size() + 1, d + "/")) return true;
  return false;
}

uint32_t u32(const std::string &s, size_t at) {
  uint32_t v;
  memcpy(&v, s.data() + at, 4);
  return v;
}

// The ELF object at path inside the root, as far as it reads; a cut list of symbols noted.
void read_elf_in(Root &root, const std::string &path, ElfObject *o, bool symbols) {
  int e = 0;
  const int fd = open_regular(root, path, nullptr, &e);
  if (fd < 0) return;
  std::string why;
  read_elf([&root, fd](void *b, size_t n, off_t off) { return read_at(root, fd, b, n, off); }, o, symbols, &why);
  close(fd);
  if (o->symbols_cut) root.note("its limit on symbol names read, in " + root.shown + path);
}

}  // namespace

std::vector<std::string> library_path_of(const std::vector<std::string> &env, bool secure) {
  std::vector<std::string> dirs;
  const char *value = env_lookup(env, "LD_LIBRARY_PATH", Dup::last);
  // Secure execution, or set but empty: no directory at all (_dl_init_paths: llp != NULL && *llp != '\0').
  if (!value || !*value || secure) return dirs;
  for (const std::string &d : split(value, ":;")) dirs.push_back(d.empty() ? "." : d);  // fillin_rpath: "" is "./"
  return dirs;
}

namespace {

// The bit of a legacy hwcap or platform name in a cache entry's hwcap word (glibc 2.36's
// sysdeps/x86/dl-procinfo.c: hwcaps sse2, x86_64, avx512_1, platforms from bit 48 i586, i686,
// haswell, xeon_phi; sysdeps/unix/sysv/linux/aarch64/dl-procinfo.c: atomics is bit 8); -1: none.
int hwcap_bit(unsigned machine, const std::string &n) {
  static const char *const x86[] = {"sse2", "x86_64", "avx512_1"}, *const x86_platforms[] = {"i586", "i686", "haswell", "xeon_phi"};
  for (int i = 0; i < 3 && (machine == EM_X86_64 || machine == EM_386); i++)
    if (n == x86[i]) return i;
  for (int i = 0; i < 4 && (machine == EM_X86_64 || machine == EM_386); i++)
    if (n == x86_platforms[i]) return 48 + i;
  return machine == EM_AARCH64 && n == "atomics" ? 8 : -1;
}

// The glibc-hwcaps subdirectory name of a named cache entry (hwcap: DL_CACHE_HWCAP_EXTENSION and
// an index into the extension's glibc-hwcaps section of string offsets, sysdeps/generic/dl-cache.h).
std::string named_hwcap(const std::string &cache, size_t header, uint64_t hwcap) {
  const uint32_t ext = u32(cache, header + 32);  // struct cache_file_new: extension_offset
  if (!ext || ext % 4 || uint64_t(ext) + 8 > cache.size() || u32(cache, ext) != 0xeaa42174u) return "";
  const uint64_t count = u32(cache, ext + 4), index = hwcap & 0xffffffffu;
  for (uint64_t i = 0; i < count && ext + 8 + (i + 1) * 16 <= cache.size(); i++) {
    const size_t at = size_t(ext + 8 + i * 16);  // {tag, flags, offset, size}; tag 1: glibc-hwcaps
    const uint64_t off = u32(cache, at + 8), size = u32(cache, at + 12);
    if (u32(cache, at) != 1 || off + size > cache.size() || (index + 1) * 4 > size) continue;
    const uint32_t str = u32(cache, size_t(off + index * 4));
    if (str >= cache.size()) return "";
    return std::string(cache.data() + str, strnlen(cache.data() + str, std::min<size_t>(cache.size() - str, 256)));
  }
  return "";
}

}  // namespace

std::string ld_cache_lookup(const std::string &cache, const std::string &name, bool is64, unsigned machine,
                            const std::vector<std::string> &levels, const std::vector<std::string> &names) {
  static const char kOld[] = "ld.so-1.7.0", kNew[] = "glibc-ld.so.cache1.1";
  size_t base = 0;
  if (cache.size() >= 16 && !memcmp(cache.data(), kOld, sizeof kOld - 1)) {
    const uint64_t nlibs = u32(cache, 12);  // struct cache_file: magic[11] padded to 12, nlibs, 12-byte entries
    base = size_t(std::min<uint64_t>((16 + nlibs * 12 + 7) & ~uint64_t(7), cache.size()));
  }
  if (cache.size() < base + 48 || memcmp(cache.data() + base, kNew, sizeof kNew - 1)) return "";
  const uint64_t nlibs = u32(cache, base + 20);
  const int want = cache_flags(is64, machine);
  // Which entries this CPU's ld.so takes (elf/dl-cache.c search_cache): legacy bits only of its
  // hwcaps (names but the last two, the platform and "tls") and the TLS bit; a platform bit only
  // its platform's; named (glibc-hwcaps) entries by their subdirectory's rank in levels.
  uint64_t usable = uint64_t(1) << 63, platform = ~uint64_t(0);
  for (size_t i = 0; i + 2 < names.size(); i++)
    if (hwcap_bit(machine, names[i]) >= 0) usable |= uint64_t(1) << hwcap_bit(machine, names[i]);
  if (names.size() >= 2 && hwcap_bit(machine, names[names.size() - 2]) >= 48)
    platform = uint64_t(1) << hwcap_bit(machine, names[names.size() - 2]);
  const uint64_t platforms = machine == EM_X86_64 || machine == EM_386 ? uint64_t(is64 ? 0xf : 0x3) << 48 : 0;
  std::string best;
  size_t best_rank = 0;
  for (uint64_t i = 0; i < nlibs; i++) {
    const uint64_t at = base + 48 + i * 24;  // struct file_entry_new: flags, key, value, osversion, hwcap
    if (at + 24 > cache.size()) break;
    const int32_t flags = int32_t(u32(cache, size_t(at)));
    const uint64_t key = base + u32(cache, size_t(at + 4)), value = base + u32(cache, size_t(at + 8));
    if ((want >= 0 ? flags != want : (flags & 0xff) != 3) || key >= cache.size() || value >= cache.size()) continue;
    // The key compared up to the name's length and its NUL, never measured to the cache's end:
    // a cache of keys without a NUL would cost its size for every entry.
    const char *k = cache.data() + key;
    if (cache.size() - key <= name.size() || memcmp(k, name.data(), name.size()) || k[name.size()]) continue;
    uint64_t hwcap;
    memcpy(&hwcap, cache.data() + at + 16, 8);
    const char *v = cache.data() + value;
    const std::string path(v, strnlen(v, std::min<size_t>(cache.size() - value, 4096)));
    if ((hwcap >> 32 & ~uint64_t(0x3ff)) == (uint64_t(1) << 30)) {  // named: keep the best rank
      const auto l = std::find(levels.begin(), levels.end(), named_hwcap(cache, base, hwcap));
      const size_t rank = size_t(l - levels.begin()) + 1;
      if (l != levels.end() && (best.empty() || rank < best_rank)) best = path, best_rank = rank;
      continue;
    }
    if (!best.empty()) break;  // named entries come first: the best of them wins
    if ((hwcap & ~(usable | platforms)) || ((hwcap & platforms) && (hwcap & platforms) != platform)) continue;
    return path;
  }
  return best;
}

std::vector<std::string> legacy_hwcap_subdirs(const std::vector<std::string> &names) {
  std::vector<std::string> out;
  const size_t cnt = std::min<size_t>(names.size(), 8);
  for (unsigned m = 1u << cnt; m-- > 0;) {  // entry k holds the names of the bits of 2^cnt - 1 - k
    std::string s;
    for (size_t i = cnt; i-- > 0;)
      if (m >> i & 1) s += names[i] + "/";
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);  // the same directory twice: one search
  }
  return out;
}

void hwcaps_of_cpu(bool is64, unsigned machine, std::vector<std::string> *levels, std::vector<std::string> *names) {
  levels->clear(), names->clear();
  const char *at_platform = nullptr;  // the kernel's AT_PLATFORM: ld.so's platform unless it sets its own
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
  at_platform = reinterpret_cast<const char *>(getauxval(AT_PLATFORM));
#endif
  const std::string platform = at_platform && *at_platform ? at_platform : "";
#if defined(__x86_64__) || defined(__i386__)
  if (is64 && machine == EM_X86_64) {
    // glibc-hwcaps (sysdeps/x86_64/dl-hwcaps-subdirs.c): the x86-64 ISA levels this CPU has.
#if defined(__clang__) && __clang_major__ < 16  // no level names (the fuzz build): the features that make each level
    const bool v2 = __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("ssse3");
    const bool v3 = v2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma");
    const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd");
#else
    const bool v2 = __builtin_cpu_supports("x86-64-v2"), v3 = __builtin_cpu_supports("x86-64-v3"),
               v4 = __builtin_cpu_supports("x86-64-v4");
#endif
    if (v4) levels->push_back("x86-64-v4");
    if (v3) levels->push_back("x86-64-v3");
    if (v2) levels->push_back("x86-64-v2");
    // Legacy (sysdeps/x86/cpu-features.c init_cpu_features, dl-hwcap.h HWCAP_IMPORTANT): hwcap
    // x86_64 always, avx512_1 and the platform haswell or xeon_phi on Intel CPUs alone.
    unsigned eax, ebx, ecx, edx;
    const bool movbe = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_MOVBE);
    const bool lzcnt = __get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx) && (ecx & bit_LZCNT);
    const bool intel = __builtin_cpu_is("intel"), cd = __builtin_cpu_supports("avx512cd"),
               er = __builtin_cpu_supports("avx512er");
    std::string p = platform.empty() ? "x86_64" : platform;
    names->push_back("x86_64");
    if (intel && cd && !er && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
      names->push_back("avx512_1");
    if (intel && cd && er && __builtin_cpu_supports("avx512pf"))
      p = "xeon_phi";
    else if (intel && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
             __builtin_cpu_supports("bmi2") && lzcnt && movbe && __builtin_cpu_supports("popcnt"))
      p = "haswell";
    names->push_back(p);
    names->push_back("tls");
    return;
  }
#elif defined(__aarch64__)
  if (is64 && machine == EM_AARCH64) {
    // No glibc-hwcaps subdirectories for aarch64 in 2.36 (elf/dl-hwcaps-subdirs.c, the generic
    // one); legacy: HWCAP_ATOMICS alone is important (sysdeps/unix/sysv/linux/aarch64/dl-procinfo.h).
    if (getauxval(AT_HWCAP) & HWCAP_ATOMICS) names->push_back("atomics");
    names->push_back(platform.empty() ? "aarch64" : platform);
    names->push_back("tls");
    return;
  }
#endif
  // Another machine's build (its CPU is not this one), or i386: what glibc's ld.so has on a common
  // CPU of it (x86-64 without Intel's platforms, AArch64 with LSE atomics, i386 sse2 and i686).
  if (is64 && machine == EM_X86_64) *names = {"x86_64", "x86_64", "tls"};
  else if (is64 && machine == EM_AARCH64) *names = {"atomics", "aarch64", "tls"};
  else if (!is64 && machine == EM_386) *names = {"sse2", "i686", "tls"};
  else names->push_back("tls");
}

void LdSearch::init(Root *r, const std::vector<std::string> &env, bool secure, const std::string &exe_path) {
  root = r;
  secure_ = secure;
  library_path = library_path_of(env, secure);
  exe = exe_path;
  // Debian's multiarch glibc: $LIB is lib/<triplet> and those come first among the defaults
  // (`ld.so --help`); elsewhere lib64 (glibc's own SYSTEM_DIRS for 64-bit x86).
  const char *triplet = !is64 ? "i386-linux-gnu" : machine == EM_AARCH64 ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
  platform_ = !is64 ? "i686" : machine == EM_AARCH64 ? "aarch64" : "x86_64";
  if (is_dir_in_root(*root, std::string("/lib/") + triplet)) {
    lib_ = std::string("lib/") + triplet;
    defaults_ = {"/lib/" + std::string(triplet), "/usr/lib/" + std::string(triplet), "/lib", "/usr/lib"};
  } else {
    lib_ = is64 ? "lib64" : "lib";
    defaults_ = is64 ? std::vector<std::string>{"/lib64", "/usr/lib64"} : std::vector<std::string>{"/lib", "/usr/lib"};
  }
  // The hwcaps subdirectories, most preferred first, then "" (the directory itself).
  hwcaps_of_cpu(is64, machine, &levels_, &names_);
  subdirs_.clear();
  for (const std::string &l : levels_) subdirs_.push_back("glibc-hwcaps/" + l + "/");
  for (const std::string &s : legacy_hwcap_subdirs(names_)) subdirs_.push_back(s);
  if (!exe.empty()) read_elf_in(*root, exe, &exe_elf, false);
}

int LdSearch::candidate(const std::string &path, std::string *error) {
  int e = 0;
  const int fd = open_regular(*root, path, nullptr, &e);
  if (fd < 0) return 0;
  unsigned char h[64] = {};
  const size_t ehdr = is64 ? 64 : 52;
  const ssize_t got = read_at(*root, fd, h, ehdr, 0);
  close(fd);
  // elf/dl-load.c open_verify, in its order: a file that is not an ELF object of this byte order,
  // version and type ends the search with an error; one of another class or machine is passed over.
  const unsigned type = unsigned(h[16] | h[17] << 8);
  const bool other = (h[EI_CLASS] == ELFCLASS64) != is64;
  const char *lose = got < 0                        ? "cannot read file data"
                     : got < ssize_t(ehdr)          ? "file too short"
                     : memcmp(h, ELFMAG, SELFMAG)   ? "invalid ELF header"
                     : other                        ? nullptr
                     : h[EI_DATA] != ELFDATA2LSB    ? "ELF file data encoding not little-endian"
                     : h[EI_VERSION] != EV_CURRENT  ? "ELF file version ident does not match current one"
                     : unsigned(h[18] | h[19] << 8) != machine ? nullptr
                     : type != ET_DYN && type != ET_EXEC ? "only ET_DYN and ET_EXEC can be loaded"
                                                         : nullptr;
  if (lose) return *error = root->shown + path + ": " + lose, -1;
  return (h[EI_CLASS] == ELFCLASS64) == is64 && unsigned(h[18] | h[19] << 8) == machine;
}

std::vector<std::string> LdSearch::expand(const std::string &list, const std::string &origin, bool executable) {
  std::vector<std::string> dirs;
  for (const std::string &d : split(list.c_str(), ":")) {
    std::string out;
    bool dropped = false, trusted_only = false;
    for (size_t i = 0; i < d.size();) {  // _dl_dst_substitute: $NAME and ${NAME}
      static const char *const kTokens[] = {"ORIGIN", "LIB", "PLATFORM"};
      int t = 0;
      size_t len = 0;  // what the token takes: $NAME or ${NAME}
      for (; d[i] == '$' && t < 3 && !len; t += !len) {
        const size_t n = strlen(kTokens[t]), after = i + 1 + n;
        if (!d.compare(i + 1, n + 2, std::string("{") + kTokens[t] + "}")) len = n + 3;
        else if (!d.compare(i + 1, n, kTokens[t]) && (after >= d.size() || !(isalnum((unsigned char)d[after]) || d[after] == '_')))
          len = n + 1;
      }
      if (!len) {
        out += d[i++];
        continue;
      }
      // Secure execution (_dl_dst_substitute): $ORIGIN only as an entry's start, alone or before
      // '/', else the entry is dropped; the program's then only to a trusted directory
      // (is_trusted_path_normalize: one of the system directories, or below one).
      if (t == 0 && secure_) {
        dropped = dropped || i != 0 || (len < d.size() && d[len] != '/');
        trusted_only = trusted_only || executable;
      }
      out += t == 0 ? origin : t == 1 ? lib_ : platform_;
      i += len;
    }
    dropped = dropped || (trusted_only && !at_or_below(defaults_, out));
    if (!dropped) dirs.push_back(out.empty() ? "." : out);
  }
  return dirs;
}

namespace {

bool same_file(Root &root, const std::string &a, const std::string &b) {
  int e = 0;
  const int fa = open_regular(root, a, nullptr, &e), fb = fa < 0 ? -1 : open_regular(root, b, nullptr, &e);
  struct stat x = {}, y = {};
  const bool same = fa >= 0 && fb >= 0 && !fstat(fa, &x) && !fstat(fb, &y) && same_inode(x, y);
  if (fa >= 0) close(fa);
  if (fb >= 0) close(fb);
  return same;
}

}  // namespace

bool LdSearch::find(const std::string &name, const std::vector<LoadedObject> &objects, int from, std::string *path,
                    std::string *error) {
  std::string ignored;
  if (!error) error = &ignored;
  error->clear();
  if (root->out_of_bounds()) return false;  // the caller asks root->reached: not "not found"
  for (const auto &m : mapped)
    if (m.first == name) {
      // /proc/PID/maps names the file with its links resolved; ld.so's name for it is the path
      // its search opened (elf/dl-object.c _dl_new_object keeps realname as l_name).
      *path = search(name, objects, from, path, error) && same_file(*root, *path, m.second) ? *path : m.second;
      return error->clear(), true;
    }
  return search(name, objects, from, path, error);
}

bool LdSearch::search(const std::string &name, const std::vector<LoadedObject> &objects, int from, std::string *path,
                      std::string *error) {
  if (name.find('/') != std::string::npos) return candidate(name, error) == 1 && (*path = name, true);  // a path: opened as it is
  std::vector<std::string> dirs;
  const ElfObject &self = objects[size_t(from)].elf;
  if (!self.has_runpath) {
    // The DT_RPATH of the object, of its loader and on up, then the program's (elf/dl-load.c
    // _dl_map_object); one with DT_RUNPATH has none (elf/get-dynamic-info.h); a dlopened object
    // ends the chain (dl_open_worker passes __RTLD_CALLMAP: l_loader NULL).
    for (int i = from; i >= 0; i = objects[size_t(i)].parent) {
      const LoadedObject &l = objects[size_t(i)];
      if (l.elf.has_rpath && !l.elf.has_runpath)
        for (const std::string &d : expand(l.elf.rpath, dir_of(l.path))) dirs.push_back(d);
      if (l.dlopened || objects[size_t(i)].parent >= i) break;
    }
    if (!exe.empty() && exe_elf.has_rpath && !exe_elf.has_runpath)
      for (const std::string &d : expand(exe_elf.rpath, dir_of(exe), true)) dirs.push_back(d);
  }
  for (const std::string &d : library_path)
    for (const std::string &x : expand(d, exe.empty() ? "." : dir_of(exe))) dirs.push_back(x);
  if (self.has_runpath)
    for (const std::string &d : expand(self.runpath, dir_of(objects[size_t(from)].path))) dirs.push_back(d);
  // Each directory, its hwcaps subdirectories first (elf/dl-load.c open_path): 1 found, -1 the
  // search ends there, 0 not there.
  auto open_path = [&](const std::vector<std::string> &list) {
    for (const std::string &d : list) {
      if (root->out_of_bounds()) return -1;  // a path list of thousands of entries ends at the deadline
      for (const std::string &s : subdirs_)
        if (const int c = candidate(d + "/" + s + name, error)) return c > 0 ? (*path = d + "/" + s + name, 1) : -1;
    }
    return 0;
  };
  if (const int r = open_path(dirs)) return r > 0;
  // Then /etc/ld.so.cache alone, never ld.so.conf (elf/dl-cache.c _dl_load_cache_lookup: no cache,
  // no answer), then the defaults; DF_1_NODEFLIB: no cache entry from a default directory, no defaults.
  const bool nodeflib = self.flags_1 & DF_1_NODEFLIB;
  if (!cache_read_) {
    cache_read_ = true;
    read_small(*root, "/etc/ld.so.cache", size_t(64) << 20, &cache_);
  }
  const std::string cached = ld_cache_lookup(cache_, name, is64, machine, levels_, names_);
  if (!cached.empty() && !(nodeflib && at_or_below(defaults_, cached)))
    if (const int c = candidate(cached, error)) return c > 0 && (*path = cached, true);
  return !nodeflib && open_path(defaults_) > 0;
}

std::string LdSearch::load_closure(std::vector<LoadedObject> *objects, int start, bool symbols) {
  std::string missing;
  for (size_t i = size_t(start); i < objects->size() && objects->size() < 512; i++) {
    const std::vector<std::string> needed = (*objects)[i].elf.needed;
    for (const std::string &n : needed) {
      bool seen = false;  // _dl_name_match_p: a name or soname already loaded
      for (const LoadedObject &o : *objects) seen = seen || o.name == n || o.elf.soname == n;
      if (seen) continue;
      std::string path, error;
      if (!find(n, *objects, int(i), &path, &error)) {
        if (!root->reached.empty())  // a bound, not ld.so's answer: the rest is not read either
          return missing.empty() ? "could not tell: doctor's bound on reading was reached: " + root->reached : missing;
        if (missing.empty()) missing = !error.empty() ? error : n + ": cannot open shared object file: No such file or directory";
        continue;
      }
      LoadedObject o;
      o.name = n, o.path = path, o.parent = int(i);
      read_elf_in(*root, path, &o.elf, symbols);
      objects->push_back(std::move(o));
    }
  }
  return missing;
}

}  // namespace cli
}  // namespace ucxtls
