// Unit tests of doctor's reading (cli/elf.h, ld_search.h, ucx_read.h, root_fs.h), each row at a
// rule's edge, where a slip of one comparison or one order changes what doctor says: a range that
// ends where its segment does, ld.so's order and separators, UCX's order of ucx.conf files, and
// what secure execution leaves out. The file rows read a root of their own (a temporary
// directory), through the same Root that doctor --pid reads a process's root with.
#include <doctest/doctest.h>
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../../cli/elf.h"
#include "../../cli/ld_search.h"
#include "../../cli/root_fs.h"
#include "../../cli/ucx_build.h"
#include "../../cli/ucx_read.h"
#include "temp_tree.h"

using namespace ucxtls::cli;

namespace {

// The bytes of a file, read as doctor reads one (short at the end).
ReadAt bytes_of(const std::string &file) {
  return [file](void *buf, size_t n, off_t off) -> ssize_t {
    if (off < 0 || size_t(off) >= file.size()) return 0;
    const size_t k = std::min(n, file.size() - size_t(off));
    memcpy(buf, file.data() + off, k);
    return ssize_t(k);
  };
}

// A directory standing for a process's root, with the files a row puts in it.
struct TreeRoot : TempTree {
  // The start of a 64-bit x86-64 ELF object: all ld.so's open_verify (and LdSearch::candidate) reads.
  void library(const std::string &path) {
    std::string h(64, '\0');
    memcpy(&h[0], ELFMAG, SELFMAG);
    h[EI_CLASS] = ELFCLASS64, h[EI_DATA] = ELFDATA2LSB, h[EI_VERSION] = EV_CURRENT;
    h[16] = ET_DYN, h[18] = char(EM_X86_64);
    file(path, h);
  }
};

// Where ld.so finds `name` for an object at /app/libx.so with this RUNPATH, in a process with this
// environment; "" when nowhere.
std::string found(TreeRoot &t, const std::vector<std::string> &env, bool secure, const char *runpath) {
  Root root;
  REQUIRE(root.open(t.root, "/", "", 0));
  LdSearch ld;
  ld.init(&root, env, secure, "");
  std::vector<LoadedObject> objs(1);
  objs[0].name = objs[0].path = "/app/libx.so";
  objs[0].elf.is64 = true, objs[0].elf.machine = EM_X86_64;
  objs[0].elf.has_runpath = runpath != nullptr;
  objs[0].elf.runpath = runpath ? runpath : "";
  std::string path;
  return ld.find("libneeded.so.0", objs, 0, &path) ? path : "";
}

}  // namespace

// A slip: offset_of's end test made strict (`vaddr - l.vaddr < l.filesz - n`): a range that ends
// exactly at its segment's end is refused, and a version string placed last in .rodata (the
// linker puts a short literal anywhere) is "not read".
TEST_CASE("ELF: a range that ends exactly at its segment's end is readable; a byte more is not") {
  ElfObject o;
  o.is64 = true, o.machine = EM_X86_64;
  o.loads.push_back({0x1000, 0x100, 0x200});  // vaddr 0x1000..0x1100 from file offset 0x200
  CHECK(o.offset_of(0x1000, 0x100) == 0x200);  // the whole segment
  CHECK(o.offset_of(0x10f8, 8) == 0x2f8);      // its last 8 bytes
  CHECK(o.offset_of(0x10ff, 1) == 0x2ff);      // its last byte
  CHECK(o.offset_of(0x10f9, 8) == -1);         // one byte past its end
  CHECK(o.offset_of(0x1000, 0x101) == -1);
  CHECK(o.offset_of(0x1100, 1) == -1);
  // A version string whose NUL is the segment's last byte, read as doctor reads a libucp's
  // version (returned_string: `lea disp32(%rip),%rax; ret` at the function, elf_string at the
  // target). The file goes on past the segment (with no NUL): only the segment bounds the string.
  std::string file(0x400, 'x');
  const unsigned char code[] = {0x48, 0x8d, 0x05, 0, 0, 0, 0, 0xc3};  // lea 0(%rip),%rax; ret
  memcpy(&file[0x200], code, sizeof code);
  const int32_t disp = int32_t(0x10f8 - (0x1000 + 7));  // %rip is the next instruction's address
  memcpy(&file[0x203], &disp, 4);
  memcpy(&file[0x2f8], "v1.17.0", 8);
  std::string s;
  CHECK(elf_string(bytes_of(file), o, 0x10f8, 128, &s));
  CHECK(s == "v1.17.0");
  ElfSymbol fn;
  fn.name = "ucp_get_version_string", fn.value = 0x1000, fn.type = STT_FUNC;
  CHECK(returned_string(bytes_of(file), o, fn) == "v1.17.0");
  // A 7-byte string (UCX's own "1.22.0") ending at the segment's last byte: read as well (the
  // reader once halved its length from 128 and jumped from 8 bytes, which do not fit, to 4).
  memcpy(&file[0x2f9], "1.22.0", 7);
  CHECK(elf_string(bytes_of(file), o, 0x10f9, 128, &s));
  CHECK(s == "1.22.0");
  // The control: one byte further, the NUL falls outside the segment, and the string is not read.
  memcpy(&file[0x2f9], "v1.17.0", 8);
  CHECK_FALSE(elf_string(bytes_of(file), o, 0x10f9, 128, &s));
}

