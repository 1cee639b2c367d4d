/* sir_ops.h: every schedule-IR operation, defined once.
 *   name: the text form; nargs: value operands (-1: variable);
 *   eff: E_PURE, E_SYNC (barriers), E_ASYNC (async units), E_CTRL
 *   (structured control flow), E_MEM (memory effects);
 *   tgt: the targets that have it (T_ALL; T_HOP: sm_90a and sm_100a;
 *   T_SM90, T_SM100, T_SM80: one). */
/*    name          nargs  eff      tgt    */
SOP(  const_i,      0,     E_PURE,  T_ALL  )   /* imm */
SOP(  const_f,      0,     E_PURE,  T_ALL  )   /* fimm */
SOP(  param,        0,     E_PURE,  T_ALL  )   /* r[0]: a 'param' */
SOP(  special,      0,     E_PURE,  T_ALL  )   /* imm: SP_* */
SOP(  mov,          1,     E_PURE,  T_ALL  )   /* assignment to a 'var' */
SOP(  cvt,          1,     E_PURE,  T_ALL  )   /* to dst's type */
SOP(  add,          2,     E_PURE,  T_ALL  )
SOP(  sub,          2,     E_PURE,  T_ALL  )
SOP(  mul,          2,     E_PURE,  T_ALL  )
SOP(  div,          2,     E_PURE,  T_ALL  )
SOP(  rem,          2,     E_PURE,  T_ALL  )
SOP(  and,          2,     E_PURE,  T_ALL  )
SOP(  or,           2,     E_PURE,  T_ALL  )
SOP(  xor,          2,     E_PURE,  T_ALL  )
SOP(  shl,          2,     E_PURE,  T_ALL  )
SOP(  shr,          2,     E_PURE,  T_ALL  )
SOP(  min,          2,     E_PURE,  T_ALL  )
SOP(  max,          2,     E_PURE,  T_ALL  )
SOP(  eq,           2,     E_PURE,  T_ALL  )
SOP(  ne,           2,     E_PURE,  T_ALL  )
SOP(  lt,           2,     E_PURE,  T_ALL  )
SOP(  le,           2,     E_PURE,  T_ALL  )
SOP(  gt,           2,     E_PURE,  T_ALL  )
SOP(  ge,           2,     E_PURE,  T_ALL  )
SOP(  neg,          1,     E_PURE,  T_ALL  )
SOP(  not,          1,     E_PURE,  T_ALL  )   /* logical */
SOP(  bnot,         1,     E_PURE,  T_ALL  )   /* bitwise */
SOP(  select,       3,     E_PURE,  T_ALL  )
SOP(  exp2,         1,     E_PURE,  T_ALL  )
SOP(  log2,         1,     E_PURE,  T_ALL  )
SOP(  rcp,          1,     E_PURE,  T_ALL  )
SOP(  tanh,         1,     E_PURE,  T_ALL  )
SOP(  sqrt,         1,     E_PURE,  T_ALL  )
SOP(  rsqrt,        1,     E_PURE,  T_ALL  )
SOP(  rowmax,       -1,    E_PURE,  T_ALL  )   /* frag [, init rows] */
SOP(  rowsum,       -1,    E_PURE,  T_ALL  )
SOP(  convert,      1,     E_PURE,  T_ALL  )   /* register layout change */
SOP(  mask_cols,    2,     E_PURE,  T_ALL  )   /* frag, first bad col */
SOP(  mask_causal,  3,     E_PURE,  T_ALL  )   /* frag, row0, col0 */
SOP(  mask_below,   3,     E_PURE,  T_ALL  )   /* frag, row0, col0 */
SOP(  fill,         1,     E_PURE,  T_ALL  )   /* frag of one value */
SOP(  all_eq,       2,     E_PURE,  T_ALL  )   /* frag, f32: warp vote */
SOP(  abs,          1,     E_PURE,  T_ALL  )   /* f32/i32 scalar or tile */
SOP(  rowid,        1,     E_PURE,  T_ALL  )   /* i32 tile: (r, c) is r */
SOP(  colid,        1,     E_PURE,  T_ALL  )   /* i32 tile: (r, c) is c */
SOP(  tile,         0,     E_CTRL,  T_ALL  )   /* for t in tiles {body} */
SOP(  tilefield,    1,     E_PURE,  T_ALL  )   /* imm: 0 x 1 y 2 z 3 iter */
SOP(  for,          3,     E_CTRL,  T_ALL  )   /* lo, hi, step {body} */
SOP(  if,           1,     E_CTRL,  T_ALL  )   /* cond {body} else {els} */
SOP(  elect,        0,     E_CTRL,  T_ALL  )   /* imm 1: one per warp */
SOP(  exit,         0,     E_CTRL,  T_ALL  )
SOP(  mbar_wait,    1,     E_SYNC,  T_ALL  )   /* r[0][ri0], parity */
SOP(  mbar_arrive,  0,     E_SYNC,  T_ALL  )   /* r[0][ri0] */
SOP(  mbar_expect,  1,     E_SYNC,  T_HOP  )   /* r[0][ri0], bytes */
SOP(  bar_sync,     0,     E_SYNC,  T_ALL  )   /* r[0]: nbar */
SOP(  bar_arrive,   0,     E_SYNC,  T_ALL  )
SOP(  fence,        0,     E_SYNC,  T_ALL  )   /* imm: FENCE_* */
SOP(  tma_load,     -1,    E_ASYNC, T_HOP  )   /* r0 view, r1 smem, r2 mbar; coords */
SOP(  tma_store,    -1,    E_ASYNC, T_HOP  )   /* r0 view, r1 smem; coords */
SOP(  tma_commit,   0,     E_ASYNC, T_HOP  )
SOP(  tma_wait,     0,     E_ASYNC, T_HOP  )   /* imm: groups, imm2: read */
SOP(  bulk_copy,    0,     E_ASYNC, T_HOP  )   /* r0 smem -> r1 smem of CTA
						  * 'cta' (0: this one),
						  * completing on r2 mbar
						  * there */
