#!/usr/bin/env bash
# check.sh FAGEN: every examples/*.fa passes all checks and lowers to the
# schedule IR (their MMA and tile math are not lowered to PTX yet), under
# each variant listed on its '// VARIANTS:' lines ('-' is the default).
set -u
fagen=$(realpath "$1")
cd "$(dirname "$0")/../.." || exit 2
fail=0 n=0
for f in examples/*.fa; do
	mapfile -t vs < <(sed -n 's|^// VARIANTS: *||p' "$f")
	[ "${#vs[@]}" -eq 0 ] && vs=(-)
	for v in "${vs[@]}"; do
		args=()
		[ "$v" != - ] && read -r -a args <<<"$v"
		n=$((n + 1))
		if ! out=$("$fagen" "$f" --emit ir -o /dev/null -Werror \
		    "${args[@]}" 2>&1); then
			echo "FAIL $f $v"
			echo "$out" | head -20
			fail=1
		fi
	done
done
echo "examples: $n compiles, $([ $fail = 0 ] && echo all passed || echo some failed)"
exit $fail
