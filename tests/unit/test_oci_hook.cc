// Unit tests of the OCI hook's pure part (helper/oci_hook_core.h): reading the state and config.json
// a runtime writes, the device rule, /etc/ld.so.preload as glibc reads it, the path rules: table rows.
#include <doctest/doctest.h>

#ifndef UCXTLS_HAVE_OCI_HOOK
TEST_CASE("the OCI hook's pure part") {
  FAIL("the hook was not built: nlohmann-json is not installed (Debian nlohmann-json3-dev; scripts/test.sh installs it)");
}
#else
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "oci_hook_core.h"
#include "oci_hook_mounts.h"

using namespace ucxtls;

namespace {

std::string bundle_of(const std::string &doc) {
  ContainerState st;
  return read_container_state(doc.data(), doc.size(), &st) ? st.bundle : "<none>";
}

}  // namespace

TEST_CASE("state: the bundle, escapes decoded; what is not JSON answers nothing") {
  struct Row {
    std::string doc, want;
  };
  const Row rows[] = {
      {R"({"bundle":"/run/b"})", "/run/b"},
      {R"( {"a":[1,2,{"x":null}],"bundle" : "/r\/b\u00e9\ud83d\ude00"} )", "/r/b\xc3\xa9\xf0\x9f\x98\x80"},
      {R"({"bundle":"a\"b\\c\n"})", "a\"b\\c\n"},
      {R"({"nested":{"bundle":"/x"}})", "<none>"},       // members of this object only
      {R"({"bundle":1.5e3})", "<none>"},                 // not a string
      {R"({"bundle":""})", "<none>"},
      {R"({"bundle":"/x",})", "<none>"},                 // trailing comma: not JSON
      {R"({"bundle":"/x"} trailing)", "<none>"},
      {R"({"bundle":"/x")", "<none>"},                   // cut short
      {R"({"bundle":"a\u0000b"})", "<none>"},            // a NUL cannot be a path
      {R"({"bundle":"tab	inside"})", "<none>"},          // raw control character
      {"{\"bundle\":\"/\xff\"}", "<none>"},               // not UTF-8
      {R"({"a":tru,"bundle":"/x"})", "<none>"},
      {R"({"a":01,"bundle":"/x"})", "<none>"},
      {R"({"a":1e99999,"bundle":"/x"})", "<none>"},      // a number no double holds
      {R"(/* c */ {"bundle":"/x"})", "<none>"},          // no comments in RFC 8259
      {R"({"a":-0.5E+2,"b":[true,false,null,[]],"bundle":"/x"})", "/x"},
      // Two members of one name: the last, as runc's encoding/json reads config.json and state.
      {R"({"bundle":"/first","bundle":"/second"})", "/second"},
      {"", "<none>"},
  };
  for (const Row &r : rows) {
    CAPTURE(r.doc);
    CHECK(bundle_of(r.doc) == r.want);
  }
  ContainerState st;
  const std::string with_id = R"({"id":"abc","bundle":"/b"})";
  REQUIRE(read_container_state(with_id.data(), with_id.size(), &st));
  CHECK(st.id == "abc");
  std::string deep = R"({"bundle":"/x","d":)" + std::string(kJsonMaxDepth + 1, '[') + std::string(kJsonMaxDepth + 1, ']') + "}";
  CHECK(bundle_of(deep) == "<none>");  // nesting beyond any runtime's document
  std::string shallow = R"({"bundle":"/x","d":)" + std::string(kJsonMaxDepth - 1, '[') + std::string(kJsonMaxDepth - 1, ']') + "}";
  CHECK(bundle_of(shallow) == "/x");
}

