// The pure part of ucxtls-oci-hook (docs/containers.md, "A node hook"): reading the OCI state and
// the bundle's config.json, deciding whether a container is one to act on, and the new text of its
// /etc/ld.so.preload. No system calls here; the program around it does the file work.
#pragma once

#include <stddef.h>

#include <string>
#include <vector>

namespace ucxtls {

// A JSON value as a span of the document's text (RFC 8259). Lookups walk the text and check the
// syntax of everything they pass over, so a malformed document answers "not found", never a
// value read past an error.
struct JsonSpan {
  const char *begin = nullptr, *end = nullptr;
  bool ok() const { return begin != nullptr; }
};

// The whole document when it is one valid JSON value (surrounding whitespace allowed).
JsonSpan json_document(const char *text, size_t len);
// The value of `key` in an object; not ok when `obj` is not an object or has no such member.
JsonSpan json_member(JsonSpan obj, const char *key);
// The elements of an array (empty when `arr` is not an array).
std::vector<JsonSpan> json_elements(JsonSpan arr);
// A string value decoded (escapes, \uXXXX with surrogate pairs, to UTF-8); false when it is not
// a string or holds a NUL.
bool json_string(JsonSpan v, std::string *out);

// What the hook reads of the bundle's config.json.
struct ContainerSpec {
  std::string root;                   // root.path, as written (may be relative to the bundle)
  std::vector<std::string> env;       // process.env, "NAME=value"
  std::vector<std::string> devices;   // linux.devices[].path
};
// false when config.json is not valid JSON or has no root.path.
bool read_container_spec(const char *text, size_t len, ContainerSpec *out);
// The bundle path of the OCI state on the hook's stdin; false without one.
bool read_state_bundle(const char *text, size_t len, std::string *bundle);

// A device node of a GPU as the library counts them: /dev/nvidia<N>, /dev/kfd, /dev/dri/renderD<N>.
bool is_gpu_device_node(const std::string &path);
// The container's root directory: root.path, relative paths taken from the bundle.
std::string rootfs_path(const std::string &bundle, const std::string &root);
// True when a list of ld.so's (LD_PRELOAD, /etc/ld.so.preload: names separated by spaces, tabs,
// newlines or colons) already names a libucxtls.so.
bool preload_list_has_ucxtls(const std::string &list);
// The LD_PRELOAD of an environment ("" when unset).
std::string env_value(const std::vector<std::string> &env, const char *name);

// /etc/ld.so.preload after the hook: the image's text kept as it is, `library` appended on a line
// of its own. Only called when the text does not name a libucxtls.so already.
std::string preload_file_with(const std::string &existing, const std::string &library);

// A path inside the container ("/usr/lib/x") as its components; false for a relative path or one
// with "." or ".." components (the hook walks each component itself).
bool split_container_path(const std::string &path, std::vector<std::string> *parts);

}  // namespace ucxtls
