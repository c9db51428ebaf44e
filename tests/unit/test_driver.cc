// Unit tests of the driver tier's pure parts: the report the helper writes and the cache holds
// (format and parse), which driver results count as answers, where the cache is and when it is
// trusted, how a process's visibility variables narrow the saved devices, and how decide() uses
// a driver answer.
#include <doctest/doctest.h>
#include <string.h>

#include <string>
#include <vector>

#include "core.h"
#include "driver_report.h"

using namespace ucxtls;

namespace {

const Tri Y = Tri::yes, N = Tri::no, U = Tri::unknown;

// A report parsed from its own copy of the text (parsing is in place).
struct Parsed {
  std::vector<char> text;
  bool ok = false;
  const char *why = nullptr;
  DriverReport r;
};

Parsed parse(const std::string &text) {
  Parsed p;
  p.text.assign(text.begin(), text.end());
  p.text.push_back('\0');
  p.ok = parse_driver_report(p.text.data(), text.size(), &p.r, &p.why);
  return p;
}

const std::string kHead = "ucxtls-driver 2\n";
const char kUuid0[] = "GPU-6b8f3a4e-2a1c-9d7e-8f00-1c2d3e4f5a6b";
const char kUuid1[] = "GPU-0d7e2f11-8c4b-4a3d-b2e1-9f8e7d6c5b4a";
const char kUuid2[] = "GPU-0d7e9999-0000-4a3d-b2e1-9f8e7d6c5b4a";

std::string cuda_devices(int n) {
  const char *ids[] = {kUuid0, kUuid1, kUuid2};
  std::string s;
  for (int i = 0; i < n; i++) s += "cuda-device " + std::to_string(i) + " " + ids[i % 3] + " NVIDIA H200\n";
  return s;
}

}  // namespace

