#!/usr/bin/env python3
"""Go programs (cgo, dynamically linked) as hosts: what they see of the library's value.

A cgo program is linked against libc.so.6, so ld.so loads the library into it and the
constructor runs, before Go's runtime starts. Go's os.Getenv/os.Environ do not ask libc: the
runtime copies the environment from the process's initial envp array when it starts (after the
constructors). So a Go program sees what the library edited in that array in place (a replaced
or removed UCX_TLS) and never what it added (a new array, published to libc's `environ` only);
C code in the same process (getenv, and UCX through it) sees every case. Measured here, and the
README states it with the ways out:
- set (nothing inherited): os.Getenv and os.Environ see no UCX_TLS; C getenv sees the value;
- re-derive (an inherited pair replaced in place) and clear (removed in place): Go sees the edit;
- a Go launcher that applies its own default when UCX_TLS is unset (setdefault) and execs a
  child: the child gets the launcher's value (kept by the library), not ours;
- `ucxtls run` in front: the same as LD_PRELOAD (the library still runs inside the Go process);
- `eval "$(ucxtls env)"` in front: the value is in the initial environment, so Go sees it and a
  setdefault keeps it;
- a static Go program (CGO_ENABLED=0) does not load the library at all.
SKIPs without Debian's golang-go (scripts/test.sh installs it).
"""
import os
import subprocess

from common import C, LIB, Z, case, env_for, have, main, run, scratch_dir

CLI = os.environ.get("UCXTLSTEST_CLI", os.path.join(os.path.dirname(LIB), "ucxtls"))

GO_HOST = r"""package main

/*
#include <stdlib.h>
static const char *c_getenv(const char *n) { return getenv(n); }
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"unsafe"
)

func cGetenv(name string) string {
	n := C.CString(name)
	defer C.free(unsafe.Pointer(n))
	if v := C.c_getenv(n); v != nil {
		return C.GoString(v)
	}
	return "<unset>"
}

func main() {
	v, ok := os.LookupEnv("UCX_TLS")
	if !ok {
		v = "<unset>"
	}
	listed := "<unset>"
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "UCX_TLS=") {
			listed = e[len("UCX_TLS="):]
		}
	}
	fmt.Printf("getenv=%s environ=%s c=%s\n", v, listed, cGetenv("UCX_TLS"))
	if len(os.Args) > 1 && os.Args[1] == "launch" { // a launcher's setdefault, then its child
		if _, ok := os.LookupEnv("UCX_TLS"); !ok {
			os.Setenv("UCX_TLS", "rc,cuda_copy")
		}
		os.Stdout.Sync()
		sh := "/bin/sh"
		syscall.Exec(sh, []string{sh, "-c", `printf "child=%s\n" "$UCX_TLS"`}, os.Environ())
	}
}
"""
STATIC_HOST = r"""package main

import "fmt"

func main() { fmt.Println("static") }
"""
_built = {}


def built(t):
    """{"cgo": path, "static": path}, built once; the case ends with SKIP without go."""
    if not have("go"):
        t.skip("Go hosts", "go not installed (Debian golang-go; scripts/test.sh installs it)")
        t.exit()
    if not _built:
        work = scratch_dir("ucxtls-go-")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "GOCACHE": os.path.join(work, "cache"),
               "GOPATH": os.path.join(work, "gopath"), "GOFLAGS": "-mod=mod", "GO111MODULE": "on"}
        for name, source, cgo in (("cgo", GO_HOST, "1"), ("static", STATIC_HOST, "0")):
            d = os.path.join(work, name)
            os.makedirs(d)
            with open(os.path.join(d, "main.go"), "w") as f:
                f.write(source)
            with open(os.path.join(d, "go.mod"), "w") as f:
                f.write("module gohost\n\ngo 1.19\n")
            p = subprocess.run(["go", "build", "-o", os.path.join(work, name + "_host"), "."], cwd=d,
                               env=dict(env, CGO_ENABLED=cgo), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=600)
            if not t.check("go build (%s)" % name, p.returncode == 0, p.stdout.decode()[-2000:]):
                t.exit()
            _built[name] = os.path.join(work, name + "_host")
    return _built


def seen(p):
    return p.stdout.decode().strip(), p.stderr.decode()


@case("a cgo Go program: what os.Getenv, os.Environ and C getenv see")
def cgo_host(t):
    go = built(t)["cgo"]
    dyn = subprocess.run(["readelf", "-d", go], stdout=subprocess.PIPE).stdout.decode()
    t.check("the cgo program is dynamically linked against libc.so.6 (ld.so loads the library)",
            "libc.so.6" in dyn, dyn)
    rows = [("set (nothing inherited)", "dgx", {}, "getenv=<unset> environ=<unset> c=%s" % C),
            ("re-derive (an inherited pair, replaced in place)", "dgx", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z},
             "getenv=%s environ=%s c=%s" % (C, C, C)),
            ("clear (an inherited pair, removed in place)", "no-gpu", {"UCX_TLS": Z, "UCXTLS_DERIVED": Z},
             "getenv=<unset> environ=<unset> c=<unset>")]
    for label, machine, inherited, want in rows:
        out, err = seen(run([go], env_for(machine, **inherited)))
        t.equal("LD_PRELOAD, %s: Go and C see" % label, out, want, err)
    out, err = seen(run([go, "launch"], env_for("dgx")))
    t.equal("a Go launcher's setdefault: its child gets the launcher's value, not the library's", out,
            "getenv=<unset> environ=<unset> c=%s\nchild=rc,cuda_copy" % C, err)
    out, err = seen(run([CLI, "run", go, "launch"], env_for("dgx", preload=False)))
    t.equal("ucxtls run in front: the same (the library runs inside the Go process)", out,
            "getenv=<unset> environ=<unset> c=%s\nchild=rc,cuda_copy" % C, err)
    script = 'eval "$("$0" env)" && exec "$1" launch'
    out, err = seen(run(["/bin/sh", "-c", script, CLI, go], env_for("dgx")))
    t.equal('eval "$(ucxtls env)" in front: Go sees the value, and the setdefault keeps it', out,
            "getenv=%s environ=%s c=%s\nchild=%s" % (C, C, C, C), err)


@case("a static Go program does not load the library")
def static_host(t):
    go = built(t)["static"]
    dyn = subprocess.run(["readelf", "-d", go], stdout=subprocess.PIPE).stdout.decode()
    t.check("the CGO_ENABLED=0 program has no dynamic section", "NEEDED" not in dyn, dyn)
    p = run([go], env_for("dgx", UCXTLS_DEBUG="1"))
    t.equal("static Go under LD_PRELOAD with UCXTLS_DEBUG=1: runs, and the library says nothing (never loaded)",
            (p.returncode, p.stdout.decode(), p.stderr.decode()), (0, "static\n", ""))


if __name__ == "__main__":
    main("Go programs as hosts (cgo and static)")