TEST_CASE("config.json: root.path, process.env and linux.devices as a runtime writes them") {
  const char *config = R"({"ociVersion":"1.0.2-dev","process":{"env":["PATH=/bin","LD_PRELOAD=/img/a.so","X"]},
    "root":{"path":"rootfs","readonly":true},
    "mounts":[{"destination":"/proc","type":"proc"},{"type":"bind"},{"destination":"/usr","options":["ro"]}],
    "linux":{"devices":[{"path":"/dev/nvidia0","type":"c","major":195,"minor":0},{"type":"c"},{"path":"/dev/nvidiactl"}]}})";
  ContainerSpec spec;
  REQUIRE(read_container_spec(config, strlen(config), &spec));
  CHECK(spec.root == "rootfs");
  CHECK(spec.env == std::vector<std::string>{"PATH=/bin", "LD_PRELOAD=/img/a.so", "X"});
  CHECK(spec.devices == std::vector<std::string>{"/dev/nvidia0", "/dev/nvidiactl"});
  REQUIRE(spec.mounts.size() == 2);
  CHECK(spec.mounts[0].destination == "/proc");
  CHECK(spec.mounts[0].type == "proc");
  CHECK(spec.mounts[1].destination == "/usr");
  CHECK_FALSE(spec.mounts[1].bind);
  CHECK(env_value(spec.env, "LD_PRELOAD") == "/img/a.so");
  CHECK(env_value(spec.env, "UCX_TLS") == "");
  ContainerSpec none;
  CHECK_FALSE(read_container_spec(R"({"root":{}})", 11, &none));
  const char *no_devices = R"({"root":{"path":"/r"}})";
  CHECK(read_container_spec(no_devices, strlen(no_devices), &none));
  CHECK(none.devices.empty());
}

TEST_CASE("a GPU device node, as the library counts them") {
  struct Row {
    const char *path;
    bool gpu;
  };
  const Row rows[] = {
      {"/dev/nvidia0", true},       {"/dev/nvidia17", true},      {"/dev/kfd", true},
      {"/dev/dri/renderD128", true}, {"/dev/nvidiactl", false},    {"/dev/nvidia-uvm", false},
      {"/dev/nvidia", false},       {"/dev/dri/card0", false},    {"/dev/dri/renderD", false},
      {"/dev/infiniband/uverbs0", false}, {"/dev/null", false},  {"/dev/nvidia0x", false},
  };
  for (const Row &r : rows) {
    CAPTURE(r.path);
    CHECK(is_gpu_device_node(r.path) == r.gpu);
  }
}

TEST_CASE("LD_PRELOAD lists and the container's root") {
  CHECK(preload_list_has_ucxtls("/opt/ucxtls/lib/libucxtls.so"));
  CHECK(preload_list_has_ucxtls("/a/libother.so:/usr/lib/x/libucxtls.so"));
  CHECK(preload_list_has_ucxtls("/a/libother.so libucxtls.so"));
  CHECK(preload_list_has_ucxtls("::/a/libother.so:: /x/libucxtls.so "));
  // glibc splits the variable at spaces and colons alone (elf/rtld.c handle_preload_list): a
  // newline or a tab is part of a name, and that name is no libucxtls.so.
  CHECK_FALSE(preload_list_has_ucxtls("/a/libother.so\nlibucxtls.so"));
  CHECK_FALSE(preload_list_has_ucxtls("/a/libother.so\tlibucxtls.so"));
  CHECK_FALSE(preload_list_has_ucxtls("/a/libother.so:libucxtls.so\n"));
  CHECK_FALSE(preload_list_has_ucxtls("/a/libucxtls.so.1 /b/libnotucxtls.so"));
  CHECK_FALSE(preload_list_has_ucxtls(""));
  CHECK(rootfs_path("/run/b", "rootfs") == "/run/b/rootfs");
  CHECK(rootfs_path("/run/b/", "rootfs") == "/run/b/rootfs");
  CHECK(rootfs_path("/run/b", "/var/lib/merged") == "/var/lib/merged");
}