// glibc's elf/dl-load.c: _dl_init_paths splits LD_LIBRARY_PATH with fillin_rpath(..., ":;", ...),
// and _dl_map_object searches the loader chain's DT_RPATH (none here: the object has DT_RUNPATH),
// then LD_LIBRARY_PATH, then the object's DT_RUNPATH. Under secure execution ld.so ignores
// LD_LIBRARY_PATH (elf/rtld.c process_envvars, unsecvars.h).
TEST_CASE("ld.so's search: LD_LIBRARY_PATH (split at ':' and ';') before RUNPATH; none under secure execution") {
  struct Split {
    const char *value;
    std::vector<std::string> dirs;
  } splits[] = {
      {"LD_LIBRARY_PATH=/nonexistent;/llp", {"/nonexistent", "/llp"}},
      {"LD_LIBRARY_PATH=/a:/b;/c", {"/a", "/b", "/c"}},
      {"LD_LIBRARY_PATH=;/a", {".", "/a"}},  // an empty entry is the working directory
      {"LD_LIBRARY_PATH=/a;", {"/a", "."}},
  };
  auto joined = [](const std::vector<std::string> &dirs) {
    std::string j;
    for (const std::string &d : dirs) j += "[" + d + "]";
    return j;
  };
  for (const Split &r : splits) {
    CAPTURE(std::string(r.value));
    CHECK(joined(library_path_of({r.value}, false)) == joined(r.dirs));
    CHECK(joined(library_path_of({r.value}, true)) == "");
  }
  TreeRoot t;
  t.library("/llp/libneeded.so.0");
  t.library("/rp/libneeded.so.0");
  struct Row {
    const char *name;
    std::vector<std::string> env;
    bool secure;
    const char *want;
  } rows[] = {
      {"LD_LIBRARY_PATH before RUNPATH", {"LD_LIBRARY_PATH=/llp"}, false, "/llp/libneeded.so.0"},
      {"';' separates: /nonexistent;/llp", {"LD_LIBRARY_PATH=/nonexistent;/llp"}, false, "/llp/libneeded.so.0"},
      {"':' separates: /nonexistent:/llp", {"LD_LIBRARY_PATH=/nonexistent:/llp"}, false, "/llp/libneeded.so.0"},
      {"no LD_LIBRARY_PATH: RUNPATH", {}, false, "/rp/libneeded.so.0"},
      {"LD_LIBRARY_PATH without the library: RUNPATH", {"LD_LIBRARY_PATH=/nonexistent"}, false, "/rp/libneeded.so.0"},
      {"secure execution: LD_LIBRARY_PATH ignored, RUNPATH", {"LD_LIBRARY_PATH=/llp"}, true, "/rp/libneeded.so.0"},
  };
  for (const Row &r : rows) {
    CAPTURE(std::string(r.name));
    CHECK(found(t, r.env, r.secure, "/rp") == std::string(r.want));
  }
  // Secure execution with no RUNPATH: only the cache and the default directories, which lack it.
  CHECK(found(t, {"LD_LIBRARY_PATH=/llp"}, true, nullptr).empty());
}

