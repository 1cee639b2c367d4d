#!/usr/bin/env bash
# check-wheel.sh SRCDIR BUILDDIR VERSION: issue #17's check of the Python
# package, without a GPU.  Builds the wheel from SRCDIR with meson-python
# (pyproject.toml; its meson build directory is kept in
# BUILDDIR/pkg-check/meson, so later runs are incremental), installs it
# into a fresh virtualenv, and there, with no FAGEN_* variable and away
# from the source tree:
#   - `fagen --version` (the wheel's script) prints VERSION;
#   - that fagen compiles every schedule the package ships, and they are
#     schedules/*.fa and the mods of schedules/mods/ byte for byte;
#   - `import fagen` takes the package and its own libfagen.so, whose
#     fg_version(), like fagen.__version__ and the wheel's metadata, is
#     VERSION; its argument checks answer without a GPU (libfagen's
#     FG_ERR_INVALID, and the package's errors: without PyTorch
#     attention() and fagen.ops say they need it; with PyTorch, CPU
#     tensors are refused; fagen.integrations.transformers.register()
#     names transformers when it is missing);
#   - readelf: libfagen.so needs only glibc (libc, libm, libpthread,
#     libdl and the dynamic loader): CUDA is loaded at run time.
# Prints the wheel's files and size.  meson-python, meson and ninja come
# from PyPI into BUILDDIR/pkg-check/tools on the first run; without PyPI
# and without them it exits 77 (SKIP).
set -euo pipefail

if [ $# -ne 3 ]; then
	echo "usage: $0 SRCDIR BUILDDIR VERSION" >&2
	exit 2
fi
src=$(realpath "$1")
work=$(realpath "$2")/pkg-check
version=$3
mkdir -p "$work"

tools=$work/tools
if ! "$tools/bin/python" -c 'import mesonpy' 2>/dev/null; then
	rm -rf "$tools"
	python3 -m venv "$tools"
	if ! "$tools/bin/pip" install -q meson-python meson ninja; then
		echo "check-wheel: cannot install meson-python, meson and" \
			"ninja from PyPI: skipping"
		exit 77
	fi
fi

echo "== building the wheel"
rm -rf "$work/dist"
PATH=$tools/bin:$PATH "$tools/bin/pip" wheel -q --no-build-isolation \
	--no-deps -w "$work/dist" -Cbuild-dir="$work/meson" "$src"
whl=$(ls "$work/dist"/fagen-*.whl)
case $(basename "$whl") in
fagen-"$version"-py3-none-linux_*.whl) ;;
*) echo "check-wheel: $(basename "$whl"): want fagen-$version-py3-none-linux_*" >&2
   exit 1 ;;
esac

echo "== installing it into a fresh virtualenv"
rm -rf "$work/venv" "$work/run"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --no-deps --no-index "$whl"
mkdir -p "$work/run"
cd "$work/run"
# no FAGEN_*, no PYTHONPATH, no source tree: what a new user has
clean=(env -i "PATH=$work/venv/bin:/usr/bin:/bin" "HOME=$work/run"
	"TMPDIR=${TMPDIR:-/tmp}")

echo "== fagen --version"
got=$("${clean[@]}" fagen --version)
[ "$got" = "fagen $version" ] ||
	{ echo "check-wheel: fagen --version says '$got'" >&2; exit 1; }
[ "$(command -v "$work/venv/bin/fagen")" ] ||
	{ echo "check-wheel: no fagen in the venv's bin/" >&2; exit 1; }

