//===- Strategies.cpp - The list of launch strategies ------------*- C++
//-*-===//

#include "Strategies.h"

using namespace wooly::test;

std::vector<Strategy> wooly::test::allStrategies() {
  std::vector<Strategy> all{{"plain", "", nullptr}};
  for (auto *more :
       {&constrainStrategies, &isolateStrategies, &coalesceStrategies})
    for (Strategy &s : (*more)())
      all.push_back(std::move(s));
  return all;
}
