// Unit tests of the driver tier's pure parts: the helper's report (format and parse), which driver
// results count as answers, their names, and how decide() uses a driver answer.
#include <doctest/doctest.h>
#include <string.h>

#include <string>

#include "core.h"

using namespace ucxtls;

namespace {

const Tri Y = Tri::yes, N = Tri::no, U = Tri::unknown;

struct Parsed {
  bool ok;
  DriverFact f;
};

Parsed parse(const std::string &text) {
  Parsed p;
  p.ok = parse_driver_report(text.data(), text.size(), &p.f);
  return p;
}

const std::string kHead = "ucxtls-probe 1\n";

}  // namespace

TEST_CASE("driver report: well-formed reports") {
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
      {"cuda answer 2 0 CUDA_SUCCESS\nze answer 0 2013265921 ZE_RESULT_ERROR_UNINITIALIZED\nend\n",
       Y, 2, 0, "CUDA_SUCCESS", Y, 0, 0x78000001, "ZE_RESULT_ERROR_UNINITIALIZED"},
      {"cuda unknown 0 -1 libcuda.so.1 not found\nze answer 4 0 ZE_RESULT_SUCCESS\nend\n",
       N, 0, -1, "libcuda.so.1 not found", Y, 4, 0, "ZE_RESULT_SUCCESS"},
      // order does not matter; unknown lines (a newer helper's extras) are ignored
      {"ze answer 1 0 ZE_RESULT_SUCCESS\nversion 12080\ncuda answer 0 100 CUDA_ERROR_NO_DEVICE\nend\n",
       Y, 0, 100, "CUDA_ERROR_NO_DEVICE", Y, 1, 0, "ZE_RESULT_SUCCESS"},
      // an "unknown" answer never carries a count
      {"cuda unknown 7 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH\nze unknown 0 -1 x\nend\n",
       N, 0, 803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", N, 0, -1, "x"},
      // blanks around fields; the name keeps its inner spaces
      {"cuda  answer\t1  0   CUDA_SUCCESS  \nze answer 0 0 a b  c\nend\n", Y, 1, 0, "CUDA_SUCCESS", Y, 0, 0, "a b  c"},
      // anything after "end" is not read
      {"cuda answer 1 0 A\nze answer 0 0 B\nend\ngarbage\n", Y, 1, 0, "A", Y, 0, 0, "B"},
  };
  for (const Row &r : rows) {
    CAPTURE(r.text);
    Parsed p = parse(kHead + r.text);
    REQUIRE(p.ok);
    CHECK(p.f.cuda.answered == r.cuda);
    CHECK(p.f.cuda.count == r.cuda_count);
    CHECK(p.f.cuda.code == r.cuda_code);
    CHECK(std::string(p.f.cuda.name) == r.cuda_name);
    CHECK(p.f.ze.answered == r.ze);
    CHECK(p.f.ze.count == r.ze_count);
    CHECK(p.f.ze.code == r.ze_code);
    CHECK(std::string(p.f.ze.name) == r.ze_name);
  }
}

TEST_CASE("driver report: anything incomplete or malformed is no report at all") {
  const std::string both = "cuda answer 1 0 A\nze answer 1 0 B\n";
  const char *rows[] = {
      "",
      "ucxtls-probe 1\n",
      "ucxtls-probe 2\ncuda answer 1 0 A\nze answer 1 0 B\nend\n",  // a format we do not know
      "cuda answer 1 0 A\nze answer 1 0 B\nend\n",                  // no header
      "ucxtls-probe 1\ncuda answer 1 0 A\nze answer 1 0 B\n",       // cut before "end"
      "ucxtls-probe 1\ncuda answer 1 0 A\nze answer 1 0 B\nend",    // "end" without its newline
      "ucxtls-probe 1\ncuda answer 1 0 A\nze answer 1 0 B",         // cut mid-line
      "ucxtls-probe 1\ncuda answer 1 0 A\nend\n",                   // ze missing
      "ucxtls-probe 1\nze answer 1 0 B\nend\n",                     // cuda missing
      "ucxtls-probe 1\ncuda answer 1 0 A\ncuda answer 2 0 A\nze answer 1 0 B\nend\n",  // twice
      "ucxtls-probe 1\ncuda yes 1 0 A\nze answer 1 0 B\nend\n",     // unknown status
      "ucxtls-probe 1\ncuda answer -1 0 A\nze answer 1 0 B\nend\n",  // negative count
      "ucxtls-probe 1\ncuda answer 1000001 0 A\nze answer 1 0 B\nend\n",  // absurd count
      "ucxtls-probe 1\ncuda answer 1x 0 A\nze answer 1 0 B\nend\n",  // not a number
      "ucxtls-probe 1\ncuda answer 1 0x10 A\nze answer 1 0 B\nend\n",  // codes are decimal
      "ucxtls-probe 1\ncuda answer 1 0\nze answer 1 0 B\nend\n",    // no name
      "ucxtls-probe 1\ncuda answer 1 99999999999999999999 A\nze answer 1 0 B\nend\n",  // overflow
      "!exec 2\n",
  };
  for (const char *r : rows) {
    CAPTURE(r);
    Parsed p = parse(r);
    CHECK_FALSE(p.ok);
    CHECK(p.f.cuda.answered == N);  // never a stale "yes"
    CHECK(p.f.ze.answered == N);
  }
  CHECK(parse(kHead + both + "end\n").ok);
}

