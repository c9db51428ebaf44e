// The functional core of ucxtls: plain facts and settings in, one decision out.
//
// Nothing in these files touches the file system, the environment or a global: every function is
// pure, so each rule is a table row in tests/unit. The library's constructor, the `ucxtls` command
// and the driver-probe helper all reach their answers through them. Which file holds which rule:
//   text.h        the bounded writer, compile-time messages, list items, numbers
//   options.h     the options table (each row its kind and limits), the environment pass, unknown
//                 variables, settings, sysroot
//   edit_distance.h  the distance behind "did you mean"
//   ucx_names.h   UCX's transport names and aliases: family, role, members, module, flag
//   template.h    the template's rules, composing the value
//   visibility.h  CUDA_VISIBLE_DEVICES, ROCR/HIP_VISIBLE_DEVICES, ZE_AFFINITY_MASK
//   parsers.h     the small sysfs/procfs files the kernel probe reads
//   device_rules.h  which RDMA device runs rc, which PCI device is an Intel GPU, partial failures
//   ucx_conf.h    does a ucx.conf assign UCX_TLS?
//   repair.h      a kept UCX_TLS of another GPU family, and its repair (UCXTLS_REPAIR)
//   decide.h      facts, the ladder (decide), the family question, "does the environment change"
//   lines.h       the stderr lines
// docs/design.md ("Architecture") maps every rule to its file.
//
// Build rules (docs/design.md, "Build rules"): libc only, no exceptions, no RTTI, no allocation,
// fixed-size buffers.
#pragma once

#include "decide.h"
#include "device_rules.h"
#include "edit_distance.h"
#include "lines.h"
#include "options.h"
#include "parsers.h"
#include "repair.h"
#include "template.h"
#include "text.h"
#include "ucx_conf.h"
#include "ucx_names.h"
#include "visibility.h"
