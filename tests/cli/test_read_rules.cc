// doctor's reader, table-tested on small synthesized objects (cli/elf.h, cli/ld_search.h): the
// string a function body returns, decoded per machine (x86-64, AArch64, and every other machine
// or class as "could not tell"); relative relocations of both machines; glibc 2.36's legacy
// hwcap subdirectory list. The real builds are tests/cli/test_doctor_aarch64.py's.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <elf.h>
#include <string.h>

#include <string>
#include <vector>

#include "../../cli/elf.h"
#include "../../cli/ld_search.h"

using namespace ucxtls::cli;

namespace {

// One "file" mapped at address 0 (one PT_LOAD: file offset == address): code at 0x1000, the
// literal wherever a row puts it.
struct Image {
  std::string bytes = std::string(0x3000, '\0');
  ElfObject o;
  Image(unsigned machine, bool is64) {
    o.machine = machine, o.is64 = is64;
    o.loads.push_back({0, bytes.size(), 0});
  }
  void put(uint64_t at, const std::string &b) { bytes.replace(size_t(at), b.size(), b); }
  void code(uint64_t at, const std::vector<uint32_t> &words) {  // AArch64 instructions, little-endian
    std::string b;
    for (uint32_t w : words)
      for (int i = 0; i < 4; i++) b += char(w >> (8 * i) & 0xff);
    put(at, b);
  }
  ReadAt reader() const {
    const std::string *b = &bytes;
    return [b](void *out, size_t n, off_t off) -> ssize_t {
      if (off < 0 || size_t(off) >= b->size()) return 0;
      const size_t k = std::min(n, b->size() - size_t(off));
      memcpy(out, b->data() + off, k);
      return ssize_t(k);
    };
  }
  std::string returned(uint64_t at = 0x1000) const {
    ElfSymbol fn;
    fn.name = "ucp_get_version_string", fn.value = at, fn.size = 16, fn.type = STT_FUNC;
    return returned_string(reader(), o, fn);
  }
};

// The encodings (Arm ARM C6.2): adrp/adr x0 with a 21-bit immediate, add x0, x0, #imm12.
uint32_t adrp_x0(int64_t pages) { return 0x90000000u | uint32_t(pages & 3) << 29 | uint32_t((pages >> 2) & 0x7ffff) << 5; }
uint32_t adr_x0(int64_t bytes) { return 0x10000000u | uint32_t(bytes & 3) << 29 | uint32_t((bytes >> 2) & 0x7ffff) << 5; }
uint32_t add_x0(uint32_t imm12) { return 0x91000000u | imm12 << 10; }
const uint32_t kRet = 0xd65f03c0, kNop = 0xd503201f, kBtiC = 0xd503245f, kPaciasp = 0xd503233f, kAutiasp = 0xd50323bf,
               kStpFrame = 0xa9bf7bfd, kMovFrame = 0x910003fd, kLdpFrame = 0xa8c17bfd, kRetaa = 0xd65f0bff;

}  // namespace

TEST_CASE("aarch64: the string ucp_get_version_string returns, for each body compilers make") {
  struct Row {
    const char *what;
    std::vector<uint32_t> body;  // at 0x1000
    uint64_t literal;            // where "1.22.0" is
    const char *want;
  } rows[] = {
      {"adrp x0; add x0, x0, #lo12; ret (GCC and Clang -O2: Debian's, RAPIDS', NIXL's)",
       {adrp_x0(1), add_x0(0x234), kRet}, 0x2234, "1.22.0"},
      {"the literal on a page below the code (negative adrp)", {adrp_x0(-1), add_x0(0x10), kRet}, 0x0010, "1.22.0"},
      {"bti c first (-mbranch-protection=standard)", {kBtiC, adrp_x0(1), add_x0(0x8), kRet}, 0x2008, "1.22.0"},
      {"-O0 frame record and pac-ret", {kPaciasp, kStpFrame, kMovFrame, adrp_x0(1), add_x0(0x40), kLdpFrame, kAutiasp, kRet},
       0x2040, "1.22.0"},
      {"retaa", {kPaciasp, adrp_x0(1), add_x0(0x40), kRetaa}, 0x2040, "1.22.0"},
      {"nop; adr x0; ret (a linker's relaxation of adrp/add)", {kNop, adr_x0(0x0ffc), kRet}, 0x2000, "1.22.0"},
      {"add with lsl #12", {adrp_x0(-1), add_x0(0x002) | 1u << 22, add_x0(0x100), kRet}, 0x2100, "1.22.0"},
      {"a tail call (b): not followed, could not tell", {0x14000010u}, 0x2000, ""},
      {"adrp into another register: could not tell", {adrp_x0(1) | 1u, add_x0(0x0), kRet}, 0x2000, ""},
      {"add without adrp: could not tell", {add_x0(0x10), kRet}, 0x2000, ""},
      {"a load from the GOT (ldr x0, [x0]): could not tell", {adrp_x0(1), 0xf9400000u, kRet}, 0x2000, ""},
      {"no ret: could not tell", {adrp_x0(1), add_x0(0x0), kNop, kNop, kNop, kNop, kNop, kNop}, 0x2000, ""},
  };
  for (const Row &r : rows) {
    CAPTURE(r.what);
    Image im(EM_AARCH64, true);
    im.code(0x1000, r.body);
    im.put(r.literal, std::string("1.22.0") + '\0');
    CHECK(im.returned() == r.want);
  }
}