TEST_CASE("/etc/ld.so.preload read as glibc 2.36's ld.so reads it") {
  using V = std::vector<std::string>;
  struct Row {
    std::string file;
    V names;
  };
  const Row rows[] = {
      {"", {}},
      {"/a.so\n", {"/a.so"}},
      {"/a.so", {"/a.so"}},                                   // no newline at the end
      {"/a.so:/b.so /c.so\t/d.so\n\n", {"/a.so", "/b.so", "/c.so", "/d.so"}},
      {"/a.so\r\n", {"/a.so\r"}},                             // '\r' is no separator
      {"#/opt/ucxtls/lib/libucxtls.so\n", {}},                // a comment
      {"/a.so # the rest #of the line\n/b.so", {"/a.so", "/b.so"}},
      // glibc's loop searches from the file's start with what is left of its length: the second
      // comment is blanked only as far as that length reaches, its other words are loaded.
      {"# one\n/opt/img/a.so\n# two\n", {"/opt/img/a.so", "two"}},
      {std::string("/a.so\0/b.so\n", 12), {"/a.so"}},          // the split ends at a NUL
      {std::string("a\0b\n/x/c", 9), {"a", "/x/c"}},           // but a last name is read apart
      {std::string("/a.so\0", 6), {"/a.so"}},
  };
  for (const Row &r : rows) {
    CAPTURE(r.file);
    CHECK(glibc_preload_names(r.file) == r.names);
  }
}

TEST_CASE("the new /etc/ld.so.preload: the image's names, then ours; or nothing written") {
  const std::string lib = "/usr/lib/ucxtls-oci-hook/libucxtls.so";
  struct Row {
    std::string existing;
    PreloadPlan::Kind kind;
    std::string text;
  };
  const Row rows[] = {
      {"", PreloadPlan::kWrite, lib + "\n"},
      {"/img/libown.so\n", PreloadPlan::kWrite, "/img/libown.so\n" + lib + "\n"},
      {"/img/libown.so", PreloadPlan::kWrite, "/img/libown.so\n" + lib + "\n"},
      {"#/opt/ucxtls/lib/libucxtls.so\n", PreloadPlan::kWrite, "#/opt/ucxtls/lib/libucxtls.so\n" + lib + "\n"},
      {"# a comment without newline", PreloadPlan::kWrite, "# a comment without newline\n" + lib + "\n"},
      // Run again on a container that has our line: nothing changes (the newline separates).
      {lib + "\n", PreloadPlan::kAlreadyListed, ""},
      {"/img/a.so:/opt/x/libucxtls.so\n", PreloadPlan::kAlreadyListed, ""},
      {"/img/a.so /opt/x/libucxtls.so", PreloadPlan::kAlreadyListed, ""},
      // A longer file blanks more of the second comment ("two" is no longer read): allowed.
      {"# one\n/img/a.so\n# two\n", PreloadPlan::kWrite, "# one\n/img/a.so\n# two\n" + lib + "\n"},
      {std::string("/img/a.so\0\n", 11), PreloadPlan::kRefuse, ""},
      {std::string("a\0b", 3), PreloadPlan::kRefuse, ""},
  };
  for (const Row &r : rows) {
    CAPTURE(r.existing);
    PreloadPlan plan = plan_preload_file(r.existing, lib);
    CHECK(plan.kind == r.kind);
    if (r.kind == PreloadPlan::kWrite) CHECK(plan.text == r.text);
    if (r.kind == PreloadPlan::kRefuse) CHECK(plan.text.find("NUL") != std::string::npos);
  }
}

TEST_CASE("a mount hides a path at or below its destination") {
  CHECK(mount_hides("/usr", "/usr/lib/ucxtls-oci-hook/libucxtls.so"));
  CHECK(mount_hides("/usr/lib/", "/usr/lib/ucxtls-oci-hook/libucxtls.so"));
  CHECK(mount_hides("/etc/ld.so.preload", "/etc/ld.so.preload"));
  CHECK(mount_hides("/", "/etc/ld.so.preload"));
  CHECK_FALSE(mount_hides("/etc/hosts", "/etc/ld.so.preload"));
  CHECK_FALSE(mount_hides("/us", "/usr/lib/x"));
  CHECK_FALSE(mount_hides("/usr/lib/x/y", "/usr/lib/x"));
  CHECK_FALSE(mount_hides("relative", "/usr/lib/x"));
}

