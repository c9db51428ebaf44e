#!/usr/bin/env python3
"""Plants each bug that tests/unit/test_planted_bugs.cc names (a few rows are test_core.cc's, test_repair.cc's,
test_device_rules.cc's, test_doctor_reading.cc's and test_oci_hook.cc's), one at a time, in the working tree;
rebuilds the unit binary; shows which test cases fail; and restores the file (git checkout).
By hand, from the source root, with a configured build directory:

    python3 tests/unit/plant_bugs.py [build]

Every mutant must make its own row fail (exit status 1 when one does not). Not run by CTest: it
edits the sources it checks.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"

# file, the code, the bug planted in its place, the test case that must fail
MUTANTS = [
    ("shim/environ_edit.cc", "size + size_t(missing) + 1 > room_cap", "size + size_t(missing) > room_cap",
     "env_write: the environment grew by exactly one entry"),
    ("shim/options.cc", "    if (k != n) continue;", "    if (k < n) continue;",
     "settings: invalid values"),
    ("shim/decide.cc", 'if (!d->value[0] || !strcmp(d->value, "^")) {', "if (!d->value[0]) {",
     "compose: a value of ^ alone is never written"),
    ("shim/decide.cc", "return error(d, Reason::invalid);\n  }\n  if (!reasons_read && !s.repair) return;",
     "}\n  if (!reasons_read && !s.repair) return;",
     "repair: a kept value is not repaired while a setting is invalid"),
    ("shim/repair.cc", "if (k == n && !memcmp(p, e, n)) return true;", "if (k >= n && !memcmp(p, e, n)) return true;",
     "repair: a rewritten entry that is a prefix of an earlier one is not a repeat"),
    ("shim/repair.cc", "if (node == Family::none || !value || value[0] == '^') return false;",
     "if (node == Family::none || !value) return false;",
     "repair_value: other families' entries rewritten"),
    ("shim/driver_cache.cc", "if (fd == -ENOENT) return close_fd(dfd), Found::missing;",
     'if (fd == -ENOENT) return close_fd(dfd), reject(ev, dir, "missing");',
     "driver tier: a cache directory without the file gives way to the next place"),
    # Slips the suite once missed (each row's comment says why it fails): the driver tier, RoCE
    # GIDs, doctor's reading (cli/, test_doctor_reading.cc) and the node hook's mounts.
    ("shim/driver_cache.cc", "f.mtime_ns > cache_mtime_ns", "f.mtime_ns >= cache_mtime_ns",
     "driver tier: a device node with the same mtime as the saved answer is not stale"),
    ("shim/probe_rdma.cc", "out->gda_fails = verdict == RocePort::no_gid && mlx5 && out->port == 1;", "out->gda_fails = false;",
     "decide on a replayed node: a RoCE port whose GIDs are all zero"),
    ("shim/probe_rdma.cc", "return r == 0 ? 1 : absent(r) ? 0 : r;", "return r == 0 || absent(r) ? 1 : r;",
     "decide on a replayed node: a RoCE port whose GIDs are all zero"),
    ("shim/device_rules.cc", "if (digits++ >= 16 && c != '0')", "if (digits++ >= 24 && c != '0')",
     "RDMA: a RoCE port's link layer, GIDs and net device names"),
    ("cli/elf.cc", "vaddr - l.vaddr <= l.filesz - n", "vaddr - l.vaddr < l.filesz - n",
     "ELF: a range that ends exactly at its segment's end is readable"),
    ("cli/ld_search.cc", 'split(value, ":;")', 'split(value, ":")',
     "ld.so's search: LD_LIBRARY_PATH"),
    ("cli/ld_search.cc", "if (!value || !*value || secure) return dirs;", "if (!value || !*value) return dirs;",
     "ld.so's search: LD_LIBRARY_PATH"),
    ("cli/ld_search.cc",
     "  for (const std::string &d : library_path)\n"
     "    for (const std::string &x : expand(d, exe.empty() ? \".\" : dir_of(exe))) dirs.push_back(x);\n"
     "  if (self.has_runpath)\n"
     "    for (const std::string &d : expand(self.runpath, dir_of(objects[size_t(from)].path))) dirs.push_back(d);\n",
     "  if (self.has_runpath)\n"
     "    for (const std::string &d : expand(self.runpath, dir_of(objects[size_t(from)].path))) dirs.push_back(d);\n"
     "  for (const std::string &d : library_path)\n"
     "    for (const std::string &x : expand(d, exe.empty() ? \".\" : dir_of(exe))) dirs.push_back(x);\n",
     "ld.so's search: LD_LIBRARY_PATH"),
    ("cli/ucx_settings.cc", '{"HOME", "UCX_CONFIG_DIR"}', '{"UCX_CONFIG_DIR", "HOME"}',
     "ucx.conf: UCX's order, $HOME before $UCX_CONFIG_DIR"),
    ("cli/root_fs.cc", "if (n > root.bytes_left) n = root.bytes_left, root.note(\"its budget of 256 MiB read\");", "",
     "root_fs: a read gets at most what is left of doctor's byte budget"),
    ("helper/oci_hook_mounts.cc", "if (answer == Link::kNo && i + 1 < parts.size()) {",
     "if (false && i + 1 < parts.size()) {",
     "mounts: below a missing directory the path is kept as written"),
    ("helper/oci_hook_mounts.cc", "if (answer == Link::kNo && one_fs && fstatat(", "if (false && one_fs && fstatat(",
     "mounts: a bind without rbind whose path ends on a host mount point"),
]


def main():
    missed = 0
    for path, code, bug, row in MUTANTS:
        full = os.path.join(ROOT, path)
        text = open(full).read()
        if text.count(code) != 1:
            print("MISSING %s: %r is not there once (the code changed: update this list)" % (path, code))
            missed += 1
            continue
        try:
            with open(full, "w") as f:
                f.write(text.replace(code, bug))
            build = subprocess.run(["cmake", "--build", BUILD, "-j2", "--target", "unit_tests"], cwd=ROOT,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            out = "" if build.returncode else subprocess.run(
                [os.path.join(BUILD, "tests", "unit_tests")], cwd=ROOT, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT).stdout.decode(errors="replace")
        finally:
            with open(full, "w") as f:
                f.write(text)
        failed = [l.split("TEST CASE:", 1)[1].strip() for l in out.splitlines() if "TEST CASE:" in l]
        caught = any(name.startswith(row) for name in failed)
        print("%s %s: %s\n     failing: %s" % ("caught" if caught else "MISSED", path, bug, "; ".join(failed) or "none"))
        missed += not caught
    subprocess.run(["cmake", "--build", BUILD, "-j2", "--target", "unit_tests"], cwd=ROOT, stdout=subprocess.DEVNULL)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
