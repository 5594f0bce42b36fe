#!/usr/bin/env bash
# Builds the Debian package build/kspool_VERSION_ARCH.deb (CPack, cmake/Packaging.cmake)
# from the plain RelWithDebInfo build in build/ (configured, and the four programs
# built, if needed; the package's copies are stripped). Prints the package's path.
#   tools/install-deps.sh && tools/package.sh
#   sudo apt install ./build/kspool_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build -j"${JOBS:-2}" kspool-agent kspoolctl kspool-devkafka kspool-bench
rm -f build/kspool_*.deb
(cd build && cpack -G DEB >cpack.log 2>&1) || { cat build/cpack.log; exit 1; }
ls "$PWD"/build/kspool_*.deb
