"""What test_doctor_fidelity.py's cases share: fake UCX builds and modules compiled here, the
probe program (the real loader's answer), and doctor --json's answer."""
import atexit
import json
import os
import shutil
import subprocess
import tempfile

from harness import LIB, env_for

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))
WORK = tempfile.mkdtemp(prefix="ucxtls-fidelity-")


os.chmod(WORK, 0o755)


atexit.register(shutil.rmtree, WORK, True)

EXPORT = '#define EXPORT __attribute__((visibility("default")))\n'


# probe LIBUCP [--wait] [MODULE...]: what the real loader does with a build. It dlopens LIBUCP, says
# which file defines ucs_status_string as ld.so named it (dladdr's dli_fname, UCX's
# ucs_module_loader_add_dl_dir), getenv's UCX_TLS, then dlopens each module as UCX does
# (RTLD_LAZY | RTLD_LOCAL, module.c ucs_module_flags_to_dlopen_mode) and prints dlerror.
PROBE = r'''#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  void *ucp = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!ucp) return printf("error %s\n", dlerror()), 0;
  Dl_info info;
  void *sym = dlsym(ucp, "ucs_status_string");
  if (sym && dladdr(sym, &info)) printf("libucs %s\n", info.dli_fname);
  printf("getenv %s\n", getenv("UCX_TLS") ? getenv("UCX_TLS") : "<unset>");
  int wait = argc > 2 && !strcmp(argv[2], "--wait");
  for (int i = 2 + wait; i < argc; i++) {
    void *m = dlopen(argv[i], RTLD_LAZY | RTLD_LOCAL);
    const char *why = m ? "" : dlerror();
    printf("module %s %s\n", argv[i], m ? "loaded" : why);
  }
  if (wait) {
    printf("ready\n");
    char c;
    while (read(0, &c, 1) > 0) {}
  }
  return 0;
}
'''


# execenv N NAME=V... PROGRAM ARG...: PROGRAM with exactly those N environment entries, in that
# order, duplicates kept (what env(1) and Python cannot give).
EXECENV = r'''#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  char **env = calloc((size_t)n + 1, sizeof *env);
  for (int i = 0; i < n; i++) env[i] = argv[2 + i];
  execve(argv[2 + n], argv + 2 + n, env);
  return 127;
}
'''


def cc(out, source, *flags):
    """Compiles C source to out (a shared object when out's name has .so); out."""
    os.makedirs(os.path.dirname(out), exist_ok=True)
    src = out + ".c"
    with open(src, "w") as f:
        f.write(source)
    shared = ["-shared", "-fPIC", "-fvisibility=hidden"] if ".so" in os.path.basename(out) else []
    subprocess.run(["cc", "-O1"] + shared + ["-o", out, src] + list(flags), check=True)
    os.unlink(src)
    return out


def tools():
    if not os.path.exists(os.path.join(WORK, "probe")):
        cc(os.path.join(WORK, "probe"), PROBE, "-ldl")
        cc(os.path.join(WORK, "execenv"), EXECENV)
    return os.path.join(WORK, "probe"), os.path.join(WORK, "execenv")


def ucp(d, version="1.22.0", transports=("tcp", "self"), modules=None, flags=()):
    """d/libucp.so.0: a fake UCX that is its own libucs and libuct (ucs_status_string,
    uct_query_components), with the module list compiled in when given (":x:y")."""
    src = EXPORT + 'EXPORT const char *ucp_get_version_string(void) { return "%s"; }\n' % version
    src += 'EXPORT const char *ucs_status_string(int s) { return s ? "error" : "Success"; }\n'
    src += 'EXPORT const char *uct_query_components(void) { return %s; }\n' % ('"%s"' % modules if modules else "0")
    src += "".join('EXPORT char uct_%s_tl[64] = "%s";\n' % (t, t) for t in transports)
    return cc(os.path.join(d, "libucp.so.0"), src, "-Wl,-soname,libucp.so.0", *flags)


def module(path, tl, *flags):
    """A transport module registering tl (flags: its NEEDED libraries, RPATH...)."""
    return cc(path, EXPORT + 'EXPORT char uct_%s_tl[64] = "%s";\n' % (tl, tl), "-Wl,--no-as-needed", *flags)


def doctor(args, env=None, cwd=None, argv_env=None):
    """(exit status, doctor --json's object); argv_env: the exact environment entries (execenv)."""
    argv = [CLI, "doctor", "--json"] + args
    if argv_env is not None:
        argv = [tools()[1], str(len(argv_env))] + argv_env + argv
    p = subprocess.run(argv, env=env or env_for(None, preload=False), cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, {"error": p.stderr.decode(errors="replace")}


def modules(j):
    """{module path: "loaded" or why} of doctor's first build."""
    if not j.get("ucx"):
        return {"doctor read no build": repr(j)}
    return {m["path"]: "loaded" if m["loads"] else m["why"] for m in j["ucx"][0]["modules"]}