// UCX's ucs_config_parse_config_files (src/ucs/config/parser.c, v1.13.0 and v1.22.0 alike): the
// system file, the library's, $HOME/ucx.conf, $UCX_CONFIG_DIR/ucx.conf, ./ucx.conf, each parsed with
// override=1 (ucs_config_parse_config_file_line: a later file's value replaces the one before).
// The environment wins over every file.
TEST_CASE("ucx.conf: UCX's order, $HOME before $UCX_CONFIG_DIR, the later file winning") {
  TreeRoot t;
  t.file("/etc/ucx/ucx.conf", "UCX_MODULE_DIR=/from-etc\n");
  t.file("/home/u/ucx.conf", "UCX_MODULE_DIR=/from-home\n");
  t.file("/conf/ucx.conf", "UCX_MODULE_DIR=/from-config-dir\n");
  t.file("/work/ucx.conf", "UCX_MODULES=^ib\n");  // the working directory's: another key
  struct Row {
    const char *name;
    std::vector<std::string> env;
    const char *value, *from;
  } rows[] = {
      {"both: $UCX_CONFIG_DIR's (read after $HOME's)", {"HOME=/home/u", "UCX_CONFIG_DIR=/conf"}, "/from-config-dir",
       "/conf/ucx.conf"},
      {"both, the environment in the other order: the same", {"UCX_CONFIG_DIR=/conf", "HOME=/home/u"}, "/from-config-dir",
       "/conf/ucx.conf"},
      {"$HOME alone: over the system file", {"HOME=/home/u"}, "/from-home", "/home/u/ucx.conf"},
      {"$UCX_CONFIG_DIR alone", {"UCX_CONFIG_DIR=/conf"}, "/from-config-dir", "/conf/ucx.conf"},
      {"neither: the system file", {}, "/from-etc", "/etc/ucx/ucx.conf"},
      {"the environment wins over every file", {"HOME=/home/u", "UCX_CONFIG_DIR=/conf", "UCX_MODULE_DIR=/env"}, "/env",
       "environment"},
  };
  for (const Row &r : rows) {
    CAPTURE(std::string(r.name));
    Root root;
    REQUIRE(root.open(t.root, "/work", "", 0));
    BuildPlace place;
    place.root = &root;
    place.env = r.env;
    std::string from;
    CHECK(ucx_setting(place, "", "UCX_MODULE_DIR", &from) == std::string(r.value));
    CHECK(from == std::string(r.from));
  }
  // ./ucx.conf is read last: over $UCX_CONFIG_DIR's.
  t.file("/work/ucx.conf", "UCX_MODULE_DIR=/from-cwd\n");
  Root root;
  REQUIRE(root.open(t.root, "/work", "", 0));
  BuildPlace place;
  place.root = &root;
  place.env = {"HOME=/home/u", "UCX_CONFIG_DIR=/conf"};
  std::string from;
  CHECK(ucx_setting(place, "", "UCX_MODULE_DIR", &from) == "/from-cwd");
  CHECK(from == "ucx.conf");
}

// A slip: read_at no longer clamps a read to what is left of the byte budget (`if (n >
// root.bytes_left) n = root.bytes_left;` gone): the budget is subtracted past zero, wraps, and
// never ends a read again, so a 1 TiB segment is read to its end (tests/cli/test_doctor_files.py
// times it). Each read gets at most what is left, and the budget ends at zero, not past it.
TEST_CASE("root_fs: a read gets at most what is left of doctor's byte budget") {
  TreeRoot t;
  t.file("/f", std::string(4096, 'a'));
  Root root;
  REQUIRE(root.open(t.root, "/", "", 0));
  root.bytes_left = 1000;
  int e = 0;
  const int fd = open_regular(root, "/f", nullptr, &e);
  REQUIRE(fd >= 0);
  char buf[4096];
  CHECK(read_at(root, fd, buf, 600, 0) == 600);
  CHECK(root.bytes_left == 400);
  CHECK(read_at(root, fd, buf, sizeof buf, 600) == 400);  // clamped
  CHECK(root.bytes_left == 0);
  CHECK(root.out_of_bounds());
  CHECK(read_at(root, fd, buf, sizeof buf, 0) == -1);  // spent: nothing more is read
  close(fd);
}
