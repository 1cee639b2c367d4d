// oracle.cpp: the encoding oracle's CUTLASS half (issue #18).  Compiled
// at test time by tests/oracle/run.sh against the CUTLASS headers of an
// installed nvidia-cutlass package, with cases.inc, which fgdesc writes:
// one call per descriptor fagen emits or would emit, carrying fagen's
// values.  Each call builds the same operand the way a CUTLASS mainloop
// does -- a CuTe shared-memory tensor in fagen's layout, partitioned by
// the MMA atom, its descriptor fragment indexed by K-block -- and
// compares.  Host code only: no GPU is needed.
//
// fagen's layout of a swizzled [R, C] tile (compiler/ptx/common.c,
// pg_kmajor_off) is span-wide column blocks of R rows, each block 8-row
// swizzle atoms stacked down the rows.  For a K-major operand (rows MN,
// columns K) that is tile_to_shape(K atom, (MN, K)), atoms down MN
// first; for an MN-major one (rows K, columns MN) it is
// tile_to_shape(MN atom, (MN, K), Step<_2,_1>), atoms down K first.
#include <cstdint>
#include <cstdio>
#include <initializer_list>

#include <cutlass/version.h>
#include <cute/tensor.hpp>
#include <cute/arch/mma_sm100_umma.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm100.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>

using namespace cute;

static int nfail, nok, nlbo;
static FILE *out;

typedef std::initializer_list<uint64_t> Got;

// The shared-memory window every case addresses: 1024-aligned, so that
// the swizzle of a pointer is that of its offset.
alignas(1024) static uint8_t smem_window[1 << 18];

template <class T, int SW, bool MN>
static auto
atom()
{
	if constexpr (MN) {
		if constexpr (SW == 128) return GMMA::Layout_MN_SW128_Atom<T>{};
		else if constexpr (SW == 64) return GMMA::Layout_MN_SW64_Atom<T>{};
		else return GMMA::Layout_MN_SW32_Atom<T>{};
	} else {
		if constexpr (SW == 128) return GMMA::Layout_K_SW128_Atom<T>{};
		else if constexpr (SW == 64) return GMMA::Layout_K_SW64_Atom<T>{};
		else return GMMA::Layout_K_SW32_Atom<T>{};
	}
}

// fagen's [R, C] tile as a CuTe (MN, K) tensor at the window's start.
template <class T, int SW, bool MN, int R, int C>
static auto
tile()
{
	T *p = reinterpret_cast<T *>(smem_window);
	if constexpr (MN)
		return make_tensor(make_smem_ptr(p), tile_to_shape(
			atom<T, SW, true>(), Shape<Int<C>, Int<R>>{},
			Step<_2, _1>{}));
	else
		return make_tensor(make_smem_ptr(p), tile_to_shape(
			atom<T, SW, false>(), Shape<Int<R>, Int<C>>{}));
}

static void
check(const char *what, int kk, uint64_t want, uint64_t got,
	uint64_t ignore = 0)
{
	if (ignore && !(want & ignore) && (want & ~ignore) == (got & ~ignore))
		nlbo += want != got;
	else if (want != got) {
		nfail++;
		fprintf(out, "FAIL: %s, K-chunk %d: CUTLASS 0x%016llx, fagen "
			"0x%016llx (xor 0x%016llx)\n", what, kk,
			(unsigned long long)want, (unsigned long long)got,
			(unsigned long long)(want ^ got));
		return;
	}
	nok++;
}

// Rows [roff, roff + ROWS) of the tile, as the MMA sees the operand.
// The host cannot convert a pointer to a shared-memory address
// (cast_smem_ptr_to_uint is device-only, 0 here), so the descriptor's
// start address comes out as the K-block offset alone; the operand's
// address (fagen's 'addr' plus the slice's offset in the tile) goes in
// the way make_*_desc puts it, >> 4 into the low word.
template <int ROWS, int K, class Tile>
static auto
slice(Tile const &t, int roff, uint32_t addr, uint32_t *start)
{
	auto s = local_tile(domain_offset(make_coord(roff, 0), t),
		Shape<Int<ROWS>, Int<K>>{}, make_coord(0, 0));
	*start = (addr + uint32_t((uint8_t *)raw_pointer_cast(s.data()) -
		smem_window)) >> 4;
	return s;
}

// An MN-major operand whose MN extent is one swizzle atom wide has no
// second atom column for the leading byte offset to reach: CUTLASS
// writes 0 there (the stride of a mode of size 1), fagen the stride the
// next column would have.  That field alone is compared only when
// CUTLASS sets it.
template <class T, int SW, bool MN, int EXT>
static constexpr uint64_t unread =
	MN && EXT * sizeof_bits<T>::value / 8 == SW ? 0x3fffull << 16 : 0;

