// `ucxtls doctor [--value V | --template T]`: does the local UCX (ucx_info -d) serve every
// transport of the value in effect, of V, or of what template T composes to here? A transport it
// lacks makes UCX print "not available" on the stdout of every process that uses the value.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "report.h"

namespace ucxtls {
namespace cli {
namespace {

// UCX's alias table (ucp_tl_aliases in UCX's src/ucp/core/ucp_context.c, master = v1.21/v1.22;
// docs/design.md, "Facts and sources").
// An alias counts as served when any member is, an aux-only member included, which is exactly
// when UCX does not print "not available" for it.
struct Alias {
  const char *name;
  const char *members;
};
const Alias kAliases[] = {
    {"mm", "posix,sysv,xpmem"},
    {"sm", "posix,sysv,xpmem,knem,cma"},
    {"shm", "posix,sysv,xpmem,knem,cma"},
    {"ib", "rc_verbs,ud_verbs,rc_mlx5,ud_mlx5,dc_mlx5,gga_mlx5,ud_mlx5:aux,ud_verbs:aux,srd,rc_gda"},
    {"ud_v", "ud_verbs"},
    {"ud_x", "ud_mlx5"},
    {"ud", "ud_mlx5,ud_verbs"},
    {"rc_v", "rc_verbs,ud_verbs:aux"},
    {"rc_x", "rc_mlx5,ud_mlx5:aux"},
    {"rc", "rc_mlx5,ud_mlx5:aux,rc_verbs,ud_verbs:aux"},
    {"dc", "dc_mlx5,ud_mlx5:aux"},
    {"dc_x", "dc_mlx5,ud_mlx5:aux"},
    {"ugni", "ugni_smsg,ugni_udt:aux,ugni_rdma"},
    {"cuda", "cuda_copy,cuda_ipc,gdr_copy"},
    {"rocm", "rocm_copy,rocm_ipc,rocm_gdr"},
    {"ze", "ze_copy,ze_ipc,ze_gdr"},
    {"gaudi", "gaudi_gdr"},
    {"gga", "gga_mlx5"},
};

std::string strip_aux(const std::string &s) {
  size_t k = s.find(':');
  return k == std::string::npos ? s : s.substr(0, k);
}

// Runs `ucx_info -d` and collects its "Transport:" names. The child gets the caller's
// environment without UCX_TLS (it must not narrow what UCX reports) and with the library off.
bool ucx_transports(const Environment &env, std::vector<std::string> *tls, std::string *err) {
  std::vector<char *> envp;
  for (char *const *e = env.envp(); *e; e++)
    if (strncmp(*e, "UCX_TLS=", 8) && strncmp(*e, "UCXTLS_DERIVED=", 15) && strncmp(*e, "UCXTLS_DISABLE=", 15))
      envp.push_back(*e);
  char off[] = "UCXTLS_DISABLE=1";
  envp.push_back(off);
  envp.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) return *err = std::string("pipe: ") + strerror(errno), false;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return *err = std::string("fork: ") + strerror(errno), false;
  if (pid == 0) {
    dup2(fds[1], 1);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);  // UCX's own warnings are not the point here
    char *argv[] = {(char *)"ucx_info", (char *)"-d", nullptr};
    execvpe(argv[0], argv, envp.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  read_all(fds[0], &out);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return *err = "cannot run ucx_info (not in PATH? Debian/Ubuntu: apt-get install ucx-utils)", false;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return *err = "ucx_info -d failed (status " + std::to_string(status) + ")", false;
  for (const std::string &line : split(out.c_str(), "\n")) {
    size_t k = line.find("Transport:");
    if (line.empty() || line[0] != '#' || k == std::string::npos) continue;
    size_t b = line.find_first_not_of(" \t", k + 10), e = line.find_first_of(" \t\r", b);
    if (b == std::string::npos) continue;
    std::string name = line.substr(b, e == std::string::npos ? std::string::npos : e - b);
    bool dup = false;
    for (const std::string &t : *tls) dup = dup || t == name;
    if (!dup) tls->push_back(name);
  }
  if (tls->empty()) return *err = "ucx_info -d listed no transport", false;
  return true;
}

}  // namespace

int cmd_doctor(int argc, char **argv) {
  const char *explicit_value = nullptr, *tmpl = nullptr;
  const char *usage = " (ucxtls doctor [--value V | --template T])";
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    bool value_opt = !strcmp(a, "--value"), tmpl_opt = !strcmp(a, "--template");
    if ((value_opt || tmpl_opt) && i + 1 >= argc) return fail(kUsage, std::string("doctor: ") + a + " needs an argument" + usage);
    if (value_opt) explicit_value = argv[++i];
    else if (tmpl_opt) tmpl = argv[++i];
    else if (!strncmp(a, "--value=", 8)) explicit_value = a + 8;
    else if (!strncmp(a, "--template=", 11)) tmpl = a + 11;
    else return fail(kUsage, std::string("doctor: unknown option '") + a + "'" + usage);
  }
  if (explicit_value && tmpl) return fail(kUsage, std::string("doctor: --value and --template are alternatives") + usage);
  // A value with placeholders is a template: check what it composes to here.
  const char *tmpl_option = "--template";  // the option the user typed, named in its error
  if (explicit_value && strchr(explicit_value, '{')) tmpl = explicit_value, explicit_value = nullptr, tmpl_option = "--value";
  auto r = std::make_unique<Report>();
  std::string value, source;
  if (explicit_value) {
    value = explicit_value;
    source = "--value";
    r->env.load();
  } else {
    evaluate(r.get(), tmpl);
    if (r->d.error && tmpl && r->s.invalid_var == kTemplate)  // the option's text, not UCXTLS_TEMPLATE's
      return fail(kFailed, std::string("doctor: ") + tmpl_option + " '" + tmpl + "' " + r->s.invalid_why);
    if (r->d.error) {
      fputs(library_line(*r).c_str(), stderr);
      return kFailed;
    }
    const char *v = effective_value(r->in, r->d);
    if (!v && r->f.ucx_conf == Tri::yes) {
      printf("UCX_TLS is not in the environment: UCX takes it from %s; check that value with --value\n",
             r->f.ucx_conf_evidence);
      return 0;
    }
    if (!v) {
      printf("UCX_TLS stays unset here (%s): UCX uses every transport it has; nothing to check\n",
             action_name(r->d.action));
      return 0;
    }
    value = v;
    source = tmpl ? std::string("composed here from ") + tmpl
                  : r->d.action == Action::set ? "derived by ucxtls" : "UCX_TLS as set";
  }