TEST_CASE("driver report: a well-formed report, with devices and the boot it belongs to") {
  Parsed p = parse(kHead + "boot 0b1c9f2e-5d1a-4f7e-9a43-3c8d2b7e6f10\ncuda answer 2 0 CUDA_SUCCESS\n" + cuda_devices(2) +
                   "ze answer 1 0 ZE_RESULT_SUCCESS\nze-device 0 00112233445566778899aabbccddeeff Intel(R) Data Center GPU Max 1550\nend\n");
  REQUIRE(p.ok);
  CHECK(std::string(p.r.boot) == "0b1c9f2e-5d1a-4f7e-9a43-3c8d2b7e6f10");
  CHECK(p.r.cuda.answer.answered == Y);
  CHECK(p.r.cuda.answer.present == 2);
  CHECK(p.r.cuda.answer.count == 2);
  CHECK(std::string(p.r.cuda.answer.name) == "CUDA_SUCCESS");
  REQUIRE(p.r.cuda.ndev == 2);
  CHECK(std::string(p.r.cuda.dev[1].id) == kUuid1);
  CHECK(std::string(p.r.cuda.dev[1].name) == "NVIDIA H200");
  REQUIRE(p.r.ze.ndev == 1);
  CHECK(std::string(p.r.ze.dev[0].name) == "Intel(R) Data Center GPU Max 1550");

  struct Row {
    const char *text;
    Tri cuda;
    int cuda_count;
    long cuda_code;
    const char *cuda_name;
    Tri ze;
    int ze_count;
    long ze_code;
    const char *ze_name;
  } rows[] = {
      {"cuda answer 0 100 CUDA_ERROR_NO_DEVICE\nze answer 0 2013265921 ZE_RESULT_ERROR_UNINITIALIZED\nend\n",
       Y, 0, 100, "CUDA_ERROR_NO_DEVICE", Y, 0, 0x78000001, "ZE_RESULT_ERROR_UNINITIALIZED"},
      {"cuda unknown 0 -1 libcuda.so.1 not found\nze answer 0 0 ZE_RESULT_SUCCESS\nend\n",
       N, 0, -1, "libcuda.so.1 not found", Y, 0, 0, "ZE_RESULT_SUCCESS"},
      // order of the families does not matter; unknown kinds of line (a newer helper's) are ignored
      {"ze answer 0 0 ZE_RESULT_SUCCESS\nversion 12080\ncuda answer 0 100 CUDA_ERROR_NO_DEVICE\nend\n",
       Y, 0, 100, "CUDA_ERROR_NO_DEVICE", Y, 0, 0, "ZE_RESULT_SUCCESS"},
      // an "unknown" answer never carries a count
      {"cuda unknown 7 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH\nze unknown 0 -1 x\nend\n",
       N, 0, 803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", N, 0, -1, "x"},
      // blanks around fields; the name keeps its inner spaces
      {"cuda  unknown\t1  0   a b  c  \nze answer 0 0 Z\nend\n", N, 0, 0, "a b  c", Y, 0, 0, "Z"},
      // anything after "end" is not read
      {"cuda answer 0 100 A\nze answer 0 0 B\nend\ngarbage\n", Y, 0, 100, "A", Y, 0, 0, "B"},
  };
  for (const Row &r : rows) {
    CAPTURE(r.text);
    Parsed q = parse(kHead + r.text);
    REQUIRE(q.ok);
    CHECK(q.r.boot == nullptr);
    CHECK(q.r.cuda.answer.answered == r.cuda);
    CHECK(q.r.cuda.answer.present == r.cuda_count);
    CHECK(q.r.cuda.answer.code == r.cuda_code);
    CHECK(std::string(q.r.cuda.answer.name) == r.cuda_name);
    CHECK(q.r.ze.answer.answered == r.ze);
    CHECK(q.r.ze.answer.present == r.ze_count);
    CHECK(q.r.ze.answer.code == r.ze_code);
    CHECK(std::string(q.r.ze.answer.name) == r.ze_name);
  }
}

TEST_CASE("driver report: anything incomplete or malformed is no report at all, and says why") {
  const std::string ok2 = "cuda answer 2 0 A\n" + cuda_devices(2) + "ze answer 0 0 B\n";
  struct Row {
    std::string text;
    const char *why;
  } rows[] = {
      {"", "empty"},
      {kHead, "incomplete"},
      {"ucxtls-driver 1\n" + ok2 + "end\n", "not a driver report"},  // a format we do not know
      {"ucxtls-probe 1\ncuda answer 1 0 A\nze answer 1 0 B\nend\n", "not a driver report"},  // the old helper's
      {ok2 + "end\n", "not a driver report"},                           // no header
      {kHead + ok2, "incomplete"},                                       // cut before "end"
      {kHead + ok2 + "end", "incomplete"},                               // "end" without its newline
      {kHead + ok2.substr(0, ok2.size() - 5), "incomplete"},             // cut mid-line
      {kHead + "cuda answer 1 0 A\n" + cuda_devices(1) + "end\n", "missing"},  // ze missing
      {kHead + "ze answer 0 0 B\nend\n", "missing"},                   // cuda missing
      {kHead + ok2 + "cuda answer 0 0 A\nend\n", "family line"},        // twice
      {kHead + "cuda yes 0 0 A\nze answer 0 0 B\nend\n", "family line"},  // unknown status
      {kHead + "cuda answer -1 0 A\nze answer 0 0 B\nend\n", "family line"},  // negative count
      {kHead + "cuda answer 1000001 0 A\nze answer 0 0 B\nend\n", "family line"},  // absurd count
      {kHead + "cuda answer 1x 0 A\nze answer 0 0 B\nend\n", "family line"},  // not a number
      {kHead + "cuda answer 0 0x10 A\nze answer 0 0 B\nend\n", "family line"},  // codes are decimal
      {kHead + "cuda answer 0 0\nze answer 0 0 B\nend\n", "family line"},  // no name
      {kHead + "cuda answer 0 99999999999999999999 A\nze answer 0 0 B\nend\n", "family line"},  // overflow
      // device lines: as many as the count says, numbered in order, after their own family's line
      {kHead + "cuda answer 2 0 A\n" + cuda_devices(1) + "ze answer 0 0 B\nend\n", "do not match"},
      {kHead + "cuda answer 1 0 A\n" + cuda_devices(2) + "ze answer 0 0 B\nend\n", "do not match"},
      {kHead + "cuda answer 2 0 A\ncuda-device 1 GPU-a x\ncuda-device 0 GPU-b y\nze answer 0 0 B\nend\n", "device line"},
      {kHead + "cuda unknown 0 -1 A\n" + cuda_devices(1) + "ze answer 0 0 B\nend\n", "device line"},
      {kHead + "cuda answer 1 0 A\nze answer 0 0 B\n" + cuda_devices(1) + "end\n", "device line"},
      {kHead + "cuda answer 1 0 A\ncuda-device 0 GPU-a\x01 x\nze answer 0 0 B\nend\n", "device line"},  // control byte
      {kHead + "cuda answer 1 0 A\ncuda-device 0\nze answer 0 0 B\nend\n", "device line"},  // no id
      // a long id with a byte that is not printable ASCII deep inside (the 8-byte scan)
      {kHead + "cuda answer 1 0 A\ncuda-device 0 GPU-0123456789abcdef\x7f" "0123456789 n\nze answer 0 0 B\nend\n", "device line"},
      {kHead + "cuda answer 1 0 A\ncuda-device 0 GPU-0123456789abcdef\xe9" "0123456789 n\nze answer 0 0 B\nend\n", "device line"},
      {kHead + "cuda answer 1 0 A\ncuda-device 0 GPU-0123456789abcdef\x1f" "0123456789 n\nze answer 0 0 B\nend\n", "device line"},
      {kHead + "cuda answer 1 0 A\ncuda-device 0 " + std::string(60, 'a') + " n\nze answer 0 0 B\nend\n", "device line"},
      // the boot line: once, one id of hex digits and dashes
      {kHead + "boot a\nboot b\n" + ok2 + "end\n", "boot line"},
      {kHead + "boot XYZ\n" + ok2 + "end\n", "boot line"},
      {kHead + "boot\n" + ok2 + "end\n", "boot line"},
      {"!exec 2\n", "not a driver report"},
  };
  for (const Row &r : rows) {
    CAPTURE(r.text);
    Parsed p = parse(r.text);
    CHECK_FALSE(p.ok);
    REQUIRE(p.why);
    CHECK(std::string(p.why).find(r.why) != std::string::npos);
    CHECK(p.r.cuda.answer.answered == N);  // never a stale "yes"
    CHECK(p.r.ze.answer.answered == N);
  }
  CHECK(parse(kHead + ok2 + "end\n").ok);
  // A device's name is optional (the saved file has none): shown as "-".
  Parsed nameless = parse(kHead + "cuda answer 1 0 A\ncuda-device 0 GPU-a\nze answer 0 0 B\nend\n");
  REQUIRE(nameless.ok);
  CHECK(std::string(nameless.r.cuda.dev[0].id) == "GPU-a");
  CHECK(std::string(nameless.r.cuda.dev[0].name) == "-");
  // Ids of every length around the 8-byte steps end exactly at their blank.
  for (int len = 1; len < 40; len++) {
    std::string id(size_t(len), 'f');
    Parsed q = parse(kHead + "cuda answer 1 0 A\ncuda-device 0 " + id + " n\nze answer 0 0 B\nend\n");
    REQUIRE(q.ok);
    CHECK(std::string(q.r.cuda.dev[0].id) == id);
  }
  // More devices than are identified: the first kDriverDevicesMax are listed.
  std::string many;
  for (int i = 0; i < kDriverDevicesMax; i++) many += "cuda-device " + std::to_string(i) + " - -\n";
  CHECK(parse(kHead + "cuda answer 40 0 A\n" + many + "ze answer 0 0 B\nend\n").ok);
  CHECK_FALSE(parse(kHead + "cuda answer 40 0 A\n" + many + "cuda-device 32 - -\nze answer 0 0 B\nend\n").ok);
}

TEST_CASE("driver report: names are cut to fit and control bytes never reach the debug line") {
  std::string longname(200, 'N');
  Parsed p = parse(kHead + "cuda answer 1 0 " + longname + "\ncuda-device 0 GPU-x " + longname +
                   "\nze answer 0 0 a\x01\x7f" "b\nend\n");
  REQUIRE(p.ok);
  CHECK(strlen(p.r.cuda.answer.name) == sizeof p.r.cuda.answer.name - 1);
  CHECK(strlen(p.r.cuda.dev[0].name) == kDeviceNameMax - 1);
  CHECK(std::string(p.r.ze.answer.name) == "a??b");
}

TEST_CASE("driver report: what the helper formats, the reader parses back") {
  DriverReport r;
  r.boot = "0b1c9f2e-5d1a-4f7e-9a43-3c8d2b7e6f10";
  r.cuda.answer.answered = Y;
  r.cuda.answer.present = r.cuda.answer.count = 2;
  strcpy(r.cuda.answer.name, "CUDA_SUCCESS");
  r.cuda.ndev = 2;
  r.cuda.dev[0] = {kUuid0, "NVIDIA H200"};
  r.cuda.dev[1] = {"GPU-with blank\x01", "  padded name\n "};  // written so that it still parses
  r.ze.answer.answered = N;
  r.ze.answer.code = 0x70000001;
  strcpy(r.ze.answer.name, "ZE_RESULT_ERROR_DEVICE_LOST");
  char buf[kDriverReportMax];
  size_t n = format_driver_report(r, buf, sizeof buf);
  REQUIRE(n > 0);
  CHECK(std::string(buf, n) ==
        "ucxtls-driver 2\nboot 0b1c9f2e-5d1a-4f7e-9a43-3c8d2b7e6f10\ncuda answer 2 0 CUDA_SUCCESS\n"
        "cuda-device 0 GPU-6b8f3a4e-2a1c-9d7e-8f00-1c2d3e4f5a6b NVIDIA H200\ncuda-device 1 GPU-with?blank? padded name?\n"
        "ze unknown 0 1879048193 ZE_RESULT_ERROR_DEVICE_LOST\nend\n");
  Parsed p = parse(std::string(buf, n));
  REQUIRE(p.ok);
  CHECK(std::string(p.r.boot) == r.boot);
  CHECK(p.r.cuda.answer.present == 2);
  CHECK(std::string(p.r.cuda.dev[0].id) == kUuid0);
  CHECK(p.r.ze.answer.answered == N);
  CHECK(p.r.ze.answer.code == 0x70000001);
  CHECK(std::string(p.r.ze.answer.name) == r.ze.answer.name);

  // Empty names and ids are written as "-", so the lines still parse.
  DriverReport e;
  e.cuda.answer.answered = Y;
  e.cuda.answer.present = 1;
  e.cuda.ndev = 1;
  e.ze.answer.answered = N;
  n = format_driver_report(e, buf, sizeof buf);
  Parsed q = parse(std::string(buf, n));
  REQUIRE(q.ok);
  CHECK(std::string(q.r.cuda.answer.name) == "-");
  CHECK(std::string(q.r.cuda.dev[0].id) == "-");
  // A report that does not fit is not written at all (never a cut one).
  CHECK(format_driver_report(r, buf, 40) == 0);
}

TEST_CASE("which driver results answer, and their names") {
  struct Row {
    long code;
    bool answers;
    const char *name;
  };
  const Row cuda[] = {
      {0, true, "CUDA_SUCCESS"},
      {100, true, "CUDA_ERROR_NO_DEVICE"},       // no device for this process: 0 devices
      {34, true, "CUDA_ERROR_STUB_LIBRARY"},     // the toolkit's stub: UCX would load it too
      {3, false, "CUDA_ERROR_NOT_INITIALIZED"},
      {46, false, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
      {304, false, "CUDA_ERROR_OPERATING_SYSTEM"},
      {802, false, "CUDA_ERROR_SYSTEM_NOT_READY"},  // fabric manager not up yet: transient
      {803, false, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
      {804, false, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
      {999, false, "CUDA_ERROR_UNKNOWN"},
      {35, false, nullptr},  // a runtime-API code, not a CUresult
      {-1, false, nullptr},
  };
  for (const Row &r : cuda) {
    CAPTURE(r.code);
    CHECK(cuda_result_answers(r.code) == r.answers);
    const char *n = cuda_result_name(r.code);
    CHECK(std::string(n ? n : "(none)") == (r.name ? r.name : "(none)"));
  }
  const Row ze[] = {
      {0, true, "ZE_RESULT_SUCCESS"},
      {0x78000001, true, "ZE_RESULT_ERROR_UNINITIALIZED"},             // no driver / no device
      {0x70010000, true, "ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS"},  // /dev/dri not ours
      {0x70000001, false, "ZE_RESULT_ERROR_DEVICE_LOST"},
      {0x70020000, false, "ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE"},
      {0x78000003, false, "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE"},
      {0x7800000c, false, "ZE_RESULT_ERROR_INVALID_ENUMERATION"},
      {0x7ffffffe, false, "ZE_RESULT_ERROR_UNKNOWN"},
      {0x12345, false, nullptr},
  };
  for (const Row &r : ze) {
    CAPTURE(r.code);
    CHECK(ze_result_answers(r.code) == r.answers);
    const char *n = ze_result_name(r.code);
    CHECK(std::string(n ? n : "(none)") == (r.name ? r.name : "(none)"));
  }
}

TEST_CASE("cache: where it is looked for, in order") {
  struct Row {
    const char *cache_dir, *xdg;
    std::vector<std::string> want;
  } rows[] = {
      {nullptr, nullptr, {"/run/ucxtls"}},
      {nullptr, "/run/user/1000", {"/run/user/1000/ucxtls", "/run/ucxtls"}},
      {nullptr, "", {"/run/ucxtls"}},
      {nullptr, "relative/dir", {"/run/ucxtls"}},  // the XDG spec: a relative value is ignored
      {"/scratch/job42/ucxtls", "/run/user/1000", {"/scratch/job42/ucxtls"}},  // alone when set
      {"", "/run/user/1000", {"/run/user/1000/ucxtls", "/run/ucxtls"}},       // empty means unset
  };
  for (const Row &r : rows) {
    Inputs in;
    in.var[kCacheDir] = r.cache_dir;
    in.var[kXdgRuntimeDir] = r.xdg;
    CacheDir d[2];
    int n = cache_dirs(in, d);
    std::vector<std::string> got;
    for (int i = 0; i < n; i++) got.push_back(std::string(d[i].base) + d[i].sub);
    CAPTURE(r.cache_dir ? r.cache_dir : "(unset)");
    CHECK(got == r.want);
  }
  // A relative UCXTLS_CACHE_DIR names a different place in every working directory: named
  // (cache_dir_why: the library's line, `ucxtls probe --save`'s refusal) and never read; it
  // switches nothing off in either tier (the driver tier's kernel probe answers).
  for (const char *tier : {"driver", "kernel", static_cast<const char *>(nullptr)}) {
    CAPTURE(tier ? tier : "(unset)");
    Inputs in;
    in.var[kCacheDir] = "cache";
    in.var[kProbe] = tier;
    Settings s;
    parse_settings(in, &s);
    CHECK(s.cache_dir_why != nullptr);
    CHECK_FALSE(s.invalid);
  }
}

TEST_CASE("cache: trusted only when owned by root or the reader and writable by no one else") {
  struct Row {
    unsigned uid, mode, euid;
    bool dir;
    bool trusted;
    const char *why;
  } rows[] = {
      {0, 0100644, 1000, false, true, ""},
      {1000, 0100644, 1000, false, true, ""},
      {1000, 0100600, 1000, false, true, ""},
      {0, 0100444, 0, false, true, ""},
      {1001, 0100644, 1000, false, false, "is owned by uid 1001, neither root nor you (uid 1000)"},
      {1000, 0100644, 0, false, false, "is owned by uid 1000, neither root nor you (uid 0)"},  // root trusts root alone
      {0, 0100664, 1000, false, false, "is writable by group or others (mode 0664)"},
      {0, 0100646, 1000, false, false, "is writable by group or others (mode 0646)"},
      {0, 0120777, 1000, false, false, "is not a regular file"},  // a symlink
      {0, 0010644, 1000, false, false, "is not a regular file"},  // a FIFO
      {0, 0040644, 1000, false, false, "is not a regular file"},
      {0, 0040755, 1000, true, true, ""},
      {1000, 0040700, 1000, true, true, ""},
      {0, 0041777, 1000, true, false, "is writable by group or others (mode 0777)"},  // /tmp
      {0, 0040775, 1000, true, false, "is writable by group or others (mode 0775)"},
      {1002, 0040755, 1000, true, false, "is owned by uid 1002, neither root nor you (uid 1000)"},
      {0, 0100644, 1000, true, false, "is not a directory"},
  };
  for (const Row &r : rows) {
    FileFacts f;
    f.uid = r.uid;
    f.mode = r.mode;
    char buf[128];
    Text why;
    why.init(buf, sizeof buf);
    CAPTURE(r.why);
    CHECK(cache_trusted(f, r.euid, r.dir, why) == r.trusted);
    CHECK(std::string(buf) == r.why);
  }
}

TEST_CASE("cache: the boot it was saved in") {
  const char id[] = "0b1c9f2e-5d1a-4f7e-9a43-3c8d2b7e6f10";
  CHECK(same_boot(id, "0b1c9f2e-5d1a-4f7e-9a43-3c8d2b7e6f10\n", 37));
  CHECK(same_boot(id, "0b1c9f2e-5d1a-4f7e-9a43-3c8d2b7e6f10", 36));
  CHECK_FALSE(same_boot(id, "1b1c9f2e-5d1a-4f7e-9a43-3c8d2b7e6f10\n", 37));
  CHECK_FALSE(same_boot(id, "0b1c9f2e-5d1a-4f7e-9a43-3c8d2b7e6f1\n", 36));  // a prefix is not the id
  CHECK_FALSE(same_boot(id, "\n", 1));
  CHECK_FALSE(same_boot(nullptr, "0b1c9f2e\n", 9));
}

TEST_CASE("cache: each process's visibility variables narrow the saved devices") {
  const std::string text = kHead + "boot 0b1c\ncuda answer 3 0 CUDA_SUCCESS\n" + cuda_devices(3) +
                           "ze answer 2 0 ZE_RESULT_SUCCESS\nze-device 0 00 a\nze-device 1 01 b\nend\n";
  struct Row {
    const char *cvd, *mask;
    int cuda, ze;
  } rows[] = {
      {nullptr, nullptr, 3, 2},
      {"", "", 0, 2},                        // CUDA: empty = none; Level Zero: empty = all
      {"1", "0", 1, 2},
      {"2,0,1", nullptr, 3, 2},
      {"0,3,1", nullptr, 1, 2},              // the list ends at the first ordinal out of range
      {"3", nullptr, 0, 2},
      {"NoDevFiles", nullptr, 0, 2},         // Slurm's "no GPU"
      {"0,0", nullptr, 1, 2},                // a repeat ends the list
      {"GPU-0d7e2f11", nullptr, 1, 2},       // a unique UUID prefix of the saved devices
      {"GPU-0d7e", nullptr, 0, 2},           // ambiguous (kUuid1 and kUuid2)
      {"GPU-ffff", nullptr, 0, 2},           // no saved device has it
      {"GPU-6b8f,GPU-0d7e9", nullptr, 2, 2},
      {"MIG-GPU-6b8f3a4e/1/0", nullptr, 1, 2},
      {nullptr, "x", 3, 0},                  // no well-formed index: ZE_AFFINITY_MASK hides all
      {nullptr, "0.1,7", 3, 2},
  };
  for (const Row &r : rows) {
    Parsed p = parse(text);
    REQUIRE(p.ok);
    Inputs in;
    in.var[kCudaVisible] = r.cvd;
    in.var[kZeAffinity] = r.mask;
    DriverFact f;
    answer_from_report(p.r, in, &f);
    CAPTURE(r.cvd ? r.cvd : "(unset)");
    CAPTURE(r.mask ? r.mask : "(unset)");
    CHECK(f.cuda.answered == Y);
    CHECK(f.cuda.present == 3);
    CHECK(f.cuda.count == r.cuda);
    CHECK(f.ze.present == 2);
    CHECK(f.ze.count == r.ze);
  }
  // Beyond the identified devices, GPU- entries are taken on trust (as with unknown ids).
  std::string many;
  for (int i = 0; i < kDriverDevicesMax; i++) many += "cuda-device " + std::to_string(i) + " - -\n";
  Parsed p = parse(kHead + "cuda answer 40 0 A\n" + many + "ze unknown 0 -1 x\nend\n");
  REQUIRE(p.ok);
  Inputs in;
  in.var[kCudaVisible] = "GPU-abc,39";
  DriverFact f;
  answer_from_report(p.r, in, &f);
  CHECK(f.cuda.count == 2);
  CHECK(f.ze.answered == N);
}

namespace {

// A DGX-like node (RDMA, no ucx.conf) where the kernel sees CUDA and ze, and a driver fact.
struct DriverCase {
  Tri kernel_cuda, kernel_rocm, kernel_ze;
  Tri ran;
  Tri cuda_answered;
  int cuda_count;
  Tri ze_answered;
  int ze_count;
  Family want;
};

// A decision with everything it was made from (its words need them all).
struct Made {
  Inputs in;
  Settings s;
  Facts f;
  Decision d;
  std::string line() const {
    char buf[kLineMax];
    return std::string(buf, format_line(Decided{in, s, f, d}, buf, sizeof buf));
  }
};

Made decide_with(const DriverCase &c, const char *probe = "driver") {
  Made m;
  Inputs &in = m.in;
  in.var[kProbe] = probe;
  Settings &s = m.s;
  parse_settings(in, &s);
  Facts &f = m.f;
  f.rdma.value = Y;
  f.rdma_mlx5 = true;
  f.ucx_conf.value = N;
  f.family[int(Family::cuda)].value = c.kernel_cuda;
  f.family[int(Family::rocm)].value = c.kernel_rocm;
  f.family[int(Family::ze)].value = c.kernel_ze;
  f.driver.value = c.ran;
  strcpy(f.driver.evidence, "answer saved by ucxtls probe at /run/ucxtls/driver");
  f.driver.cuda.answered = c.cuda_answered;
  f.driver.cuda.count = f.driver.cuda.present = c.cuda_count;
  strcpy(f.driver.cuda.name, c.cuda_answered == Y ? "CUDA_ERROR_NO_DEVICE" : "libcuda.so.1 not found");
  f.driver.ze.answered = c.ze_answered;
  f.driver.ze.count = f.driver.ze.present = c.ze_count;
  strcpy(f.driver.ze.name, "ZE_RESULT_SUCCESS");
  decide(in, s, f, &m.d);
  return m;
}

}  // namespace

TEST_CASE("decide(): the driver's answer wins for CUDA and ze, the kernel's stands otherwise") {
  const DriverCase rows[] = {
      // kernel: cuda; driver: 0 CUDA, 2 ze GPUs -> ze
      {Y, N, N, Y, Y, 0, Y, 2, Family::ze},
      // kernel: ze; driver: 2 CUDA -> cuda
      {N, N, Y, Y, Y, 2, Y, 0, Family::cuda},
      // both vendors by the driver: CUDA wins
      {N, N, N, Y, Y, 1, Y, 1, Family::cuda},
      // the driver says nothing anywhere: none, whatever the kernel saw
      {Y, N, Y, Y, Y, 0, Y, 0, Family::none},
      // no CUDA answer (library absent): the kernel's cuda stands
      {Y, N, N, Y, N, 0, Y, 2, Family::cuda},
      // ROCm is the kernel's alone, and sits between CUDA and ze
      {N, Y, N, Y, Y, 0, Y, 3, Family::rocm},
      // the helper failed: ran = no, answers no -> all kernel
      {Y, N, N, N, N, 0, N, 0, Family::cuda},
  };
  for (const DriverCase &c : rows) {
    const Made m = decide_with(c);
    const Decision &d = m.d;
    CAPTURE(m.line());
    // No GPU, or NVIDIA GPUs beside the rc device here: UCX's default stands; other GPUs: all.
    const bool unset = c.want == Family::none || c.want == Family::cuda;
    CHECK(d.action == (unset ? Action::skip : Action::set));
    if (!unset) CHECK(std::string(d.value) == "all");
    CHECK(d.family == c.want);
  }
}

TEST_CASE("decide(): the debug line says which tier answered, with the driver's names") {
  char line[1024];
  std::string l = decide_with({Y, N, N, Y, Y, 0, Y, 2, Family::ze}).line();
  CAPTURE(l);
  CHECK(l.find("driver tier: answer saved by ucxtls probe at /run/ucxtls/driver") != std::string::npos);
  CHECK(l.find("cuda: driver API: 0 device(s) (CUDA_ERROR_NO_DEVICE)") != std::string::npos);
  CHECK(l.find("ze: driver API: 2 device(s) (ZE_RESULT_SUCCESS)") != std::string::npos);

  // Fewer visible than the driver listed: both numbers are shown.
  {
    Inputs in;
    in.var[kProbe] = "driver";
    Settings s;
    parse_settings(in, &s);
    Facts f;
    f.rdma.value = Y;
    f.ucx_conf.value = N;
    f.driver.value = Y;
    f.driver.cuda.answered = Y;
    f.driver.cuda.present = 8;
    f.driver.cuda.count = 1;
    strcpy(f.driver.cuda.name, "CUDA_SUCCESS");
    Decision v;
    decide(in, s, f, &v);
    std::string vl(line, format_line(Decided{in, s, f, v}, line, sizeof line));
    CHECK(vl.find("cuda: driver API: 8 device(s), 1 visible (CUDA_SUCCESS)") != std::string::npos);
  }

  l = decide_with({Y, N, N, Y, N, 0, Y, 0, Family::cuda}).line();
  CAPTURE(l);
  CHECK(l.find("cuda: driver API gave no answer (libcuda.so.1 not found), kernel: ") != std::string::npos);

  // The kernel tier never asks the driver, and never mentions it.
  Inputs in;
  Settings s;
  parse_settings(in, &s);
  Facts f;
  f.rdma.value = Y;
  f.rdma_mlx5 = true;
  f.ucx_conf.value = N;
  Decision k;
  decide(in, s, f, &k);
  CHECK(k.need == Need::cuda);
  (void)U;
}
