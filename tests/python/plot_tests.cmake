# octasim.plot (python/octasim/plot.py; tests/python/plot_tests.py): real reports from octasim
# run (an NVDLA trace), octasim net (lenet5) and octasim demo drawn by `python3 -m octasim.plot`,
# the SVGs checked against the reports; bad input exits 2. Skipped (77) without NumPy or
# matplotlib, and the trace checks without ../shared's NVDLA traces.
# plot.py itself needs no C++ extension, but `import octasim.plot` runs the package's
# __init__.py, which loads octasim._core: not in the sanitizer build, where the extension is not
# built (the sanitized octasim's --report paths are covered there by the report.* tests).
if(OCTASIM_SANITIZE)
  return()
endif()
set(plot_tests ${PROJECT_SOURCE_DIR}/tests/python/plot_tests.py)
foreach(check trace net demo compare errors)
  add_test(NAME python.plot.${check}
           COMMAND /usr/bin/python3 ${plot_tests} ${check} $<TARGET_FILE:octasim>
                   ${CMAKE_CURRENT_BINARY_DIR}/python_plot_${check}
                   ${PROJECT_SOURCE_DIR}/../shared/conformance/nvdla)
  set_tests_properties(python.plot.${check} PROPERTIES SKIP_RETURN_CODE 77
                       ENVIRONMENT PYTHONPATH=${CMAKE_BINARY_DIR}/python)
endforeach()
