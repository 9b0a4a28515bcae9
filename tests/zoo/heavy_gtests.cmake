# Read by ctest after this directory's discovered GoogleTest cases (see tests/net/heavy_gtests.cmake):
# AlexNet's full reference run (23 s under ASan) is left out of the sanitizer pass; LeNet-5's takes
# the same path.
set_tests_properties(ZooReference.AlexNetLogitsFiniteWithSpread PROPERTIES LABELS heavy)
