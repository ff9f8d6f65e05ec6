//===- StrategiesIsolate.cpp - Launch strategies of wooly-isolate -*- C++ -*-===//
//
// (No strategies yet: the pass is being written.)
//
//===----------------------------------------------------------------------===//

#include "Strategies.h"

using namespace wooly::test;

std::vector<Strategy> wooly::test::isolateStrategies() { return {}; }