SOP(  bulk_load,    -1,    E_ASYNC, T_HOP  )   /* r0 global -> r1 smem,
						  * completing on r2 mbar: a
						  * row a copy; a0..a5 as
						  * cp_async's */
SOP(  wgmma,        2,     E_ASYNC, T_SM90 )   /* D(dst, in a[0]), A, B */
SOP(  wgmma_commit, 0,     E_ASYNC, T_SM90 )
SOP(  wgmma_wait,   0,     E_ASYNC, T_SM90 )   /* imm: groups */
SOP(  mma_sync,     2,     E_MEM,   T_MMASYNC)   /* D(dst, in a[0]), A, B:
						  * four warps' mma.sync */
SOP(  gstride,      0,     E_PURE,  T_ALL  )   /* r0 a 'strided'
						  * global's stride imm
						  * (elements), i32 */
SOP(  cp_async,     -1,    E_ASYNC, T_ALL  )   /* r0 global -> r1 smem
						  * [-> r2 mbar]: a0 lin, a1
						  * limit, a2 row index, a3
						  * row stride, a4 last index,
						  * a5 last extent */
SOP(  cp_commit,    0,     E_ASYNC, T_ALL  )
SOP(  cp_wait,      0,     E_ASYNC, T_ALL  )   /* imm: groups */
SOP(  tc_mma,       1,     E_ASYNC, T_SM100)   /* r0 D tmem, A, B; a0 acc */
SOP(  tc_commit,    0,     E_ASYNC, T_SM100)   /* r[0][ri0]: mbar */
SOP(  tmem_alloc,   0,     E_SYNC,  T_SM100)
SOP(  tmem_free,    0,     E_SYNC,  T_SM100)
SOP(  tmem_load,    0,     E_MEM,   T_SM100)   /* r0 region -> frag */
SOP(  tmem_store,   1,     E_MEM,   T_SM100)   /* frag -> r0 region */
SOP(  smem_store,   1,     E_MEM,   T_ALL  )   /* frag -> r0 buffer */
SOP(  smem_load,    -1,    E_MEM,   T_ALL  )   /* r0 buffer -> frag [a0: the
						  * width, blocked] */
SOP(  gstore,       -1,    E_MEM,   T_ALL  )   /* r0 global [indices...] = v */
SOP(  gload,        -1,    E_MEM,   T_ALL  )   /* r0 global [linear index];
						  * a gather: index tile, ok */
SOP(  gtload,       -1,    E_MEM,   T_ALL  )   /* frag <- r0 global: lin,
						  * limit, row index, stride
						  * [, width: blocked] */
SOP(  gscatter,     3,     E_MEM,   T_ALL  )   /* r0 global [lin tile] = v
						  * where the ok tile holds */
SOP(  rowred_put,   1,     E_MEM,   T_ALL  )   /* a blocked row vector's
						  * warp partials -> r0[ri0] */
SOP(  rowred_get,   -1,    E_MEM,   T_ALL  )   /* dst <- r0[ri0] reduced
						  * (imm 1: max), a0 partials
						  * [, a1 init] */
SOP(  clred_put,    1,     E_MEM,   T_ALL  )   /* a row vector's CTA
						  * partials -> r0[ri0] of
						  * every CTA of the cluster */
SOP(  grid_wait,    0,     E_SYNC,  T_HOP  )   /* griddepcontrol.wait */
SOP(  sem_wait,     2,     E_SYNC,  T_ALL  )   /* until r0 global [a0 lin]
						  * >= a1: acquire, GPU scope */
SOP(  sem_add,      2,     E_SYNC,  T_ALL  )   /* r0 global [a0 lin] += a1:
						  * release, GPU scope */
SOP(  grid_launch,  0,     E_SYNC,  T_HOP  )   /* griddepcontrol
						  * .launch_dependents */
SOP(  cl_sync,      0,     E_SYNC,  T_HOP  )   /* barrier.cluster: every
						  * thread of the cluster */
SOP(  clred_get,    -1,    E_MEM,   T_ALL  )   /* dst <- r0[ri0]'s CTA
						  * partials reduced (imm 1:
						  * max), a0 the partials
						  * [, a1 init] */
SOP(  colsum,       1,     E_PURE,  T_ALL  )   /* blocked tile -> its column
						  * sums, cols(L) */