TEST_CASE("driver report: names are cut to fit and control bytes never reach the debug line") {
  std::string longname(200, 'N');
  Parsed p = parse(kHead + "cuda answer 1 0 " + longname + "\nze answer 0 0 a\x01\x7f" "b\nend\n");
  REQUIRE(p.ok);
  CHECK(strlen(p.f.cuda.name) == sizeof p.f.cuda.name - 1);
  CHECK(std::string(p.f.ze.name) == "a??b");
}

TEST_CASE("driver report: what the helper formats, the library parses back") {
  DriverFact f;
  f.cuda.answered = Y;
  f.cuda.count = 8;
  f.cuda.code = 0;
  strcpy(f.cuda.name, "CUDA_SUCCESS");
  f.ze.answered = N;
  f.ze.code = 0x70000001;
  strcpy(f.ze.name, "ZE_RESULT_ERROR_DEVICE_LOST");
  char buf[kDriverReportMax];
  size_t n = format_driver_report(f, buf, sizeof buf);
  REQUIRE(n > 0);
  CHECK(std::string(buf, n) ==
        "ucxtls-probe 1\ncuda answer 8 0 CUDA_SUCCESS\nze unknown 0 1879048193 ZE_RESULT_ERROR_DEVICE_LOST\nend\n");
  DriverFact g;
  REQUIRE(parse_driver_report(buf, n, &g));
  CHECK(g.cuda.answered == Y);
  CHECK(g.cuda.count == 8);
  CHECK(g.ze.answered == N);
  CHECK(g.ze.code == 0x70000001);
  CHECK(std::string(g.ze.name) == f.ze.name);

  // An empty name is written as "-", so the line still parses.
  DriverFact e;
  e.cuda.answered = e.ze.answered = N;
  n = format_driver_report(e, buf, sizeof buf);
  CHECK(parse_driver_report(buf, n, &g));
  CHECK(std::string(g.cuda.name) == "-");
  // A report that does not fit is not written at all (never a cut one).
  CHECK(format_driver_report(f, buf, 40) == 0);
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

Decision decide_with(const DriverCase &c, const char *probe = "driver") {
  Inputs in;
  in.var[kProbe] = probe;
  Settings s;
  parse_settings(in, &s);
  Facts f;
  f.rdma = Y;
  f.rdma_mlx5 = true;
  f.ucx_conf = N;
  f.family[int(Family::cuda)].visible = c.kernel_cuda;
  f.family[int(Family::rocm)].visible = c.kernel_rocm;
  f.family[int(Family::ze)].visible = c.kernel_ze;
  f.driver.ran = c.ran;
  strcpy(f.driver.evidence, "ucxtls-probe answered in 3 ms");
  f.driver.cuda.answered = c.cuda_answered;
  f.driver.cuda.count = c.cuda_count;
  strcpy(f.driver.cuda.name, c.cuda_answered == Y ? "CUDA_ERROR_NO_DEVICE" : "libcuda.so.1 not found");
  f.driver.ze.answered = c.ze_answered;
  f.driver.ze.count = c.ze_count;
  strcpy(f.driver.ze.name, "ZE_RESULT_SUCCESS");
  Decision d;
  decide(in, s, f, &d);
  return d;
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
    Decision d = decide_with(c);
    CAPTURE(d.reasons[0]);
    CHECK(d.action == Action::set);
    CHECK(d.family == c.want);
  }
}

TEST_CASE("decide(): the debug line says which tier answered, with the driver's names") {
  Decision d = decide_with({Y, N, N, Y, Y, 0, Y, 2, Family::ze});
  char line[1024];
  std::string l(line, format_line(Inputs(), d, line, sizeof line));
  CAPTURE(l);
  CHECK(l.find("driver probe: ucxtls-probe answered in 3 ms") != std::string::npos);
  CHECK(l.find("cuda: driver API: 0 device(s) (CUDA_ERROR_NO_DEVICE)") != std::string::npos);
  CHECK(l.find("ze: driver API: 2 device(s) (ZE_RESULT_SUCCESS)") != std::string::npos);

  d = decide_with({Y, N, N, Y, N, 0, Y, 0, Family::cuda});
  l.assign(line, format_line(Inputs(), d, line, sizeof line));
  CAPTURE(l);
  CHECK(l.find("cuda: driver API gave no answer (libcuda.so.1 not found), kernel: ") != std::string::npos);

  // The kernel tier never asks the driver, and never mentions it.
  Inputs in;
  Settings s;
  parse_settings(in, &s);
  Facts f;
  f.rdma = Y;
  f.rdma_mlx5 = true;
  f.ucx_conf = N;
  Decision k;
  decide(in, s, f, &k);
  CHECK(k.need == Need::cuda);
  (void)U;
}