  std::vector<std::string> have;
  std::string err;
  // A replayed machine has no UCX of its own to ask (as `ucxtls probe` says of its drivers).
  if (!r->in.secure && (explicit_value ? getenv(kOptions[kSysroot].name) : r->in.get(kSysroot)))
    fprintf(stderr, "ucxtls: doctor: UCXTLS_SYSROOT is set: the UCX checked (ucx_info -d) is this machine's, not the "
                    "replayed machine's\n");
  if (!ucx_transports(r->env, &have, &err)) return fail(kUsage, "doctor: " + err);
  auto served = [&](const std::string &name) {
    for (const std::string &t : have)
      if (t == name) return true;
    return false;
  };
  std::string list;
  for (const std::string &t : have) list += (list.empty() ? "" : ", ") + t;
  printf("value       %s (%s)\n", value.c_str(), source.c_str());
  printf("this UCX    %s (ucx_info -d)\n", list.c_str());

  std::string items = value;
  bool deny = !items.empty() && items[0] == '^';
  if (deny) items.erase(0, 1);
  if (items.empty()) {
    printf("MISSING     every transport: an empty list makes UCX fail (\"The TLs list is empty\")\n");
    return fail(kFailed, "doctor: UCX_TLS is empty: UCX fails to create a context (\"The TLs list is empty\")");
  }
  std::vector<std::string> missing;
  for (const std::string &item : split(items.c_str(), ",")) {
    std::string name = strip_aux(item);
    bool exact = !name.empty() && name[0] == '\\';  // \name: the transport itself, not an alias
    if (exact) name.erase(0, 1);
    std::string via;  // which members serve it
    bool ok = name == "all" || served(name);
    if (!exact) {
      for (const Alias &a : kAliases) {
        if (name != a.name) continue;
        for (const std::string &m : split(a.members, ","))
          if (served(strip_aux(m))) ok = true, via += (via.empty() ? "" : ",") + m;
      }
    }
    if (deny && ok) {
      printf("%-11s %s\n", "denied", item.c_str());
    } else if (deny) {
      // Harmless to the context, yet UCX 1.13 (measured) warns about it like an allowed name;
      // the newest UCX does not (docs/design.md, "Facts and sources"). Reported, since it is in
      // the value for nothing.
      printf("%-11s %s (denied, and not in this UCX: some UCX releases warn about it)\n", "MISSING", item.c_str());
      missing.push_back(item);
    } else if (ok) {
      printf("%-11s %s%s%s\n", "ok", item.c_str(), via.empty() ? "" : " -> ", via.c_str());
    } else {
      bool blank = item.find_first_of(" \t") != std::string::npos;  // UCX does not trim entries
      printf("%-11s %s%s\n", "MISSING", item.c_str(), blank ? " (has a space: UCX does not trim entries)" : "");
      missing.push_back(item);
    }
  }
  if (missing.empty()) return 0;
  std::string names;
  for (const std::string &m : missing) names += (names.empty() ? "" : ", ") + m;
  fprintf(stderr, "ucxtls: doctor: this UCX cannot serve %s: it prints \"not available\" on stdout of every process that uses this value\n",
          names.c_str());
  return kFailed;
}


}  // namespace cli
}  // namespace ucxtls
