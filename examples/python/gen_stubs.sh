#!/bin/sh
# Generates the Python stubs of kspool.v1.Spool from proto/ into OUT_DIR (default: gen/
# beside this script): OUT_DIR/kspool/v1/spool_pb2.py and spool_pb2_grpc.py. They are
# never checked in; regenerate them when proto/ changes.
# Needs protoc ($PROTOC, else from PATH) and grpc_python_plugin ($GRPC_PYTHON_PLUGIN, else
# from PATH or /usr/bin; Debian: protobuf-compiler, protobuf-compiler-grpc).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
proto_dir="$here/../../proto"
out=${1:-"$here/gen"}
plugin=${GRPC_PYTHON_PLUGIN:-$(command -v grpc_python_plugin || echo /usr/bin/grpc_python_plugin)}
mkdir -p "$out"
"${PROTOC:-protoc}" -I "$proto_dir" --python_out="$out" --grpc_out="$out" \
  --plugin=protoc-gen-grpc="$plugin" "$proto_dir/kspool/v1/spool.proto"
# Regular packages rather than namespace ones: `import kspool.v1` then finds exactly
# these files, whatever else named kspool is on sys.path.
touch "$out/kspool/__init__.py" "$out/kspool/v1/__init__.py"
