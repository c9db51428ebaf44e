// ucxtls: the command beside libucxtls.so (explain, env, run, doctor, probe): the dispatch, --help,
// --man and --version. Each command lives in its own file (commands.h lists them); every answer comes
// from the library's own code (shim/core.h), so the command and the library cannot disagree.
//
// One table of commands and one of exit statuses drive the dispatch, `--help` and the man page
// (`--man` prints ucxtls(1), which the build writes and installs); the variables come from the
// options table (shim/options.cc), as the README's table does.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "edit_distance.h"
#include "exit.h"
#include "options.h"

#ifndef UCXTLS_VERSION
#define UCXTLS_VERSION "unknown"
#endif

using namespace ucxtls;
using namespace ucxtls::cli;

namespace {

// Each command's flags (args.h): its parser, its --help and its man page paragraph read them.
const Flag kExplainFlags[] = {{"--json", nullptr, "print the same as one JSON object"}, {nullptr, nullptr, nullptr}};
const Flag kEnvFlags[] = {
    {"--format", "sh|slurm", "sh (the default): shell text for eval; slurm: a TaskProlog's lines"},
    {nullptr, nullptr, nullptr}};
const Flag kNoFlags[] = {{nullptr, nullptr, nullptr}};
const Flag kDoctorFlags[] = {{"--value", "V", "check the value V instead of the value in effect"},
                             {"--template", "T", "check what template T composes to on this node"},
                             {"--ucx", "PATH", "judge the UCX build at PATH (a libucp, a prefix, a wheel's .libs)"},
                             {"--pid", "PID", "judge the UCX that process PID has mapped"},
                             {"--timeout-ms", "MS", "one deadline for all that doctor reads (default 20000)"},
                             {"--json", nullptr, "print the findings as one JSON object on one line"},
                             {nullptr, nullptr, nullptr}};
const Flag kProbeFlags[] = {{"--save", nullptr, "store the answer for this node (UCXTLS_CACHE_DIR)"},
                            {nullptr, nullptr, nullptr}};

const Command kCommands[] = {
    {"explain", "[--json]", "the decision for this environment and machine, with evidence",
     "Prints the decision the library makes in a process started from this shell on this machine: "
     "the action, the value, the reasons, the RDMA devices, the ucx.conf findings, each GPU family's "
     "devices (visibility variables applied), every variable read, and the library's own one-line "
     "summary. It decides with the library's own probe options; listing every device adds evidence, "
     "never changes the answer. Control bytes from variables are shown as '?', as in the library's "
     "line. --json prints the same as one JSON object.",
     kExplainFlags, false, cmd_explain},
    {"env", "[--format=sh|slurm]",
     "shell text to evaluate, v=$(ucxtls env) || exit; eval \"$v\": export or unset UCX_TLS;\n"
     "slurm: the unquoted export/unset lines a Slurm TaskProlog prints",
     "Prints export (or unset) lines for UCX_TLS and UCXTLS_DERIVED, for launch scripts that do not "
     "preload the library; nothing when the environment is already right. A repair "
     "(UCXTLS_REPAIR=1) is export UCX_TLS alone, as the library writes it, plus unset "
     "UCXTLS_DERIVED where a stale marker was inherited. --format=slurm prints "
     "unquoted export NAME=value lines and one unset NAME per line, the form a Slurm TaskProlog's "
     "output takes.",
     kEnvFlags, false, cmd_env},
    {"run", "[--] COMMAND...", "exec COMMAND with libucxtls.so added to LD_PRELOAD",
     "Execs COMMAND with the library installed beside this command appended to LD_PRELOAD (the "
     "entries ld.so would use are kept, first: with several LD_PRELOAD variables, the last one's; "
     "an AddressSanitizer runtime must be first, and one that COMMAND names in its DT_NEEDED is put "
     "first). The exit status is COMMAND's.",
     kNoFlags, true, cmd_run},
    {"doctor", "[--value V | --template T] [--ucx PATH | --pid PID] [--timeout-ms MS] [--json]",
     "check that the local UCX (ucx_info's) serves every transport of\n"
     "the value in effect, of V, or of what template T composes to here\n"
     "({copy}, {ipc}, {rdma}), and that its build serves this node's GPUs;\n"
     "exit 1 if not; --ucx: the build at PATH (a libucp of any name, a\n"
     "prefix, a wheel's .libs); --pid: the UCX process PID has mapped",
     "Reads the build of the ucx_info on PATH (the libucp ld.so would give it, worked out from its files), expands "
     "UCX's transport aliases, and reports every name of the value in effect (or of V, or of what template T "
     "composes to on this node) that this UCX cannot serve; UCX would print a \"not available\" warning on stdout "
     "in every process. "
     "With --ucx PATH it judges the build at PATH instead (a libucp shared object of any name, or a "
     "directory holding one: a prefix, its lib, lib64 or lib/<multiarch>, a wheel's *.libs or DIR/*/lib), with --pid PID the UCX "
     "that running process has mapped (/proc/PID/maps; the value is what the library in it decided "
     "from the environment it started with, /proc/PID/environ, or its UCX_TLS as it started when no "
     "libucxtls.so is loaded in it; the library's own line says why). Every build is read from its files, "
     "never loaded or run: its version, the transports its libuct and modules define (uct_<name>_tl), the modules "
     "UCX would load (its module directories, UCX_MODULE_DIR and UCX_MODULES from the environment and ucx.conf) and "
     "whether the libraries each needs resolve as ld.so would resolve them; with --pid inside that process's root, "
     "with its environment and working directory, and the process is never stopped or traced. Reading stops after "
     "MS milliseconds (default 20000); what could not be read is said (\"could not tell\"). The first line names the UCX and its "
     "version; what the build cannot do whatever UCX_TLS says (no ze_copy, cuda_copy or rocm_copy "
     "for this node's GPUs, no verbs on a node whose RDMA runs rc) is named in words, and exits 1, in "
     "every mode, whatever the value, also with no value to check (a node without GPUs with nothing to check "
     "exits 0); a value naming another GPU family's transports and none of this node's gets explain's warning. A build that "
     "could not be read (not a UCX libucp, a script for ucx_info), or whose version could not be, exits 2. The last line, verdict, gives the exit status "
     "and the first reason (ok, FAIL, could not check). "
     "--json prints the findings as one JSON object on one line.",
     kDoctorFlags, false, cmd_doctor},
    {"probe", "[--save]",
     "ask the CUDA and Level Zero drivers (in the helper ucxtls-probe)\n"
     "which devices there are; --save stores the answer for this node,\n"
     "which UCXTLS_PROBE=driver reads",
     "Runs the helper <libexecdir>/ucxtls/ucxtls-probe (<prefix>/libexec/ucxtls/ucxtls-probe as installed; "
     "beside the command in a build tree) as a child, bounded by "
     "UCXTLS_PROBE_TIMEOUT_MS, and prints the CUDA driver API's and the Level Zero loader's answer "
     "per family with the devices they identified. --save stores it for this node (see "
     "UCXTLS_CACHE_DIR); processes with UCXTLS_PROBE=driver read it instead of asking a driver.",
     kProbeFlags, false, cmd_probe},
    {"lib", "", "print the path of libucxtls.so, for LD_PRELOAD=\"$(ucxtls lib)\"",
     "Prints the absolute path of the libucxtls.so installed with this command (beside it in a "
     "build tree or a Python wheel, in its libdir when installed), for LD_PRELOAD=\"$(ucxtls lib)\" "
     "in a container's entrypoint, a pod's command or a Ray runtime_env. Exit 2 when it is not "
     "there, or when its path holds a space or a colon, which LD_PRELOAD cannot hold.",
     kNoFlags, false, cmd_lib},
};

struct ExitStatus {
  const char *status;
  const char *meaning;
};

const ExitStatus kExitStatuses[] = {
    {"0", "success"},
    {"1", "a check failed (doctor: a transport is missing; probe: no driver initialised, saved all the same with --save), or a setting "
          "of ours is invalid"},
    {"2", "a usage or environment error (unknown command or option, no ucx_info, no library, "
          "output that cannot be written)"},
    {"126, 127", "run: COMMAND cannot be executed, or is not found"},
    {"other", "run: COMMAND's own exit status"},
};

void help() {
  printf(
      "usage: ucxtls COMMAND [ARGS]\n"
      "\n"
      "The command beside libucxtls.so: it answers through the library's own decision code.\n"
      "The library sets UCX_TLS before main when nobody has, and only where a hard-coded CUDA rc list\n"
      "would be wrong for the node: all (UCX's default) on AMD or Intel GPU nodes and on NVIDIA ones\n"
      "without an rc device; nothing on NVIDIA nodes with one, nothing without a GPU.\n"
      "UCXTLS_WRITE=always writes the template on every GPU node (the default before 0.2.0).\n"
      "\n"
      "commands:\n");
  for (const Command &c : kCommands) {
    std::string head = std::string(c.name) + " " + c.args;
    const char *text = c.summary;
    bool first = true;
    if (head.size() > 23) printf("  %s\n", head.c_str()), head.clear();
    while (*text) {
      const char *nl = strchr(text, '\n');
      size_t n = nl ? size_t(nl - text) : strlen(text);
      printf("  %-23s %.*s\n", first ? head.c_str() : "", int(n), text);
      first = false;
      text += n + (nl ? 1 : 0);
    }
  }
  printf(
      "  --help, --version, --man\n"
      "\n"
      "ucxtls COMMAND --help (or ucxtls help COMMAND) describes COMMAND and its options.\n"
      "\n"
      "variables of ucxtls (the library and this command read the same):\n");
  for (int v = 0; v < kVarCount; v++) {
    if (v == kOwnVarCount) printf("\nvariables it reads as well:\n");
    const Option &o = kOptions[v];
    if (v < kOwnVarCount) printf("  %-24s default %s\n  %-24s %s\n", o.name, o.def, "", o.meaning);
    else printf("  %-24s %s\n", o.name, o.meaning);
  }
}

// Text for roff: backslashes and hyphens escaped, and no line may start with a control character.
std::string roff(const char *s) {
  std::string o;
  for (; *s; s++) {
    if (*s == '\\') o += "\\e";
    else if (*s == '-') o += "\\-";
    else if (*s == '\n') o += ' ';
    else o += *s;
  }
  if (!o.empty() && (o[0] == '.' || o[0] == '\'')) o.insert(0, "\\&");
  return o;
}

// ucxtls(1), from the tables above and the options table.
void man() {
  printf(".TH UCXTLS 1 \"\" \"ucxtls %s\" \"User Commands\"\n", UCXTLS_VERSION);
  printf(".SH NAME\nucxtls \\- explain, check and apply the UCX_TLS value libucxtls.so derives\n");
  printf(".SH SYNOPSIS\n");
  for (const Command &c : kCommands)
    printf(".B ucxtls %s\n%s%s.br\n", c.name, roff(c.args).c_str(), *c.args ? "\n" : "");
  printf(".B ucxtls\n\\-\\-help | \\-\\-version | \\-\\-man\n.br\n");
  printf(".B ucxtls\nCOMMAND \\-\\-help | help COMMAND\n");
  printf(".SH DESCRIPTION\n%s\n.PP\n%s\n",
         roff("libucxtls.so is an LD_PRELOAD library: before main runs, and only when nobody has "
              "configured UCX_TLS, it sets UCX_TLS where a hard-coded CUDA rc list "
              "(rc_x,rc,dc_x,dc,cuda_copy, what trainers setdefault) would be wrong for the GPUs "
              "the process can use: all, UCX's own default with the node's copy transport "
              "(cuda_copy, rocm_copy, ze_copy), on AMD and Intel GPU nodes and on NVIDIA ones "
              "without an RDMA device UCX's rc transport runs on. On NVIDIA nodes with one, and "
              "where it finds no GPU, it writes nothing: every program runs as with UCX's default. "
              "UCXTLS_WRITE=always writes the template's list on every GPU node instead (the "
              "default before 0.2.0); a UCXTLS_TEMPLATE you set is composed as written. A UCX_TLS "
              "that somebody set stands; with UCXTLS_REPAIR=1, one naming another GPU family's "
              "transports and none of this node's is rewritten to this node's. Preload it by "
              "appending <libdir>/libucxtls.so to LD_PRELOAD.").c_str(),
         roff("ucxtls is the command installed beside it. It answers through the library's own "
              "decision code, so what it says is what a process started from the same shell gets.")
             .c_str());
  printf(".SH COMMANDS\n");
  for (const Command &c : kCommands) {
    printf(".TP\n.B %s\n%s\n", (std::string(c.name) + " " + roff(c.args)).c_str(),
           roff(c.details ? c.details : c.summary).c_str());
    if (c.flags && c.flags->name) {
      printf(".RS\n");
      for (const Flag *f = c.flags; f->name; f++)
        printf(".TP\n.B %s\n%s\n", roff(flag_usage(*f).c_str()).c_str(), roff(f->help).c_str());
      printf(".RE\n");
    }
  }
  printf(".SH EXIT STATUS\n");
  for (const ExitStatus &e : kExitStatuses) printf(".TP\n.B %s\n%s\n", e.status, roff(e.meaning).c_str());
  printf(".SH ENVIRONMENT\nVariables of ucxtls (the library and this command read the same):\n");
  for (int v = 0; v < kVarCount; v++) {
    if (v == kOwnVarCount) printf(".PP\nVariables it reads as well:\n");
    const Option &o = kOptions[v];
    printf(".TP\n.B %s\n%s", o.name, roff(o.meaning).c_str());
    if (v < kOwnVarCount && strcmp(o.def, "-")) printf(" (default: %s)", roff(o.def).c_str());
    printf("\n");
  }
  printf(".SH FILES\n.TP\n.I <libdir>/libucxtls.so\nthe preload library\n"
         ".TP\n.I <libexecdir>/ucxtls/ucxtls\\-probe\nthe driver\\-probe helper that ucxtls probe runs\n"
         ".TP\n.I $XDG_RUNTIME_DIR/ucxtls/driver, /run/ucxtls/driver\n"
         "the driver's answer saved by ucxtls probe \\-\\-save (see UCXTLS_CACHE_DIR)\n");
  printf(".SH SEE ALSO\n%s\n",
         roff("The documentation in the source tree: README.md, docs/how-it-decides.md, "
              "docs/recipes.md, docs/driver-probe.md, docs/command.md.")
             .c_str());
}

// On a terminal the page is shown as `man ucxtls` shows it: the roff goes to `man -l -` (man-db's
// local-file mode, its pager included). Piped or redirected, and where no man runs, the roff itself.
int show_man() {
  int fds[2];
  if (!isatty(STDOUT_FILENO) || pipe2(fds, O_CLOEXEC) != 0) return man(), 0;
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[0], STDIN_FILENO);
    execlp("man", "man", "-l", "-", (char *)nullptr);
    _exit(127);
  }
  close(fds[0]);
  int status = 0;
  if (pid > 0) {
    signal(SIGPIPE, SIG_IGN);  // a man that stopped early: a failed write, not a killed command
    const int tty = dup(STDOUT_FILENO);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[1]);
    man();
    fflush(stdout);
    clearerr(stdout);
    dup2(tty, STDOUT_FILENO);  // closes the pipe: man reads its end
    close(tty);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 127)
      return fail(kUsage, "--man: man -l - failed (ucxtls --man | less shows the roff source)");
  } else {
    close(fds[1]);
  }
  return man(), 0;  // no man to run
}

