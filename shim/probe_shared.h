// What the kernel probes share (probe.cc, probe_rdma.cc, probe_gpus.cc).
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "probe.h"
#include "sys.h"

namespace ucxtls {
namespace probes {

// Each probe keeps its own stack frame: inlined (as LTO would), every path of the constructor
// would carry the largest one.
#define UCXTLS_OWN_FRAME __attribute__((noinline))

// The one small file being parsed (static: the host's stack; no thread runs a probe).
extern char g_file[4096];
ssize_t read_file(const Path &p);

bool name_has_prefix(const char *name, const char *prefix, const char **rest);
long all_digits(const char *s);  // "123" -> 123; anything else -> -1
const char *basename_of(const char *path);
void describe_variable(Text &t, const char *name, const char *value);  // NAME="value" or NAME unset
// "EMFILE: could not read PATH" (the error first: a long sysroot may cut the path short).
void describe_failure(Text &t, const char *what, const Path &p, long err);

// Records a failure: the first error is kept, with its evidence.
struct Failure {
  int error = 0;
  char text[kEvidenceMax] = {};
  void note(const char *what, const Path &p, long err, bool evidence);
};

// Reads the ucx.conf files once for UCX_TLS and UCX_IB_GID_INDEX; whole: on past a UCX_TLS line,
// since a RoCE port needs the GID index's last line (f->gid.read then).
void scan_ucx_conf(const Inputs &in, const Settings &s, bool evidence, bool whole, Facts *f);

void probe_rdma(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f);  // probe_rdma.cc
void probe_cuda(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f);      // probe_gpus.cc
void probe_rocm(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f);      // probe_gpus.cc
void probe_ze(const Inputs &in, const Settings &s, const ProbeOptions &o, Facts *f);        // probe_gpus.cc

}  // namespace probes
}  // namespace ucxtls
