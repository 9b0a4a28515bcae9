#!/usr/bin/python3
"""Mutation test: NVDLA's public traces, changed the way a user's slip or a broken file would,
each played by `octasim run`. Every mutant must end with exit 0 (the run passed anyway), 1 (a
check failed: FAIL on stdout) or 2 (a user error: one line on stderr, "octasim: error: ..."),
never by a signal, an internal error (exit 3), a sanitizer report or a host timeout.

  mutate_traces.py OCTASIM TRACES_DIR WORK_DIR [--count N] [--seed S] [--jobs J]
                   [--timeout-cycles C] [--host-timeout SECONDS]

The mutants are drawn from a fixed seed, so a failure reproduces: the script prints each failing
mutant's kind, trace and change, and keeps its files under WORK_DIR.
"""

import argparse
import collections
import concurrent.futures
import os
import random
import re
import shutil
import subprocess
import sys
import time

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "WARNING: AddressSanitizer", "ERROR: UndefinedBehaviorSanitizer")

NUMBER = re.compile(r"0x[0-9a-fA-F]+|\b\d+\b")


def cfg_of(trace_dir):
    name = os.path.basename(trace_dir)
    return os.path.join(trace_dir, name + ".cfg")


def command_lines(lines, names):
    """Indices of the lines that call one of `names` (reg_write, mem_init, ...)."""
    return [i for i, l in enumerate(lines) if l.lstrip().startswith(names)]


def new_number(rng, old):
    """A replacement for the number `old` (text): a flipped bit, a neighbour, 0, all ones, or a
    random 32-bit value, written as the trace writes numbers."""
    value = int(old, 0)
    choice = rng.randrange(6)
    if choice == 0:
        value ^= 1 << rng.randrange(32)
    elif choice == 1:
        value += rng.choice((-1, 1))
    elif choice == 2:
        value = 0
    elif choice == 3:
        value = 0xFFFFFFFF
    elif choice == 4:
        value = rng.getrandbits(32)
    else:
        value = rng.getrandbits(rng.choice((8, 16, 40, 64)))
    value = max(value, 0)
    return hex(value) if old.lower().startswith("0x") else str(value)


def change_argument(rng, line, which):
    """`line` with its argument number `which` (an index among the numbers in the argument
    list; -1 for the last) replaced."""
    start = line.find("(")
    numbers = list(NUMBER.finditer(line, start if start >= 0 else 0))
    if not numbers:
        return None
    m = numbers[which] if -len(numbers) <= which < len(numbers) else rng.choice(numbers)
    return line[:m.start()] + new_number(rng, m.group(0)) + line[m.end():]


class Mutant:
    def __init__(self, index, kind, trace_dir):
        self.index = index
        self.kind = kind
        self.trace = os.path.basename(trace_dir)
        self.change = ""
        self.cfg = ""


def mutate_cfg_lines(rng, kind, lines):
    """Applies a .cfg mutation of `kind` to `lines` in place; returns what changed, or None when
    the trace has nothing to mutate that way."""
    if kind == "reg_value":
        idx = command_lines(lines, ("reg_write",))
        if not idx:
            return None
        i = rng.choice(idx)
        new = change_argument(rng, lines[i], -1)
    elif kind == "address":
        idx = command_lines(lines, ("mem_init", "mem_load", "check_crc", "check_file"))
        if not idx:
            return None
        i = rng.choice(idx)
        # check_*(sync, mem, ADDR, ...): the address is the second number after the sync id's.
        which = 1 if lines[i].lstrip().startswith("check") else 0
        new = change_argument(rng, lines[i], which)
    elif kind == "size":
        idx = command_lines(lines, ("mem_init", "check_crc", "check_file"))
        if not idx:
            return None
        i = rng.choice(idx)
        which = 2 if lines[i].lstrip().startswith("check") else 1
        new = change_argument(rng, lines[i], which)
    elif kind == "drop_line":
        idx = [i for i, l in enumerate(lines) if l.strip() and not l.lstrip().startswith("//")]
        i = rng.choice(idx)
        change = f"line {i + 1} dropped: {lines[i].strip()}"
        del lines[i]
        return change
    elif kind == "duplicate_line":
        idx = [i for i, l in enumerate(lines) if l.strip() and not l.lstrip().startswith("//")]
        i = rng.choice(idx)
        lines.insert(i + 1, lines[i])
        return f"line {i + 1} duplicated: {lines[i].strip()}"
    elif kind == "swap_lines":
        idx = [i for i, l in enumerate(lines) if l.strip() and not l.lstrip().startswith("//")]
        i = rng.choice(idx[:-1])
        j = idx[idx.index(i) + 1]
        lines[i], lines[j] = lines[j], lines[i]
        return f"lines {i + 1} and {j + 1} swapped"
    else:
        raise ValueError(kind)
    if new is None or new == lines[i]:
        return None
    change = f"line {i + 1}: {lines[i].strip()} -> {new.strip()}"
    lines[i] = new
    return change


