# shellcheck shell=sh
# Sourced by scripts/*: where `make deps` keeps
# what it extracts from each kernel's linux-source (LIO's and cxgb4's
# private headers, checkpatch.pl), one directory per kernel release.
# CXE_SRCDIR, when set, overrides it. kmod/cxgbit-ext/srcdir.conf names it.
# Its sourcer sets top to the tree's root (else it runs from there).
. "${top:-.}/kmod/cxgbit-ext/srcdir.conf"
CXE_SRCDIR=${CXE_SRCDIR:-$CXE_SRCDIR_DEFAULT}
