/* SPDX-License-Identifier: MIT */
/*
 * Shared CUnit main: registers the program's suites, runs them verbosely,
 * and turns failures into a non-zero exit status. A suite or test may be
 * chosen with argv[1] (suite name) and argv[2] (test name).
 */
#include <stdio.h>
#include <CUnit/Basic.h>
#include "cunit_main.h"

int main(int argc, char **argv)
{
	unsigned fails;
	int rc;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	if (test_register() != 0) {
		fprintf(stderr, "test registration failed: %s\n", CU_get_error_msg());
		CU_cleanup_registry();
		return 2;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	if (argc > 1) {
		CU_pSuite s = CU_get_suite(argv[1]);
		if (!s) {
			fprintf(stderr, "no suite %s\n", argv[1]);
			CU_cleanup_registry();
			return 2;
		}
		if (argc > 2) {
			CU_pTest t = CU_get_test(s, argv[2]);
			if (!t) {
				fprintf(stderr, "no test %s\n", argv[2]);
				CU_cleanup_registry();
				return 2;
			}
			CU_basic_run_test(s, t);
		} else {
			CU_basic_run_suite(s);
		}
	} else {
		CU_basic_run_tests();
	}
	fails = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	rc = CU_get_error() != CUE_SUCCESS ? 2 : (fails ? 1 : 0);
	if (CU_get_number_of_tests_run() == 0)
		rc = rc ? rc : 3;
	CU_cleanup_registry();
	return rc;
}
