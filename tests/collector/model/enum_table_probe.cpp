// Compiled by CTest, not linked (tests/collector/model/CMakeLists.txt): with -DMISSING_NAME or
// -DEXTRA_NAME the table below must not compile (model/enum_table.h), without either it must.
// What it stands for: a value added to an enum whose name table was not given its name.
#include "model/enum_table.h"

#include <cstdint>

namespace {

enum class Colour : uint8_t { kRed, kGreen, kBlue, kCount };

#if defined(MISSING_NAME)
constexpr auto kColourNames = ncclwatch::model::enum_names<Colour>({"red", "green"});
#elif defined(EXTRA_NAME)
constexpr auto kColourNames =
    ncclwatch::model::enum_names<Colour>({"red", "green", "blue", "ultraviolet"});
#else
constexpr auto kColourNames = ncclwatch::model::enum_names<Colour>({"red", "green", "blue"});
#endif

static_assert(kColourNames[static_cast<int>(Colour::kGreen)][0] == 'g');

}  // namespace
