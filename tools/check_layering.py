#!/usr/bin/env python3
"""Fails when a library's source includes a header it has not declared a dependency on.

Usage: check_layering.py <source root> <build>/layering.txt

layering.txt (written by cmake/KspoolLibrary.cmake) has one line per library:
"<name> <folder> <dependencies...>". A source file belongs to the library whose folder
is its nearest parent. Each `#include "x/..."` of a project header must name a header
of the same library or of one it depends on (transitively); each `#include <...>` of a
third-party library kspool builds with must come from an external target in that
closure. Prints every violation with file and line, exits 1 if there is any.
"""
import os
import re
import sys

# Third-party include prefixes, and the link targets that provide them.
EXTERNAL = {
    'librdkafka/': {'PkgConfig::RDKAFKA'},
    'grpcpp/': {'gRPC::grpc++', 'gRPC::grpc++_reflection', 'kspool_proto'},
    'grpc/': {'gRPC::grpc++', 'kspool_proto'},
    'prometheus/': {'prometheus-cpp::core'},
    'rocksdb/': {'RocksDB::rocksdb'},
    'openssl/': {'OpenSSL::SSL', 'OpenSSL::Crypto'},
    'CLI/': {'CLI11::CLI11'},
    'nlohmann/': {'nlohmann_json::nlohmann_json'},
    'spdlog/': {'spdlog::spdlog'},
    'toml++/': {'toml++'},
    'google/protobuf/': {'kspool_proto_msgs'},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]')


def main():
    root, layering = sys.argv[1], sys.argv[2]
    libs = {}  # name -> (folder, deps)
    for line in open(layering):
        parts = line.split()
        if parts:
            libs[parts[0]] = (parts[1], parts[2:])
    folder_of = {folder: name for name, (folder, _) in libs.items()}

    def closure(name):
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            if n in libs:
                todo.extend(libs[n][1])
            if n == 'kspool_proto':
                todo.append('kspool_proto_msgs')
        return seen

    def owner(path):  # library of a project path, by its nearest registered folder
        d = os.path.dirname(path)
        while d:
            if d in folder_of:
                return folder_of[d]
            d = os.path.dirname(d)
        return None

    errors = []
    for name, (folder, _) in sorted(libs.items()):
        allowed = closure(name)
        # toml++ is added as an include directory, not a target.
        for dirpath, dirnames, files in os.walk(os.path.join(root, folder)):
            rel_dir = os.path.relpath(dirpath, root)
            dirnames[:] = [d for d in dirnames if os.path.join(rel_dir, d) not in folder_of]
            for f in files:
                if not f.endswith(('.h', '.cc')):
                    continue
                rel = os.path.join(rel_dir, f)
                for no, text in enumerate(open(os.path.join(dirpath, f)), 1):
                    m = INCLUDE.match(text)
                    if not m:
                        continue
                    kind, inc = m.groups()
                    if kind == '"' and inc.startswith('kspool/v1/'):
                        need = 'kspool_proto' if inc.endswith('.grpc.pb.h') else 'kspool_proto_msgs'
                        if need not in allowed:
                            errors.append(f'{rel}:{no}: includes {inc} but {name} does not depend on {need}')
                        continue
                    if kind == '"':
                        target = owner(inc)
                        if target is None:
                            if os.path.exists(os.path.join(root, inc)):
                                errors.append(f'{rel}:{no}: includes {inc}, which is in no library')
                            continue
                        if target not in allowed:
                            errors.append(f'{rel}:{no}: includes {inc} but {name} does not depend on {target}')
                        continue
                    for prefix, providers in EXTERNAL.items():
                        if inc.startswith(prefix):
                            if prefix == 'toml++/':
                                break  # an include directory of the libraries that parse TOML
                            if not providers & allowed:
                                errors.append(f'{rel}:{no}: includes <{inc}> but {name} does not link '
                                              f'{" or ".join(sorted(providers))}')
                            break
    for e in errors:
        print(e)
    print(f'layering: {len(libs)} libraries, {len(errors)} violations')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
