// `ucxtls env [--format=sh|slurm]`: the library's decision for this environment as text that
// applies it to a shell (eval "$(ucxtls env)") or to a Slurm task (a TaskProlog's stdout).
#include <stdio.h>
#include <string.h>

#include <memory>
#include <string>

#include "commands.h"
#include "exit.h"
#include "evaluation.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

// Two output forms of the same decision. `sh`: shell text for eval, values single-quoted. `slurm`:
// the lines a Slurm TaskProlog prints on stdout, which slurmstepd applies to the task: `export
// NAME=value` (taken verbatim, so no quotes: Slurm does not unquote) and `unset NAME` (one name
// per line: Slurm unsets the rest of the line as a single name).
enum class EnvFormat { sh, slurm };

// value: UCX_TLS to export (NULL: both variables go); derived: ours, so UCXTLS_DERIVED marks it;
// drop_marker: a repair of the user's value removes a stale marker, so it is never taken for ours.
void print_env(EnvFormat fmt, const char *value, bool derived, bool drop_marker) {
  if (!value) {
    fputs(fmt == EnvFormat::slurm ? "unset UCX_TLS\nunset UCXTLS_DERIVED\n" : "unset UCX_TLS UCXTLS_DERIVED\n", stdout);
    return;
  }
  const std::string v = fmt == EnvFormat::slurm ? std::string(value) : shell_quote(value);
  printf("export UCX_TLS=%s\n", v.c_str());
  if (derived) printf("export UCXTLS_DERIVED=%s\n", v.c_str());
  if (drop_marker) fputs("unset UCXTLS_DERIVED\n", stdout);
}

}  // namespace

int cmd_env(int argc, char **argv) {
  EnvFormat fmt = EnvFormat::sh;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--format=sh")) fmt = EnvFormat::sh;
    else if (!strcmp(argv[i], "--format=slurm")) fmt = EnvFormat::slurm;
    else if (!strncmp(argv[i], "--format=", 9))
      return fail(kUsage, std::string("env: unknown format '") + (argv[i] + 9) + "' in " + argv[i] + " (sh or slurm)");
    else return fail(kUsage, std::string("env: unknown argument '") + argv[i] + "' (--format=sh or --format=slurm)");
  }
  auto r = std::make_unique<Evaluation>();
  evaluate(r.get());
  if (r->d.error) {
    fputs(library_line(*r).c_str(), stderr);
    // As the library does: an inherited value of ours goes even when a setting is invalid.
    if (r->d.action == Action::clear) print_env(fmt, nullptr, false, false);
    return kFailed;
  }
  if (r->s.debug) fputs(library_line(*r).c_str(), stderr);  // as the library would say it
  // keep, skip, or set (or repair) to what the shell has: the shell is right.
  if (!env_needs_write(r->in, r->d)) return 0;
  if (r->d.action == Action::set || r->d.action == Action::repair) {
    // A composed value holds validated names, a repaired one the user's other entries as bytes: a
    // line break would end Slurm's line early; refuse rather than print half.
    if (fmt == EnvFormat::slurm && strpbrk(r->d.value, "\n\r"))
      return fail(kFailed, "env: the value holds a line break; a Slurm TaskProlog line cannot carry it");
    print_env(fmt, r->d.value, r->d.action == Action::set, repair_drops_marker(r->in, r->d));
  } else {  // clear
    print_env(fmt, nullptr, false, false);
  }
  return 0;
}


}  // namespace cli
}  // namespace ucxtls
