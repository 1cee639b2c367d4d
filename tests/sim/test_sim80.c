/* test_sim80.c: the simulator's sm_80 instructions (meson test
 * unit.sim80) against references the tests compute themselves; the
 * harness (sim80.h).  Inputs are random, outputs start as NaN bytes.
 * The kernels follow the forms of the project's PTX reference sheet for
 * the Ampere path (section 14), which ran them on hardware. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim.h"
#include "sim80.h"

char sim80_err[8192];

int
sim80_run(const char *tgt, int threads, int smem, Arg *args, int nargs,
	const char *body, bool eager)
{
	size_t cap = strlen(body) + 4096, n = 0;
	char *ptx = malloc(cap);
	Sim *s = sim_new();
	SimVal v[16];
	int rc = -1;

	assert_non_null(ptx);
	assert_true(nargs <= 16);
	n += (size_t)snprintf(ptx + n, cap - n, "// fagen.kernel name=t "
		"target=%s threads=%d cluster=1,1,1 smem=%d order=single "
		"tiles=0\n", tgt, threads, smem);
	for (int i = 0; i < nargs; i++)
		n += (size_t)(args[i].bytes ? snprintf(ptx + n, cap - n,
			"// fagen.arg %d global %s u8 rank=1 dims %zu\n", i,
			args[i].name, args[i].bytes) : snprintf(ptx + n, cap - n,
			"// fagen.arg %d param %s %s\n", i, args[i].name,
			args[i].ty));
	n += (size_t)snprintf(ptx + n, cap - n, ".version %s\n.target %s\n"
		".address_size 64\n.extern .shared .align 1024 .b8 fg_smem[];\n"
		".visible .entry t(", strcmp(tgt, "sm_120a") ? "8.6" : "8.7",
		tgt);
	for (int i = 0; i < nargs; i++)
		n += (size_t)snprintf(ptx + n, cap - n, "%s.param .%s %s",
			i ? ", " : "", args[i].bytes ? "u64" : args[i].ty,
			args[i].name);
	n += (size_t)snprintf(ptx + n, cap - n, ")\n{\n\t.reg .pred %%p<16>;\n"
		"\t.reg .b16 %%h<16>;\n\t.reg .b32 %%r<80>;\n"
		"\t.reg .b64 %%rd<24>;\n\t.reg .f32 %%f<48>;\n"
		"\t.reg .f32 %%s<16>;\n\t.reg .f32 %%o<8>;\n"
		"\tmov.u32 %%r0, %%tid.x;\n\tmov.u32 %%r9, fg_smem;\n");
	for (int i = 0; i < nargs; i++)
		if (args[i].bytes)
			n += (size_t)snprintf(ptx + n, cap - n,
				"\tld.param.u64 %%rd%d, [%s];\n", 10 + i,
				args[i].name);
	n += (size_t)snprintf(ptx + n, cap - n, "%s}\n", body);
	assert_true(n < cap);
	SimMod *m = sim_load(ptx, n, sim80_err, sizeof sim80_err);
	if (!m)
		goto out;
	sim_set(s, SIM_OPT_EAGER, eager);
	for (int i = 0; i < nargs; i++) {
		v[i] = (SimVal){.i = args[i].i, .f = args[i].f};
		if (!args[i].bytes)
			continue;
		v[i].ptr = sim_alloc(s, args[i].bytes);
		memcpy(sim_host(s, v[i].ptr, args[i].bytes), args[i].host,
			args[i].bytes);
	}
	rc = sim_launch(s, m, v, nargs);
	if (rc)
		snprintf(sim80_err, sizeof sim80_err, "%s", sim_error(s));
	for (int i = 0; !rc && i < nargs; i++)
		if (args[i].bytes)
			memcpy(args[i].host, sim_host(s, v[i].ptr,
				args[i].bytes), args[i].bytes);
	sim_mod_free(m);
out:
	sim_free(s);
	free(ptx);
	return rc;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_test_wait_spin_that_never_completes_is_a_hang),
		cmocka_unit_test(named_barriers_hand_off_between_warps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
