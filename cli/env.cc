// `ucxtls env [--format=sh|slurm]`: the library's decision for this environment as text that
// applies it to a shell (eval "$(ucxtls env)") or to a Slurm task (a TaskProlog's stdout).
#include <stdio.h>
#include <string.h>

#include <memory>
#include <string>

#include "commands.h"
#include "exit.h"
#include "report.h"
#include "util.h"

namespace ucxtls {
namespace cli {
namespace {

// Two output forms of the same decision. `sh`: shell text for eval, values single-quoted. `slurm`:
// the lines a Slurm TaskProlog prints on stdout, which slurmstepd applies to the task: `export
// NAME=value` (taken verbatim, so no quotes: Slurm does not unquote) and `unset NAME` (one name
// per line: Slurm unsets the rest of the line as a single name).
enum class EnvFormat { sh, slurm };

void print_env(EnvFormat fmt, const char *value) {
  if (fmt == EnvFormat::slurm) {
    if (value) printf("export UCX_TLS=%s\nexport UCXTLS_DERIVED=%s\n", value, value);
    else printf("unset UCX_TLS\nunset UCXTLS_DERIVED\n");
  } else if (value) {
    std::string q = shell_quote(value);
    printf("export UCX_TLS=%s\nexport UCXTLS_DERIVED=%s\n", q.c_str(), q.c_str());
  } else {
    printf("unset UCX_TLS UCXTLS_DERIVED\n");
  }
}

}  // namespace

int cmd_env(int argc, char **argv) {
  EnvFormat fmt = EnvFormat::sh;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--format=sh")) fmt = EnvFormat::sh;
    else if (!strcmp(argv[i], "--format=slurm")) fmt = EnvFormat::slurm;
    else return fail(kUsage, std::string("env: unknown argument '") + argv[i] + "' (--format=sh or --format=slurm)");
  }
  auto r = std::make_unique<Report>();
  evaluate(r.get());
  if (r->d.error) {
    fputs(library_line(*r).c_str(), stderr);
    // As the library does: an inherited value of ours goes even when a setting is invalid.
    if (r->d.action == Action::clear) print_env(fmt, nullptr);
    return kFailed;
  }
  if (r->s.debug) fputs(library_line(*r).c_str(), stderr);  // as the library would say it
  // keep, skip, or set to what the shell has (re-derived to the same value): the shell is right.
  if (!env_needs_write(r->in, r->d)) return 0;
  if (r->d.action == Action::set) {
    // A value is composed from a validated template (names, commas, ':aux', '^'), so it never
    // holds a line break that would end Slurm's line early; refuse rather than print half a value.
    if (fmt == EnvFormat::slurm && strpbrk(r->d.value, "\n\r"))
      return fail(kFailed, "env: the value holds a line break; a Slurm TaskProlog line cannot carry it");
    print_env(fmt, r->d.value);
  } else {  // clear
    print_env(fmt, nullptr);
  }
  return 0;
}


}  // namespace cli
}  // namespace ucxtls
