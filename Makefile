# octasim — the two commands a newcomer needs: `make run` and `make test`.
# Both install missing Debian packages, configure with CMake + Ninja and build first.

BUILD      ?= build
BUILD_SAN  ?= build-san
BUILD_FUZZ ?= build-fuzz
# `make fuzz`: seconds per fuzz target (or FUZZ_RUNS executions per target when set).
FUZZ_SECONDS ?= 600
FUZZ_RUNS    ?=
# `make fuzz-smoke` (CI): seconds per target after its seeds and regression inputs.
FUZZ_SMOKE_SECONDS ?= 4
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps configure build run test test-sanitize fuzz-build fuzz fuzz-smoke format format-check \
        bench clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/sim/app/octasim

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The suite again under AddressSanitizer + UndefinedBehaviorSanitizer (second build dir), built
# by clang (a second compiler's diagnostics and UBSan's checks; measured on 2 cores: a test unit
# compiles in 7.6 s against gcc 12's 11.6 s, and the sanitized suite runs in about 3.7 min
# against 5.5), at -O1 (ASan's recommended level: several times faster than -O0, every check
# kept; the tests' own code at -O0, tests/CMakeLists.txt, a third of the compile time) with line
# tables only (reports keep file:line, the build is faster), no benchmarks,
# without the tests labelled `heavy` (whole-network accuracy runs: the same code paths on
# thousands of images, which the smaller tests already take through the sanitizers). Warnings
# are errors in the gcc build (`make test`); clang's extra ones are reported here, not fatal.
test-sanitize: deps
	CXX=clang++ cmake -S . -B $(BUILD_SAN) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DOCTASIM_SANITIZE=ON -DOCTASIM_WERROR=OFF \
	  $(CMAKE_ARGS)
	cmake --build $(BUILD_SAN) -j $(JOBS)
	ctest --test-dir $(BUILD_SAN) --output-on-failure -j $(JOBS) -LE heavy

# libFuzzer targets (tests/fuzz) built with clang + ASan/UBSan in a third build dir; only the
# libraries they need are built.
fuzz-build: deps
	CXX=clang++ cmake -S . -B $(BUILD_FUZZ) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DOCTASIM_FUZZ=ON -DOCTASIM_WERROR=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target octasim_fuzz_all

# Long runs: every target for FUZZ_SECONDS (make fuzz FUZZ_SECONDS=3600 FUZZ_TARGETS="npy dat").
fuzz: fuzz-build
	RUNS=$(FUZZ_RUNS) tests/fuzz/run_fuzz.sh $(BUILD_FUZZ) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# CI: each target over its seeds and regression inputs, then a few seconds of fuzzing.
fuzz-smoke: fuzz-build
	rm -rf $(BUILD_FUZZ)/fuzz-corpus
	tests/fuzz/run_fuzz.sh $(BUILD_FUZZ) $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

bench: build
	@for b in $$(find $(BUILD)/bench -maxdepth 1 -type f -perm -u+x -name 'octasim_bench*' | sort); do \
	  echo "== $$b"; "$$b" || exit 1; \
	done

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

format-check:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run -Werror

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_FUZZ)
