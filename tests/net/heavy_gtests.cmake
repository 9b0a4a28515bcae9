# Read by ctest after the discovered GoogleTest cases of this directory (TEST_INCLUDE_FILES, set at
# the end of CMakeLists.txt): the cases that run real networks' layers at full size (AlexNet's and
# ResNet-50's first convolutions, ResNet-50 end to end) are labelled `heavy`, so the sanitizer pass
# (ctest -LE heavy) leaves them out. 10-25 s each under ASan, 230 s in all; their smaller siblings
# (FoldFunctional.NvFullFp16K7S2P3, SplitHFunctional.NvSmallPartialWeights, the MobileNetV2 and
# block tests of ResidualNetworks) take the same code paths through the sanitizers.
set_tests_properties(
  FoldFunctional.NvFullFp16K11S4
  FoldFunctional.NvFullInt8K11S4SplitInTwoBands
  FoldOnSoc.NvFullAlexNetConv1TakesFewerCycles
  SplitHFunctional.NvFullResNet50Conv1Fp16
  SplitHFunctional.NvFullResNet50Conv1
  SplitHFunctional.NvFullAlexNetConv1
  SplitHOnSoc.NvFullResNet50Conv1Overlapped
  SplitHOnSoc.NvFullResNet50Conv1
  SplitHOnSoc.NvFullAlexNetConv1
  ResidualNetworks.ResNet50NvFullInt8
  ResidualNetworks.ResNet50NvSmallInt8
  MixedPrecisionOnSoc.TinyVitIsBitExactAndNearPyTorch
  MixedPrecisionOnSoc.BertEncoderIsBitExactAndNearPyTorch
  PROPERTIES LABELS heavy)