const Command *find_command(const char *name) {
  for (const Command &c : kCommands)
    if (!strcmp(name, c.name)) return &c;
  return nullptr;
}

// "unknown command" with the closest command's name, by the rule a misspelt variable's is found
// (options.cc closest_option: at most 2 edits, and fewer than half the name's letters).
std::string unknown_command(const std::string &what, const char *name) {
  const Command *best = nullptr;
  size_t best_d = 3;
  for (const Command &c : kCommands) {
    const size_t d = edit_distance(name, strlen(name), c.name, strlen(c.name));
    if (d < best_d && 2 * d < strlen(c.name)) best = &c, best_d = d;
  }
  return what + "unknown command '" + name + "'" + (best ? std::string("; did you mean ") + best->name + "?" : "") +
         " (try ucxtls --help)";
}

}  // namespace

int main(int argc, char **argv) {
  install_guards();  // closed descriptors, lost output, no memory (exit.h)
  if (argc < 2) {
    std::string names;
    for (const Command &c : kCommands) names += (names.empty() ? "" : "|") + std::string(c.name);
    fprintf(stderr, "usage: ucxtls %s ... (ucxtls --help)\n", names.c_str());
    return kUsage;
  }
  const char *cmd = argv[1];
  if (const Command *c = find_command(cmd)) {
    std::vector<std::string> store;
    std::vector<char *> args;
    int status = prepare_args(*c, argc - 2, argv + 2, &store, &args);
    return status >= 0 ? status : c->run(int(args.size()) - 1, args.data());
  }
  if (!strcmp(cmd, "help") && argc > 2) {
    if (const Command *c = find_command(argv[2])) return command_help(*c), 0;
    return fail(kUsage, unknown_command("help: ", argv[2]));
  }
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) return help(), 0;
  if (!strcmp(cmd, "--version")) return printf("ucxtls %s\n", UCXTLS_VERSION), 0;
  if (!strcmp(cmd, "--man")) return show_man();
  return fail(kUsage, unknown_command("", cmd));
}
