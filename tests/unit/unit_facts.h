// Facts shared by the unit tests' tables.
#pragma once

#include "core.h"

// A node with a ConnectX and one family's GPUs (Family::none: no GPU), every fact known.
inline ucxtls::Facts node_of(ucxtls::Family fam) {
  using namespace ucxtls;
  Facts f;
  f.rdma.value = Tri::yes;
  f.rdma_mlx5 = true;
  f.ucx_conf.value = Tri::no;
  for (Family g : {Family::cuda, Family::rocm, Family::ze}) f.family[int(g)].value = g == fam ? Tri::yes : Tri::no;
  return f;
}
