// Unit tests of the OCI hook's pure part (helper/oci_hook_core.h): the JSON reader on the state and
// config.json a runtime writes, the device rule, the preload text and the path walk: table rows.
#include <doctest/doctest.h>
#include <string.h>

#include <string>
#include <vector>

#include "oci_hook_core.h"

using namespace ucxtls;

namespace {

std::string member_string(const char *doc, const char *key) {
  std::string s;
  return json_string(json_member(json_document(doc, strlen(doc)), key), &s) ? s : "<none>";
}

}  // namespace

TEST_CASE("json: a member's string, escapes decoded; malformed documents answer nothing") {
  struct Row {
    const char *doc, *key, *want;
  };
  const Row rows[] = {
      {R"({"bundle":"/run/b"})", "bundle", "/run/b"},
      {R"( {"a":[1,2,{"x":null}],"bundle" : "/r\/b\u00e9\ud83d\ude00"} )", "bundle", "/r/b\xc3\xa9\xf0\x9f\x98\x80"},
      {R"({"bundle":"a\"b\\c\n"})", "bundle", "a\"b\\c\n"},
      {R"({"nested":{"bundle":"/x"}})", "bundle", "<none>"},       // members of this object only
      {R"({"bundle":1.5e3})", "bundle", "<none>"},                 // not a string
      {R"({"bundle":"/x",})", "bundle", "<none>"},                 // trailing comma: not JSON
      {R"({"bundle":"/x"} trailing)", "bundle", "<none>"},
      {R"({"bundle":"/x")", "bundle", "<none>"},                   // cut short
      {R"({"bundle":"a\u0000b"})", "bundle", "<none>"},            // a NUL cannot be a path
      {R"({"bundle":"tab	inside"})", "bundle", "<none>"},          // raw control character
      {R"({"a":tru,"bundle":"/x"})", "bundle", "<none>"},
      {R"({"a":01,"bundle":"/x"})", "bundle", "<none>"},
      {R"({"a":-0.5E+2,"b":[true,false,null,[]],"bundle":"/x"})", "bundle", "/x"},
      {R"({"bundle":"/first","bundle":"/second"})", "bundle", "/first"},
      {"", "bundle", "<none>"},
  };
  for (const Row &r : rows) {
    CAPTURE(r.doc);
    CHECK(member_string(r.doc, r.key) == r.want);
  }
  std::string deep(200, '[');
  deep += std::string(200, ']');
  CHECK_FALSE(json_document(deep.data(), deep.size()).ok());  // nesting beyond any runtime's document
}

TEST_CASE("config.json: root.path, process.env and linux.devices as a runtime writes them") {
  const char *config = R"({"ociVersion":"1.0.2-dev","process":{"env":["PATH=/bin","LD_PRELOAD=/img/a.so","X"]},
    "root":{"path":"rootfs","readonly":true},
    "linux":{"devices":[{"path":"/dev/nvidia0","type":"c","major":195,"minor":0},{"type":"c"},{"path":"/dev/nvidiactl"}]}})";
  ContainerSpec spec;
  REQUIRE(read_container_spec(config, strlen(config), &spec));
  CHECK(spec.root == "rootfs");
  CHECK(spec.env == std::vector<std::string>{"PATH=/bin", "LD_PRELOAD=/img/a.so", "X"});
  CHECK(spec.devices == std::vector<std::string>{"/dev/nvidia0", "/dev/nvidiactl"});
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

TEST_CASE("the image's preload lists and the new /etc/ld.so.preload") {
  CHECK(preload_list_has_ucxtls("/opt/ucxtls/lib/libucxtls.so"));
  CHECK(preload_list_has_ucxtls("/a/libother.so:/usr/lib/x/libucxtls.so"));
  CHECK(preload_list_has_ucxtls("/a/libother.so\n  libucxtls.so\t"));
  CHECK_FALSE(preload_list_has_ucxtls("/a/libucxtls.so.1 /b/libnotucxtls.so"));
  CHECK_FALSE(preload_list_has_ucxtls(""));
  const char *lib = "/usr/lib/ucxtls-oci-hook/libucxtls.so";
  CHECK(preload_file_with("", lib) == std::string(lib) + "\n");
  CHECK(preload_file_with("/img/libown.so\n", lib) == std::string("/img/libown.so\n") + lib + "\n");
  CHECK(preload_file_with("/img/libown.so", lib) == std::string("/img/libown.so\n") + lib + "\n");
  CHECK(rootfs_path("/run/b", "rootfs") == "/run/b/rootfs");
  CHECK(rootfs_path("/run/b/", "rootfs") == "/run/b/rootfs");
  CHECK(rootfs_path("/run/b", "/var/lib/merged") == "/var/lib/merged");
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
