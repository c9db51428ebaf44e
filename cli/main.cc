// ucxtls: the command beside libucxtls.so (explain, env, run, doctor, probe): the dispatch, --help
// and --version. Each command lives in its own file (report.h lists them); every answer comes
// from the library's own code (shim/core.h), so the command and the library cannot disagree.
#include <stdio.h>
#include <string.h>

#include <string>

#include "report.h"

#ifndef UCXTLS_VERSION
#define UCXTLS_VERSION "unknown"
#endif

using namespace ucxtls;
using namespace ucxtls::cli;

namespace {

// The variables come from the options table (shim/options.cc), as the man page's and the
// documentation's do.
void help() {
  printf(
      "usage: ucxtls COMMAND [ARGS]\n"
      "\n"
      "The command beside libucxtls.so: it answers through the library's own decision code.\n"
      "\n"
      "commands:\n"
      "  explain [--json]        the decision for this environment and machine, with evidence\n"
      "  env [--format=sh|slurm] shell text for eval \"$(ucxtls env)\": export or unset UCX_TLS;\n"
      "                          slurm: the unquoted export/unset lines a Slurm TaskProlog prints\n"
      "  run [--] COMMAND...     exec COMMAND with libucxtls.so added to LD_PRELOAD\n"
      "  doctor [--value V | --template T]\n"
      "                          check that the local UCX (ucx_info -d) serves every transport of\n"
      "                          the value in effect, of V, or of what template T composes to here\n"
      "                          ({copy}, {ipc}, {rdma}); exit 1 if one is missing\n"
      "  probe [--save]          ask the CUDA and Level Zero drivers (in the helper ucxtls-probe)\n"
      "                          which devices there are; --save stores the answer for this node,\n"
      "                          which UCXTLS_PROBE=driver reads\n"
      "  --help, --version\n"
      "\n"
      "variables of ucxtls (the library and this command read the same):\n");
  for (int v = 0; v < kVarCount; v++) {
    if (v == kOwnVarCount) printf("\nvariables it reads as well:\n");
    const Option &o = kOptions[v];
    if (v < kOwnVarCount) printf("  %-24s default %s\n  %-24s %s\n", o.name, o.def, "", o.meaning);
    else printf("  %-24s %s\n", o.name, o.meaning);
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: ucxtls explain|env|run|doctor|probe ... (ucxtls --help)\n");
    return kUsage;
  }
  const char *cmd = argv[1];
  int n = argc - 2;
  char **rest = argv + 2;
  if (!strcmp(cmd, "explain")) return cmd_explain(n, rest);
  if (!strcmp(cmd, "env")) return cmd_env(n, rest);
  if (!strcmp(cmd, "run")) return cmd_run(n, rest);
  if (!strcmp(cmd, "doctor")) return cmd_doctor(n, rest);
  if (!strcmp(cmd, "probe")) return cmd_probe(n, rest);  // cli/probe.cc
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) return help(), 0;
  if (!strcmp(cmd, "--version")) return printf("ucxtls %s\n", UCXTLS_VERSION), 0;
  return fail(kUsage, std::string("unknown command '") + cmd + "' (try ucxtls --help)");
}
