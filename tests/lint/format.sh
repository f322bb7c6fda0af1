#!/usr/bin/env bash
# Every tracked C file is formatted as .clang-format says (STYLE.md: the
# format is checked in CI); prints the offending files and lines.
set -u
cd "$(dirname "$0")/../.."
command -v clang-format >/dev/null || { echo "skip: clang-format not installed"; exit 77; }
mapfile -t files < <(git ls-files -co --exclude-standard '*.c' '*.h' 2>/dev/null)
((${#files[@]})) || { echo "skip: not a git checkout"; exit 77; }
clang-format --dry-run --Werror "${files[@]}" || exit 1
echo "format: ${#files[@]} files clean"
