// The functional core: facts and settings in, one decision out. Pure (no file system, environment
// or global), so each rule is a table row in tests/unit; the library, the `ucxtls` command and the
// driver-probe helper all decide through it. libc only, no allocation, fixed-size buffers.
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