pkg=$("$work/venv/bin/python" -c 'import os, sysconfig
print(os.path.join(sysconfig.get_paths()["purelib"], "fagen"))')
echo "== compiling the package's schedules with its fagen"
n=0
for f in "$src"/schedules/*.fa; do
	cmp "$f" "$pkg/schedules/$(basename "$f")"
	"${clean[@]}" fagen "$pkg/schedules/$(basename "$f")" -o out.ptx
	grep -q "^// fagen $version: kernel" out.ptx
	n=$((n + 1))
done
[ "$n" -ge 8 ] && [ "$(ls "$pkg/schedules"/*.fa | wc -l)" -eq "$n" ] ||
	{ echo "check-wheel: $n schedules, the package has" \
		"$(ls "$pkg/schedules"/*.fa | wc -l)" >&2; exit 1; }
# the library of mods (issue #22), each into the forward schedule
m=0
for f in "$src"/schedules/mods/*.fa; do
	cmp "$f" "$pkg/schedules/mods/$(basename "$f")"
	if grep -q '^mod score_mod' "$f"; then hook=SCORE_MOD; else hook=MASK_MOD; fi
	"${clean[@]}" fagen "$pkg/schedules/fa_fwd_sm90.fa" -D $hook=true \
		--mod "$pkg/schedules/mods/$(basename "$f")" -o out.ptx
	m=$((m + 1))
done
[ "$(ls "$pkg/schedules/mods" | wc -l)" -eq "$m" ] ||
	{ echo "check-wheel: $m mods, the package has" \
		"$(ls "$pkg/schedules/mods" | wc -l)" >&2; exit 1; }
echo "$n schedules, $m mods"

echo "== import fagen"
"${clean[@]}" python - "$version" "$pkg" <<'PY'
import ctypes, importlib.metadata, os, sys

version, pkg = sys.argv[1], sys.argv[2]
import fagen

assert os.path.dirname(fagen.__file__) == pkg, fagen.__file__
lib = fagen._load()
assert lib._name == os.path.join(pkg, "libfagen.so"), lib._name
assert fagen.version() == version, fagen.version()
assert fagen.__version__ == version, fagen.__version__
assert importlib.metadata.version("fagen") == version
assert os.path.exists(os.path.join(pkg, "py.typed"))

# libfagen's own checks need no GPU
ctx = ctypes.c_void_p()
assert lib.fg_ctx_create(ctypes.byref(ctx), None) == 0
st = lib.fg_attention_forward(ctx, None, None)
assert fagen._STATUS[st] == "FG_ERR_INVALID", st
assert b"fg_attention_forward: args is NULL" in lib.fg_errmsg(ctx), \
    lib.fg_errmsg(ctx)
lib.fg_ctx_destroy.argtypes = [ctypes.c_void_p]
lib.fg_ctx_destroy(ctx)


def refused(exc, want, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc as e:
        assert want in str(e), (want, str(e))
        return
    raise AssertionError("no %s: %s" % (exc.__name__, want))


try:
    import torch
except ImportError:
    torch = None
import fagen.integrations.transformers as ft
try:
    import transformers
except ImportError:
    refused(ImportError, "needs transformers", ft.register)
if torch is None:
    refused(ImportError, "fagen.attention needs PyTorch", fagen.attention,
            1, 2, 3)
    refused(ImportError, "fagen.ops needs PyTorch", __import__, "fagen.ops")
    print("no PyTorch: attention() and fagen.ops say they need it")
else:
    q = torch.zeros(1, 2, 16, 64, dtype=torch.bfloat16)
    refused(ValueError, "fagen needs CUDA tensors", fagen.attention,
            q, q, q)
    refused(TypeError, "must be a torch.Tensor", fagen.attention, 1, q, q)
    print("PyTorch %s: CPU tensors refused" % torch.__version__)
print("fagen %s from %s" % (fagen.__version__, lib._name))
PY

echo "== readelf -d libfagen.so"
needed=$(readelf -d "$pkg/libfagen.so" |
	sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$needed"
for l in $needed; do
	case $l in
	libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | ld-linux*.so.*) ;;
	*) echo "check-wheel: libfagen.so needs $l" >&2; exit 1 ;;
	esac
done
if readelf -d "$pkg/libfagen.so" | grep -q 'R\(UN\)\?PATH'; then
	echo "check-wheel: libfagen.so has an RPATH" >&2
	exit 1
fi

echo "== the wheel"
python3 - "$whl" <<'PY'
import os, sys, zipfile

z = zipfile.ZipFile(sys.argv[1])
for i in z.infolist():
    print("%9d  %s" % (i.file_size, i.filename))
print("%s: %d bytes (%d unpacked)" % (os.path.basename(sys.argv[1]),
      os.path.getsize(sys.argv[1]), sum(i.file_size for i in z.infolist())))
PY
echo "check-wheel: ok"