TEST_CASE("config.json's mounts as runc takes them: bind by its options, the view later mounts see") {
  const char *config = R"({"root":{"path":"r"},"mounts":[
    {"destination":"/a","type":"none","source":"/srv/a","options":["rbind","ro"]},
    {"destination":"/b","type":"bind","source":"b"},
    {"destination":"/c","type":"tmpfs","options":["nosuid","bind"]},
    {"destination":"/d","type":"tmpfs","options":["tmpcopyup"]},
    {"destination":"/e","type":"tmpfs"},{"destination":"/f","type":"sysfs"},{"destination":"/g","type":"proc"},
    {"destination":"/h","type":"cgroup2"},{"destination":"/i","type":"nfs"}],
    "linux":{"maskedPaths":["/proc/kcore",1,"/etc/x"]}})";
  ContainerSpec spec;
  REQUIRE(read_container_spec(config, strlen(config), &spec));
  REQUIRE(spec.mounts.size() == 9);
  const MountView views[] = {MountView::kSource,  MountView::kUnknown,     MountView::kSource,
                             MountView::kCopy,    MountView::kNoLinks,     MountView::kLinksInside,
                             MountView::kProc,    MountView::kNoLinks,     MountView::kUnknown};
  for (size_t i = 0; i < 9; i++) {
    CAPTURE(spec.mounts[i].destination);
    CHECK(mount_view(spec.mounts[i]) == views[i]);  // "type":"bind" without a bind option is no bind to runc
  }
  CHECK(spec.mounts[0].recursive);
  CHECK(spec.mounts[0].source == "/srv/a");
  CHECK_FALSE(spec.mounts[2].recursive);
  CHECK(spec.masked == std::vector<std::string>{"/proc/kcore", "/etc/x"});
  for (const char *name : {"1", "4194304", "self", "thread-self"}) CHECK(is_process_dir(name));
  for (const char *name : {"acpi", "sys", "net", "mounts", "1a", "", "selfx"}) CHECK_FALSE(is_process_dir(name));
}

TEST_CASE("container paths walked one component at a time") {
  std::vector<std::string> parts;
  CHECK(split_container_path("/usr/lib/ucxtls-oci-hook/libucxtls.so", &parts));
  CHECK(parts == std::vector<std::string>{"usr", "lib", "ucxtls-oci-hook", "libucxtls.so"});
  CHECK(split_container_path("//etc//", &parts));
  CHECK(parts == std::vector<std::string>{"etc"});
  CHECK_FALSE(split_container_path("etc", &parts));
  CHECK_FALSE(split_container_path("/usr/../etc", &parts));
  CHECK_FALSE(split_container_path("/./etc", &parts));
  CHECK_FALSE(split_container_path("/", &parts));
}

