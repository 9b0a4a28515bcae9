#!/usr/bin/env bash
# Unpacks Debian's PyTorch (python3-torch 1.13, python3-torchvision 0.14) and python3-onnx,
# with the Debian packages they need that are not installed here, into a directory WITHOUT
# installing anything: `apt-get download` into DIR/debs, `dpkg -x` each into DIR/root.
# Prints the `export PYTHONPATH=... LD_LIBRARY_PATH=...` lines to use (also written to
# DIR/env.sh). Idempotent: downloaded .debs and extracted packages are skipped.
#
#   scripts/unpack-torch.sh [DIR]          (default DIR=/tmp/octasim-torch)
#   eval "$(scripts/unpack-torch.sh | grep ^export)"
#   /usr/bin/python3 models/networks/exporter_zoo/export.py
#
# Used to regenerate models/networks/exporter_zoo/ (CI never has torch). Use Debian's
# /usr/bin/python3 (3.11, with python3-numpy): the unpacked modules are built for it.
# The package list is what `apt-get -s install --no-install-recommends` would install: libtorch
# links OpenCV and FFmpeg, which pull in ~160 packages (about 150 MB of .debs).
set -euo pipefail

dir=${1:-/tmp/octasim-torch}
mkdir -p "$dir/debs" "$dir/root" "$dir/extracted"
dir=$(cd "$dir" && pwd)

wanted=(python3-torch python3-torchvision python3-onnx)

# The packages apt would newly install (no recommends); packages already installed (an
# "Inst" line with "[old version]" is an upgrade) are left to the system.
resolve() {
  apt-get -s -o Debug::NoLocking=1 install --no-install-recommends "${wanted[@]}" 2>/dev/null |
    awk '$1 == "Inst" && $3 !~ /^\[/ { print $2 }'
}
mapfile -t pkgs < <(resolve)
if [ ${#pkgs[@]} -eq 0 ]; then
  # Either everything is installed, or the package lists are missing.
  if ! apt-cache policy python3-torch 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    echo "unpack-torch: no package lists; running apt-get update" >&2
    apt-get update -qq
    mapfile -t pkgs < <(resolve)
  fi
fi
# The wanted packages themselves, even when some are installed system-wide.
for p in "${wanted[@]}"; do
  printf '%s\n' "${pkgs[@]}" | grep -qx "$p" || pkgs+=("$p")
done

cd "$dir/debs"
todo=()
for p in "${pkgs[@]}"; do
  compgen -G "${p%%:*}_*.deb" >/dev/null || todo+=("$p")
done
if [ ${#todo[@]} -gt 0 ]; then
  echo "unpack-torch: downloading ${#todo[@]} packages into $dir/debs" >&2
  # As root, apt drops to the _apt user, which cannot write a root-owned directory.
  apt-get download -q -o APT::Sandbox::User=root "${todo[@]}" >&2
fi

n=0
for p in "${pkgs[@]}"; do
  for deb in "${p%%:*}"_*.deb; do
    [ -e "$dir/extracted/$deb" ] && continue
    dpkg -x "$deb" "$dir/root"
    touch "$dir/extracted/$deb"
    n=$((n + 1))
  done
done
echo "unpack-torch: ${#pkgs[@]} packages in $dir/debs, $n newly extracted into $dir/root" >&2

root=$dir/root
libdirs=$root/usr/lib/x86_64-linux-gnu:$root/usr/lib
# Libraries installed in subdirectories (BLAS/LAPACK alternatives, ogdi, ...); not Python's.
while IFS= read -r d; do
  libdirs=$libdirs:$d
done < <(find "$root/usr/lib" -path "$root/usr/lib/python3" -prune -o -name 'lib*.so.*' -printf '%h\n' |
           sort -u | grep -vx -e "$root/usr/lib/x86_64-linux-gnu" -e "$root/usr/lib")

# Any library still unresolved (should be none).
missing=$(LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  ldd "$root"/usr/lib/python3/dist-packages/torch/_C*.so \
      "$root"/usr/lib/python3/dist-packages/torchvision/_C*.so 2>/dev/null |
  awk '/not found/ { print $1 }' | sort -u | tr '\n' ' ')
[ -z "$missing" ] || echo "unpack-torch: warning: unresolved libraries: $missing" >&2

cat >"$dir/env.sh" <<EOF
export PYTHONPATH=$root/usr/lib/python3/dist-packages\${PYTHONPATH:+:\$PYTHONPATH}
export LD_LIBRARY_PATH=$libdirs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
EOF
echo "# use with /usr/bin/python3 (also in $dir/env.sh):"
cat "$dir/env.sh"
