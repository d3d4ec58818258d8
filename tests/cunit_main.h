/* SPDX-License-Identifier: MIT */
/*
 * The shared CUnit main. A test program defines test_register(), which adds
 * its suites to the registry; main() runs them and exits non-zero when any
 * assertion failed (CU_get_number_of_failures() is read before cleanup,
 * because CU_get_error() alone reports 0 when tests fail).
 */
#ifndef NFSCACHED_TESTS_CUNIT_MAIN_H
#define NFSCACHED_TESTS_CUNIT_MAIN_H

#include <CUnit/CUnit.h>

/* Add the program's suites. Return 0, or -1 if registration failed. */
int test_register(void);

#endif
