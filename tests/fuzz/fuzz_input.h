// Helpers shared by the libFuzzer targets: turn the fuzzer's bytes into the NUL-terminated
// strings and small numbers the core takes. Each target is built with
// -fsanitize=fuzzer,address,undefined (tests/fuzz/CMakeLists.txt); an invariant that does not hold
// calls __builtin_trap(), which libFuzzer reports as a crash with the input saved.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond) \
  do {                   \
    if (!(cond)) __builtin_trap(); \
  } while (0)

// Reads fields out of the input: the input is cut at NUL bytes into strings; bytes() hands out
// raw numbers from the front.
struct FuzzInput {
  const uint8_t *p;
  size_t n;
  // A copy of the whole input with a NUL appended, so every field is a C string.
  char *copy;
  size_t pos = 0;
  FuzzInput(const uint8_t *data, size_t size) : p(data), n(size) {
    copy = static_cast<char *>(malloc(size + 1));
    memcpy(copy, data, size);
    copy[size] = '\0';
  }
  ~FuzzInput() { free(copy); }
  FuzzInput(const FuzzInput &) = delete;
  FuzzInput &operator=(const FuzzInput &) = delete;
  bool done() const { return pos >= n; }
  // The next NUL-terminated field (may be empty); NULL once the input is used up.
  const char *field() {
    if (pos > n) return nullptr;
    const char *s = copy + pos;
    pos += strlen(s) + 1;
    return s;
  }
  // A field that may also stand for "unset": the first byte 0x01 means NULL.
  const char *maybe_field() {
    const char *s = field();
    if (s && s[0] == '\x01') return nullptr;
    return s;
  }
  uint8_t byte() {
    if (pos >= n) return 0;
    return uint8_t(copy[pos++]);
  }
};