template <class Frag>
static void
check_chunks(const char *what, Frag const &f, uint32_t start, Got got,
	uint64_t ignore)
{
	int kk = 0;

	if ((int)got.size() != size<2>(f)) {
		nfail++;
		fprintf(out, "FAIL: %s: fagen has %d K-chunks, CUTLASS %d\n",
			what, (int)got.size(), (int)size<2>(f));
		return;
	}
	for (uint64_t g : got) {
		uint64_t d = f(0, 0, kk);
		check(what, kk, d + start, g, ignore);
		kk++;
	}
}

template <bool MN>
static constexpr UMMA::Major umajor = MN ? UMMA::Major::MN : UMMA::Major::K;
template <bool MN>
static constexpr GMMA::Major gmajor = MN ? GMMA::Major::MN : GMMA::Major::K;

// tcgen05.mma (kind::f16, cta_group::1) A from shared memory: tile
// [R, C], rows roff.. of it, M = 128.
template <class T, int SW, bool MN, int R, int C, int M>
static void
umma_a(int roff, uint32_t addr, const char *what, Got got)
{
	constexpr int K = MN ? R : C;
	uint32_t start;
	auto s = slice<M, K>(tile<T, SW, MN, R, C>(), roff, addr, &start);
	auto mma = make_tiled_mma(SM100_MMA_F16BF16_SS<T, T, float, M, 64,
		umajor<MN>, UMMA::Major::K>{});
	auto thr = mma.get_slice(0);
	check_chunks(what, thr.make_fragment_A(thr.partition_A(s)), start, got,
		unread<T, SW, MN, M>);
}

// tcgen05.mma B from shared memory: tile [R, C] is the whole N x K
// operand.
template <class T, int SW, bool MN, int R, int C>
static void
umma_b(uint32_t addr, const char *what, Got got)
{
	constexpr int N = MN ? C : R, K = MN ? R : C;
	uint32_t start;
	auto s = slice<N, K>(tile<T, SW, MN, R, C>(), 0, addr, &start);
	auto mma = make_tiled_mma(SM100_MMA_F16BF16_SS<T, T, float, 128, N,
		UMMA::Major::K, umajor<MN>>{});
	auto thr = mma.get_slice(0);
	check_chunks(what, thr.make_fragment_B(thr.partition_B(s)), start, got,
		unread<T, SW, MN, N>);
}

// The instruction descriptor of tcgen05.mma kind::f16 with an f32
// accumulator, A from shared (SS) or tensor memory (TS).
template <class T, int M, int N, bool AMN, bool BMN, bool TS>
static void
umma_idesc(const char *what, uint32_t got)
{
	if constexpr (TS) {
		using Op = SM100_MMA_F16BF16_TS<T, T, float, M, N,
			umajor<AMN>, umajor<BMN>>;
		check(what, 0, uint32_t(MMA_Traits<Op>{}.idesc_), got);
	} else {
		using Op = SM100_MMA_F16BF16_SS<T, T, float, M, N,
			umajor<AMN>, umajor<BMN>>;
		check(what, 0, uint32_t(MMA_Traits<Op>{}.idesc_), got);
	}
}

// wgmma A from shared memory (always K-major in fagen): one warpgroup's
// 64 rows from roff.
template <class T, int SW, bool MN, int R, int C>
static void
gmma_a(int roff, uint32_t addr, const char *what, Got got)
{
	constexpr int K = MN ? R : C;
	uint32_t start;
	auto s = slice<64, K>(tile<T, SW, MN, R, C>(), roff, addr, &start);
	auto mma = make_tiled_mma(SM90::GMMA::ss_op_selector<T, T, float,
		Shape<_64, _64, _16>, gmajor<MN>, GMMA::Major::K>());
	auto thr = mma.get_slice(0);
	check_chunks(what, thr.make_fragment_A(thr.partition_A(s)), start, got,
		unread<T, SW, MN, 64>);
}

template <class T, int SW, bool MN, int R, int C>
static void
gmma_b(uint32_t addr, const char *what, Got got)
{
	constexpr int N = MN ? C : R, K = MN ? R : C;
	uint32_t start;
	auto s = slice<N, K>(tile<T, SW, MN, R, C>(), 0, addr, &start);
	auto mma = make_tiled_mma(SM90::GMMA::ss_op_selector<T, T, float,
		Shape<_64, Int<N>, _16>, GMMA::Major::K, gmajor<MN>>());
	auto thr = mma.get_slice(0);
	check_chunks(what, thr.make_fragment_B(thr.partition_B(s)), start, got,
		unread<T, SW, MN, N>);
}

typedef half_t f16;
typedef bfloat16_t bf16;

int
main()
{
	// cast_smem_ptr_to_uint says on stdout that the host cannot convert
	// a pointer; the report goes to stderr.
	out = stderr;
	if (!freopen("/dev/null", "w", stdout))
		return 2;
#include "cases.inc"
	fprintf(out, "oracle: %d values agree with CUTLASS %d.%d.%d (%d of "
		"them but for an unread leading byte offset), %d differ\n",
		nok, CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH, nlbo, nfail);
	return nfail ? 1 : 0;
}
