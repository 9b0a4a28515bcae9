// main() of the tests that link SystemC without running a simulation (the functional device's:
// the engine registry names each engine's SystemC timing model). libsystemc provides main,
// which calls sc_main (STYLE.md 9), so these link this library instead of GTest::gtest_main.
#include <gtest/gtest.h>

#include <systemc>  // declares sc_main extern "C"

int sc_main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
