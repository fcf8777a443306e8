# shellcheck shell=sh
# Sourced by scripts/* (and tests/host/c/Makefile): where `make deps` keeps
# what it extracts from each kernel's linux-source (LIO's and cxgb4's
# private headers, checkpatch.pl), one directory per kernel release.
# CXE_SRCDIR, when set, overrides it. The one place the scripts name it;
# Python's is testbed.kmod.SRC_CACHE, and the Makefiles that build alone
# (kmod/cxgbit-ext, shipped in the DKMS package; tests/kmod/cxgb4sim) keep
# a default of their own: tests/host/test_cache_dir.py holds them to it.
CXE_SRCDIR=${CXE_SRCDIR:-/var/cache/cxgbit-ext/src}
