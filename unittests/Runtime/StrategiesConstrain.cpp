//===- StrategiesConstrain.cpp - Launch strategies of wooly-constrain -*- C++ -*-===//
//
// (No strategies yet: the pass is being written.)
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

using namespace wooly::test;

std::vector<Strategy> wooly::test::constrainStrategies() { return {}; }