TEST_CASE("x86-64's lea/ret still reads; aarch64 code under another class or machine is could not tell") {
  Image x86(EM_X86_64, true);
  x86.put(0x1000, std::string("\xf3\x0f\x1e\xfa\x48\x8d\x05\xf5\x0f\x00\x00\xc3", 12));  // endbr64; lea 0xff5(%rip),%rax; ret
  x86.put(0x2000, std::string("1.23.0") + '\0');
  CHECK(x86.returned() == "1.23.0");
  const struct {
    unsigned machine;
    bool is64;
  } others[] = {{EM_AARCH64, false}, {EM_ARM, false}, {EM_RISCV, true}, {EM_386, false}, {EM_PPC64, true}, {0, true}};
  for (const auto &m : others) {
    CAPTURE(m.machine);
    CAPTURE(m.is64);
    Image im(m.machine, m.is64);
    im.code(0x1000, {adrp_x0(1), add_x0(0x0), kRet});  // a body aarch64 would read
    im.put(0x2000, std::string("1.22.0") + '\0');
    CHECK(im.returned() == "");
    CHECK(returned_address(reinterpret_cast<const unsigned char *>(im.bytes.data()) + 0x1000, 12, 0x1000, m.machine) ==
          (m.machine == EM_AARCH64 ? 0x2000u : 0u));  // the decoder is per machine; the class is returned_string's
  }
}

TEST_CASE("relative relocations: R_AARCH64_RELATIVE and R_X86_64_RELATIVE, no other kind") {
  const struct {
    unsigned machine, type;
    bool found;
  } rows[] = {{EM_AARCH64, R_AARCH64_RELATIVE, true}, {EM_X86_64, R_X86_64_RELATIVE, true},
              {EM_AARCH64, R_AARCH64_ABS64, false}, {EM_AARCH64, R_AARCH64_GLOB_DAT, false},
              {EM_AARCH64, R_X86_64_RELATIVE, false}, {EM_RISCV, R_AARCH64_RELATIVE, false}};
  for (const auto &r : rows) {
    CAPTURE(r.machine);
    CAPTURE(r.type);
    Image im(r.machine, true);
    Elf64_Rela rela[2] = {{0x2800, ELF64_R_INFO(0, R_AARCH64_JUMP_SLOT), 0x1}, {0x2808, ELF64_R_INFO(0, r.type), 0x2100}};
    im.put(0x2a00, std::string(reinterpret_cast<const char *>(rela), sizeof rela));
    im.o.rela = 0x2a00, im.o.relasz = sizeof rela;
    CHECK(relocated_pointer(im.reader(), im.o, 0x2808) == (r.found ? 0x2100u : 0u));
    CHECK(relocation_to(im.reader(), im.o, 0x2100) == (r.found ? 0x2808u : 0u));
  }
}

TEST_CASE("glibc 2.36's legacy hwcap subdirectories (_dl_important_hwcaps), as LD_DEBUG=libs lists them") {
  using V = std::vector<std::string>;
  // An AMD x86-64 CPU (this machine's ld.so: tls/x86_64/x86_64, tls/x86_64, tls, x86_64/x86_64, x86_64).
  CHECK(legacy_hwcap_subdirs({"x86_64", "x86_64", "tls"}) ==
        V{"tls/x86_64/x86_64/", "tls/x86_64/", "tls/", "x86_64/x86_64/", "x86_64/", ""});
  // An Intel CPU with AVX-512 (hwcap avx512_1, platform haswell).
  CHECK(legacy_hwcap_subdirs({"x86_64", "avx512_1", "haswell", "tls"}) ==
        V{"tls/haswell/avx512_1/x86_64/", "tls/haswell/avx512_1/", "tls/haswell/x86_64/", "tls/haswell/",
          "tls/avx512_1/x86_64/", "tls/avx512_1/", "tls/x86_64/", "tls/", "haswell/avx512_1/x86_64/", "haswell/avx512_1/",
          "haswell/x86_64/", "haswell/", "avx512_1/x86_64/", "avx512_1/", "x86_64/", ""});
  // AArch64 with LSE atomics (Grace), and without.
  CHECK(legacy_hwcap_subdirs({"atomics", "aarch64", "tls"}) ==
        V{"tls/aarch64/atomics/", "tls/aarch64/", "tls/atomics/", "tls/", "aarch64/atomics/", "aarch64/", "atomics/", ""});
  CHECK(legacy_hwcap_subdirs({"aarch64", "tls"}) == V{"tls/aarch64/", "tls/", "aarch64/", ""});
  CHECK(legacy_hwcap_subdirs({}) == V{""});
}

TEST_CASE("this CPU's lists: aarch64 objects get no x86 name and no glibc-hwcaps level (glibc 2.36 has none)") {
  std::vector<std::string> levels, names;
  hwcaps_of_cpu(true, EM_AARCH64, &levels, &names);
  CHECK(levels.empty());
  for (const std::string &n : names) CHECK((n == "atomics" || n == "aarch64" || n == "tls"));
  hwcaps_of_cpu(true, EM_X86_64, &levels, &names);
  for (const std::string &l : levels) CHECK(l.compare(0, 7, "x86-64-") == 0);
  REQUIRE(!names.empty());
  CHECK(names.front() == "x86_64");
  CHECK(names.back() == "tls");
}
