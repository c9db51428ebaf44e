// Fuzz target: what doctor reads of a UCX build, from one buffer: the buffer as an ELF object
// (program and section headers, dynamic entries, symbols, bytes at addresses, relocations, the
// transports and the compiled module directory), as an ld.so.cache, as a ucx.conf, as
// LD_LIBRARY_PATH, and its leading bytes as a module file name and a UCX_MODULES list. Invariants:
// nothing read falls outside the buffer (ASan), every answer is one of the buffer's own strings or
// made of them, no table is read larger than the file (the reader never allocates a claimed size).
#include <string.h>

#include <string>
#include <vector>

#include "../../cli/elf.h"
#include "fuzz_input.h"
#include "../../cli/ld_search.h"
#include "../../cli/ucx_read.h"

using namespace ucxtls::cli;

namespace {

bool in(const std::string &hay, const std::string &s) { return s.empty() || hay.find(s) != std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string buf(reinterpret_cast<const char *>(data), size);
  size_t reads = 0;
  const ReadAt read = [&](void *b, size_t n, off_t off) -> ssize_t {
    reads++;
    if (off < 0 || uint64_t(off) >= buf.size()) return 0;
    const size_t k = std::min(n, buf.size() - size_t(off));
    memcpy(b, buf.data() + off, k);
    return ssize_t(k);
  };

  // The ELF reader, symbols too, and everything doctor asks of an object.
  ElfObject o;
  std::string why;
  if (read_elf(read, &o, true, &why)) {
    FUZZ_CHECK(o.defined.size() <= buf.size());  // each symbol is an entry of the file
    for (const std::string &n : o.needed) FUZZ_CHECK(n.size() < 4096 && in(buf, n));
    FUZZ_CHECK(in(buf, o.soname) && in(buf, o.rpath) && in(buf, o.runpath));
    for (const std::string &tl : elf_transports(read, o)) FUZZ_CHECK(!tl.empty() && tl.size() < 10 && in(buf, tl + '\0'));
    FUZZ_CHECK(in(buf, compiled_module_dir(read, o)));
    for (size_t i = 0; i < o.defined.size() && i < 64; i++) {
      const ElfSymbol &s = o.defined[i];
      FUZZ_CHECK(in(buf, s.name));
      const std::string v = returned_string(read, o, s);
      FUZZ_CHECK(v.size() < 128 && in(buf, v));
      const std::string b = elf_bytes(read, o, s.value, 16);
      FUZZ_CHECK(b.empty() || (b.size() == 16 && in(buf, b)));
      relocated_pointer(read, o, s.value);
      relocation_to(read, o, s.value);
    }
    for (uint64_t at : find_text(read, o, "MODULE_DIR")) {
      std::string s;
      if (elf_string(read, o, at, 64, &s)) FUZZ_CHECK(s.size() < 64 && in(buf, s));
    }
  } else {
    FUZZ_CHECK(!why.empty());
  }

  // ld.so.cache: a name from the front of the buffer, for both classes.
  const std::string name = buf.substr(0, std::min<size_t>(buf.find('\0'), 32));
  for (bool is64 : {true, false}) {
    const std::string p = ld_cache_lookup(buf, name.empty() ? "libucp.so.0" : name, is64, is64 ? 62 : 3);
    FUZZ_CHECK(p.find('\0') == std::string::npos && in(buf, p));
  }

  // ucx.conf: the values UCX reads for the module rules.
  for (const char *var : {"UCX_MODULE_DIR", "UCX_MODULES", "UCX_TLS"}) {
    std::string v;
    if (conf_value(buf, var, &v)) FUZZ_CHECK(v.find('\n') == std::string::npos && in(buf, v));
  }

  // LD_LIBRARY_PATH as glibc splits it: the last of the environment, never empty entries.
  FuzzInput in_fields(data, size);
  std::vector<std::string> env;
  while (const char *f = in_fields.field())
    if (env.size() < 64) env.push_back(std::string("LD_LIBRARY_PATH=") + f);
  size_t total = 0;
  for (const std::string &d : library_path_of(env, false)) {
    FUZZ_CHECK(!d.empty());
    total += d.size();
  }
  FUZZ_CHECK(library_path_of(env, true).empty());
  FUZZ_CHECK(total <= size + 64 * 2);

  // The module-directory rules: a file name and an allow list from the buffer's first fields.
  FuzzInput f2(data, size);
  const char *file = f2.field(), *framework = f2.field(), *libucs = f2.field(), *modules = f2.field();
  if (file && framework && libucs) {
    const std::string ext = module_extension(libucs);
    FUZZ_CHECK(!ext.empty() && ext[0] == '.');
    std::string m;
    if (module_name(file, framework, ext, &m)) {
      FUZZ_CHECK(m.find('_') == std::string::npos && std::string(file) == "lib" + std::string(framework) + "_" + m + ext);
      if (modules) {
        FUZZ_CHECK(module_enabled("all", m));
        const bool allowed = module_enabled(modules, m);
        // "^X" denies what X allows, except where X's first name is all (parser.c: all, and ^all, allow all).
        const bool all_first = !strncmp(modules, "all", 3) && (!modules[3] || modules[3] == ',');
        if (modules[0] && modules[0] != '^' && !all_first) FUZZ_CHECK(module_enabled("^" + std::string(modules), m) == !allowed);
        if (all_first) FUZZ_CHECK(allowed && allow_list_valid(modules) == !modules[3]);
      }
    }
  }
  return 0;
}
