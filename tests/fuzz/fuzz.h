/* SPDX-License-Identifier: MIT */
/*
 * The libFuzzer entry point every fuzz target defines (tests/fuzz/): it is
 * given data[0..size), borrowed for the call, must not keep it, and
 * returns 0. Any crash, sanitizer report or leak is a finding.
 */
#ifndef NFSCACHED_TESTS_FUZZ_H
#define NFSCACHED_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