// A bind without "rbind" carries none of the mounts below its source: where a later mount's path
// ends on one of them (a mount point of the host), the container sees what lies under it, which
// the hook cannot read, so it cannot tell where that mount lands, and writes nothing (the slip:
// read_link_below's last-component st_dev check dropped, so the mount point's own directory is
// read instead and the path taken as no link). With rbind the mount is carried, and the path is
// read. The host's own mount points stand for the source's: / bound on /mnt, and /proc (or /sys,
// /dev) below it.
TEST_CASE("mounts: a bind without rbind whose path ends on a host mount point: where the next mount lands is not known") {
  struct stat top, st;
  REQUIRE(stat("/", &top) == 0);
  std::string mount_point, same_fs;
  for (const char *d : {"proc", "sys", "dev", "run"})
    if (mount_point.empty() && stat((std::string("/") + d).c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev != top.st_dev)
      mount_point = d;
  for (const char *d : {"etc", "usr", "var", "bin"})
    if (same_fs.empty() && lstat((std::string("/") + d).c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == top.st_dev)
      same_fs = d;
  if (mount_point.empty() || same_fs.empty()) {
    MESSAGE("SKIP: this machine's / has no mount point below it among /proc, /sys, /dev, /run, or no plain directory");
    return;
  }
  char image[] = "/tmp/ucxtls-unit-XXXXXX";
  REQUIRE(mkdtemp(image) != nullptr);
  const int rootfd = open(image, O_PATH | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(rootfd >= 0);
  struct Row {
    bool rbind;
    std::string below;
    bool known;
  } rows[] = {{false, mount_point, false}, {true, mount_point, true}, {false, same_fs, true},
              {false, mount_point + "/x", false}};  // a component after it: the walk's own check
  for (const Row &r : rows) {
    CAPTURE(r.rbind);
    CAPTURE(r.below);
    MountPlaces places(rootfd, "/nonexistent-bundle");
    ContainerMount bind;
    bind.destination = "/mnt", bind.type = "none", bind.source = "/", bind.bind = true, bind.recursive = r.rbind;
    REQUIRE(mount_view(bind) == MountView::kSource);
    std::string at, why;
    REQUIRE(places.add(bind, &at, &why));
    ContainerMount tmpfs;
    tmpfs.destination = "/mnt/" + r.below, tmpfs.type = "tmpfs", tmpfs.source = "tmpfs";
    CHECK(places.add(tmpfs, &at, &why) == r.known);
    if (r.known) {
      CHECK(at == "/mnt/" + r.below);
    } else {
      CHECK(at.empty());
      CHECK(why == "the bind mount on /mnt from / cannot be read through (a mount below its source, which a bind "
                   "without rbind does not carry)");
    }
  }
  close(rootfd);
  rmdir(image);
}

// A directory partway down a destination that is missing (or no directory) keeps the rest of the
// path as written: filepath-securejoin's SecureJoinVFS (join.go), which runc's mountToRootfs
// resolves each destination with, takes a component whose lstat fails ENOENT or ENOTDIR as no
// link. So a link of the same name in a directory above (the image's /b -> /etc, a bind source's
// b) is not the path's last component and no mount lands through it (the slip: that name read in
// the deepest directory the walk reached). A present directory still leads through its link.
TEST_CASE("mounts: below a missing directory the path is kept as written, not read one level up") {
  char image[] = "/tmp/ucxtls-unit-XXXXXX", source[] = "/tmp/ucxtls-unit-XXXXXX";
  REQUIRE(mkdtemp(image) != nullptr);
  REQUIRE(mkdtemp(source) != nullptr);
  const int rootfd = open(image, O_PATH | O_DIRECTORY | O_CLOEXEC);
  const int srcfd = open(source, O_PATH | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(rootfd >= 0);
  REQUIRE(srcfd >= 0);
  REQUIRE(symlinkat("/etc", rootfd, "b") == 0);
  REQUIRE(mkdirat(rootfd, "x", 0755) == 0);
  REQUIRE(symlinkat("/etc", rootfd, "x/b") == 0);
  REQUIRE(mkdirat(rootfd, "d", 0755) == 0);
  REQUIRE(symlinkat("/etc", rootfd, "d/b") == 0);
  const int file = openat(rootfd, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(file >= 0);
  close(file);
  REQUIRE(symlinkat("/opt", srcfd, "b") == 0);
  struct Row {
    std::string destination, want;
  } rows[] = {
      {"/a/b", "/a/b"},          // /a missing: the image's /b is not looked at
      {"/x/a/b", "/x/a/b"},      // the same one level down: not /x/b
      {"/f/b", "/f/b"},          // /f a file (ENOTDIR): kept too (runc then fails to create it)
      {"/m/a/b", "/m/a/b"},      // below the bind of `source` on /m: not its b
      {"/a/c/../b", "/a/b"},     // ".." taken lexically, the missing /a kept
      {"/d/b", "/etc"},          // /d present: its b is the path's and is followed
      {"/m/b", "/opt"},
  };
  for (const Row &r : rows) {
    CAPTURE(r.destination);
    MountPlaces places(rootfd, "/nonexistent-bundle");
    ContainerMount bind;
    bind.destination = "/m", bind.type = "none", bind.source = source, bind.bind = true, bind.recursive = true;
    std::string at, why;
    REQUIRE(places.add(bind, &at, &why));
    ContainerMount tmpfs;
    tmpfs.destination = r.destination, tmpfs.type = "tmpfs", tmpfs.source = "tmpfs";
    CHECK(places.add(tmpfs, &at, &why));
    CHECK(at == r.want);
  }
  for (const char *name : {"b", "x/b", "d/b", "f"}) CHECK(unlinkat(rootfd, name, 0) == 0);
  for (const char *name : {"x", "d"}) CHECK(unlinkat(rootfd, name, AT_REMOVEDIR) == 0);
  CHECK(unlinkat(srcfd, "b", 0) == 0);
  close(rootfd);
  close(srcfd);
  rmdir(image);
  rmdir(source);
}

#endif  // UCXTLS_HAVE_OCI_HOOK