def mutate_dat(rng, kind, path):
    """Corrupts the .dat file at `path` (payload bytes, syntax, or a truncation)."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    name = os.path.basename(path)
    if kind == "dat_bytes":
        spans = [m.span() for m in re.finditer(rb"0x[0-9a-fA-F]{2}\b", bytes(data))]
        payload = [s for s in spans if data.rfind(b"payload", 0, s[0]) > data.rfind(b"{", 0, s[0])]
        if not payload:
            return None
        picks = rng.sample(payload, min(len(payload), rng.choice((1, 2, 8))))
        for start, _ in picks:
            old = int(data[start + 2:start + 4], 16)
            data[start + 2:start + 4] = b"%02x" % ((old + rng.randrange(1, 256)) % 256)
        change = f"{name}: {len(picks)} payload bytes changed"
    elif kind == "dat_syntax":
        choice = rng.randrange(6)
        tokens = [m.span() for m in re.finditer(rb"[{}:,]|offset|size|payload|0x[0-9a-fA-F]+",
                                                bytes(data))]
        start, end = rng.choice(tokens)
        old = bytes(data[start:end])
        if choice == 0:
            new = b""
        elif choice == 1:
            new = rng.choice((b"{", b"}", b":", b",", b"0xzz", b"payload", b"offset:"))
        elif choice == 2:
            new = old + old
        elif choice == 3:
            new = b"0x" + b"f" * rng.randrange(1, 40)
        elif choice == 4:
            new = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        else:
            new = b"-" + old
        if new == old:
            return None
        data[start:end] = new
        change = f"{name}: byte {start}: {old!r} -> {new!r}"
    elif kind == "dat_truncate":
        cut = rng.randrange(len(data) + 1)
        del data[cut:]
        change = f"{name}: truncated to {cut} of its bytes"
    else:
        raise ValueError(kind)
    with open(path, "wb") as f:
        f.write(data)
    return change


CFG_KINDS = ("reg_value", "address", "size", "drop_line", "duplicate_line", "swap_lines")
DAT_KINDS = ("dat_bytes", "dat_syntax", "dat_truncate")
KINDS = CFG_KINDS + DAT_KINDS + ("cfg_truncate", "several")


def make_mutant(rng, index, trace_dirs, work):
    """Draws a mutant (kind, trace, change) and writes its trace directory under `work`."""
    for _ in range(100):
        kind = rng.choice(KINDS)
        src = rng.choice(trace_dirs)
        m = Mutant(index, kind, src)
        dest = os.path.join(work, f"m{index:04d}_{m.trace}")
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest)
        m.cfg = os.path.join(dest, m.trace + ".cfg")
        if kind in CFG_KINDS:
            with open(m.cfg) as f:
                lines = f.read().split("\n")
            m.change = mutate_cfg_lines(rng, kind, lines)
            if m.change is not None:
                with open(m.cfg, "w") as f:
                    f.write("\n".join(lines))
        elif kind == "several":  # two to four .cfg changes at once
            with open(m.cfg) as f:
                lines = f.read().split("\n")
            changes = [mutate_cfg_lines(rng, rng.choice(CFG_KINDS), lines)
                       for _ in range(rng.randrange(2, 5))]
            changes = [c for c in changes if c is not None]
            if changes:
                m.change = "; ".join(changes)
                with open(m.cfg, "w") as f:
                    f.write("\n".join(lines))
        elif kind == "cfg_truncate":
            size = os.path.getsize(m.cfg)
            cut = rng.randrange(size)
            os.truncate(m.cfg, cut)
            m.change = f"truncated to {cut} of {size} bytes"
        else:
            dats = sorted(f for f in os.listdir(dest) if f.endswith(".dat"))
            if dats:
                m.change = mutate_dat(rng, kind, os.path.join(dest, rng.choice(dats)))
        if m.change is not None:
            return m
        shutil.rmtree(dest)
    raise RuntimeError("no mutable trace found")


def run_mutant(octasim, m, timeout_cycles, host_timeout):
    """Plays the mutant; returns (exit code or a description, stdout, stderr, seconds, problem),
    where `problem` is None for an acceptable outcome."""
    started = time.monotonic()
    try:
        p = subprocess.run([octasim, "run", m.cfg, "--no-progress", "--timeout-cycles",
                            str(timeout_cycles)], capture_output=True, timeout=host_timeout,
                           cwd=os.path.dirname(m.cfg))
    except subprocess.TimeoutExpired:
        return "timeout", "", "", time.monotonic() - started, \
            f"no result within {host_timeout} s (host timeout)"
    seconds = time.monotonic() - started
    out = p.stdout.decode(errors="replace")
    err = p.stderr.decode(errors="replace")
    problem = None
    if any(marker in err for marker in SANITIZER_MARKERS):
        problem = "sanitizer report"
    elif p.returncode < 0:
        problem = f"killed by signal {-p.returncode}"
    elif p.returncode not in (0, 1, 2):
        problem = f"exit {p.returncode}"
    elif p.returncode == 2:
        err_lines = err.strip().split("\n")
        if len(err_lines) != 1 or not err_lines[0].startswith("octasim: error: "):
            problem = "exit 2 without exactly one 'octasim: error:' line on stderr"
    elif p.returncode == 1 and "FAIL" not in out:
        problem = "exit 1 without a FAIL line on stdout"
    return p.returncode, out, err, seconds, problem


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("octasim")
    ap.add_argument("traces", help="a directory of trace directories (NAME/NAME.cfg + .dat)")
    ap.add_argument("work", help="where the mutants are written (emptied first)")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout-cycles", type=int, default=5_000_000)
    ap.add_argument("--host-timeout", type=float, default=60.0)
    args = ap.parse_args()
    args.octasim = os.path.abspath(args.octasim)

    if not os.path.isdir(args.traces):
        print(f"SKIP: {args.traces} not found")
        return 77
    # The _ew_ traces are left out: nv_small has no EW, so every mutant would end in the same
    # refusal.
    trace_dirs = sorted(os.path.join(args.traces, d) for d in os.listdir(args.traces)
                        if os.path.isfile(cfg_of(os.path.join(args.traces, d)))
                        and "_ew_" not in d)
    if not trace_dirs:
        print(f"FAIL: no traces in {args.traces}")
        return 1
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)

    rng = random.Random(args.seed)
    mutants = [make_mutant(rng, i, trace_dirs, args.work) for i in range(args.count)]

    started = time.monotonic()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_mutant, args.octasim, m, args.timeout_cycles,
                               args.host_timeout): m for m in mutants}
        for f in concurrent.futures.as_completed(futures):
            results[futures[f].index] = f.result()

    kinds = collections.Counter(m.kind for m in mutants)
    exits = collections.Counter(str(results[m.index][0]) for m in mutants)
    by_kind = collections.defaultdict(collections.Counter)
    failures = []
    # Every mutant's outcome, for reading the error messages: WORK/outcomes.txt.
    with open(os.path.join(args.work, "outcomes.txt"), "w") as log:
        for m in mutants:
            code, out, err, _, _ = results[m.index]
            log.write(f"m{m.index:04d} [{m.kind}] {m.trace}: {m.change}\n  exit {code}: "
                      f"{err.strip()[:400]}\n")
    for m in mutants:
        code, out, err, seconds, problem = results[m.index]
        by_kind[m.kind][str(code)] += 1
        if problem is None:
            shutil.rmtree(os.path.dirname(m.cfg), ignore_errors=True)
        else:
            failures.append((m, code, out, err, problem))

    print(f"{len(mutants)} mutants of {len(trace_dirs)} traces (seed {args.seed}), "
          f"{time.monotonic() - started:.1f} s on {args.jobs} processes")
    print("per kind (exit code: count):")
    for kind in KINDS:
        hist = ", ".join(f"{c}: {n}" for c, n in sorted(by_kind[kind].items()))
        print(f"  {kind:<15} {kinds[kind]:>4}   {hist}")
    print("exit codes: " + ", ".join(f"{c}: {n}" for c, n in sorted(exits.items())))
    slowest = max(mutants, key=lambda m: results[m.index][3])
    print(f"slowest: m{slowest.index:04d} {slowest.kind} {slowest.trace} "
          f"{results[slowest.index][3]:.1f} s")
    for m, code, out, err, problem in failures:
        print(f"\nFAIL m{m.index:04d} [{m.kind}] {m.trace}: {problem} (exit {code})")
        print(f"  change: {m.change}")
        print(f"  files: {os.path.dirname(m.cfg)}")
        tail = (err.strip() or out.strip()).split("\n")[-12:]
        for line in tail:
            print(f"  | {line[:300]}")
    if failures:
        print(f"\n{len(failures)} of {len(mutants)} mutants failed")
        return 1
    print("all mutants ended with exit 0, 1 or 2 and a message")
    return 0


if __name__ == "__main__":
    sys.exit(main())
