"""_flextrace.py: FlexAttention's score_mod and mask_mod traced into fagen's
schedule language (issue #22), for fagen.flex_attention (flex.py).

A mod is called once with symbolic arguments (Value objects); Python's
operators and the torch functions it calls (through __torch_function__,
and a TorchFunctionMode that also sees captured tensors indexed by traced
values) build a DAG of typed nodes, which is printed as the expression of
a `mod` declaration:

    global FX0 : i32[4, 16384];
    mod score_mod(s, b, h, q, k) = s - 0.5 * abs(cvt(q - k, f32));
    mod mask_mod(b, h, q, k) = FX0[b, q] == FX0[b, k] && q >= k;

Types follow docs/LANGUAGE.md section 8.3: b and h are i32 scalars, q and
k i32 register tiles, s an f32 register tile; integers meet floats through
cvt(x, f32), as torch promotes.  Nodes are hash-consed, so equal
subexpressions are one node; a node used more than once whose text is
long becomes a helper `mod _tN(...)` (mods are inlined, so this only keeps
the text linear in the DAG's size).  Everything else is a TraceError
naming the operation.  Pure Python: torch is used only when the caller
has imported it (its TorchFunctionMode during the trace).
"""

import math
import numbers
import sys
import types

SCORE_PARAMS = ("s", "b", "h", "q", "k")
MASK_PARAMS = ("b", "h", "q", "k")
SUPPORTED = (
    "+ - * / (true division), unary -, abs(), comparisons < <= > >= == !=, "
    "& | ~ ^ on bools, torch.where, torch.tanh, torch.abs, torch.exp, "
    "torch.exp2, torch.log, torch.log2, torch.sigmoid, torch.sqrt, "
    "torch.rsqrt, torch.minimum, "
    "torch.maximum, torch.clamp, torch.zeros_like/ones_like/full_like, "
    ".float(), .to(torch.float32), and indexing captured tensors with "
    "traced integers (bias[h, q_idx - kv_idx])")
_I32_MIN, _I32_MAX = -2 ** 31, 2 ** 31 - 1
_HELPER_MIN = 24     # a shared node's text longer than this gets a helper
# precedence (docs/LANGUAGE.md section 12.1); leaves and calls are 13
_PREC = {"||": 2, "&&": 3, "==": 7, "!=": 7, "<": 8, "<=": 8, ">": 8,
         ">=": 8, "+": 10, "-": 10, "*": 11, "/": 11}
_UNARY = 12
_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
# captured tensors: torch's dtype name -> (declared type, converted)
_DTYPES = {"float32": ("f32", False), "bfloat16": ("bf16", False),
           "float16": ("f16", False), "int32": ("i32", False),
           "int64": ("i32", True), "bool": ("i32", True)}


class TraceError(NotImplementedError):
    """A score_mod or mask_mod does what fagen cannot compile.  (Not a
    TypeError: torch turns those into NotImplemented in its operators.)"""


class _Trace:
    """One traced mod: the hash-consing table, the captured tensors (shared
    by the mods of one plan) and the scalar loads to bounds-check."""

    def __init__(self, who, captures, loads):
        self.who = who              # "fagen.flex_attention: score_mod"
        self.nodes = {}             # key -> Value
        self.captures = captures    # [[name, tensor, type, convert]]
        self.loads = loads          # [(who, name, shape, index Values)]

    def fail(self, what):
        raise TraceError("%s uses %s, which fagen cannot compile; "
                         "supported: %s" % (self.who, what, SUPPORTED))

    def node(self, op, args, ty, tile, text=None):
        key = (op, ty, text) + tuple(
            ("v", id(a)) if isinstance(a, Value) else ("c", repr(a))
            for a in args)
        v = self.nodes.get(key)
        if v is None:
            v = Value(self, op, tuple(args), ty, tile, text)
            self.nodes[key] = v
        return v


class Value:
    """A traced value: op, args (Values, or Python constants for 'const'),
    type ('i32', 'f32' or 'bool') and whether it is a register tile."""

    __slots__ = ("tr", "op", "args", "ty", "tile", "text")
    __array_priority__ = 1000           # numpy scalars defer to us

    def __init__(self, tr, op, args, ty, tile, text):
        self.tr, self.op, self.args = tr, op, args
        self.ty, self.tile, self.text = ty, tile, text

    def __repr__(self):
        return "<fagen traced %s%s %s>" % (
            self.ty, " tile" if self.tile else "", render_inline(self))

    # arithmetic
    def __add__(self, o): return _arith(self.tr, "+", self, o)
    def __radd__(self, o): return _arith(self.tr, "+", o, self)
    def __sub__(self, o): return _arith(self.tr, "-", self, o)
    def __rsub__(self, o): return _arith(self.tr, "-", o, self)
    def __mul__(self, o): return _arith(self.tr, "*", self, o)
    def __rmul__(self, o): return _arith(self.tr, "*", o, self)
    def __truediv__(self, o): return _div(self.tr, self, o)
    def __rtruediv__(self, o): return _div(self.tr, o, self)
    def __neg__(self): return _neg(self.tr, self)
    def __pos__(self): return _num(self.tr, self, "unary +")
    def __abs__(self): return _abs(self.tr, self)

    # comparisons and logic
    def __lt__(self, o): return _cmp(self.tr, "<", self, o)
    def __le__(self, o): return _cmp(self.tr, "<=", self, o)
    def __gt__(self, o): return _cmp(self.tr, ">", self, o)
    def __ge__(self, o): return _cmp(self.tr, ">=", self, o)
    def __eq__(self, o): return _cmp(self.tr, "==", self, o)
    def __ne__(self, o): return _cmp(self.tr, "!=", self, o)
    def __and__(self, o): return _logic(self.tr, "&&", self, o)
    def __rand__(self, o): return _logic(self.tr, "&&", o, self)
    def __or__(self, o): return _logic(self.tr, "||", self, o)
    def __ror__(self, o): return _logic(self.tr, "||", o, self)
    def __xor__(self, o): return _logic(self.tr, "^", self, o)
    def __rxor__(self, o): return _logic(self.tr, "^", o, self)
    def __invert__(self): return _not(self.tr, self)
    __hash__ = object.__hash__

    # what fagen cannot compile, named
    def __floordiv__(self, o): self.tr.fail("// (floor division)")
    __rfloordiv__ = __floordiv__
    def __mod__(self, o): self.tr.fail("% (remainder)")
    __rmod__ = __mod__
    def __pow__(self, o): self.tr.fail("** (power)")
    __rpow__ = __pow__
    def __lshift__(self, o): self.tr.fail("<< (shift)")
    __rlshift__ = __rrshift__ = __rshift__ = __lshift__
    def __matmul__(self, o): self.tr.fail("@ (matrix product)")
    __rmatmul__ = __matmul__

    def __bool__(self):
        raise TraceError(
            "%s branches on a traced value (if, while, and/or/not, a "
            "chained comparison such as a < b < c, bool(), or the builtins "
            "min()/max()): fagen compiles one expression; choose with "
            "torch.where(cond, a, b), combine masks with & | ~, and use "
            "torch.minimum/torch.maximum" % self.tr.who)

    def _number(self, *_):
        raise TraceError(
            "%s turns a traced value into a Python number (int(), float(), "
            "an index, math.*, .item()): fagen cannot compile that; "
            "supported: %s" % (self.tr.who, SUPPORTED))
    __int__ = __float__ = __index__ = __complex__ = __round__ = _number
    __floor__ = __ceil__ = __trunc__ = item = tolist = _number

    def __iter__(self):
        self.tr.fail("iteration over a traced value")

    def __len__(self):
        self.tr.fail("len() of a traced value")

    def __getitem__(self, idx):
        self.tr.fail("indexing a traced value (only captured tensors are "
                     "indexed)")

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        self.tr.fail(".%s" % name)

    # torch.Tensor's methods that fagen compiles
    def float(self): return _to_f32(self.tr, self)
    def int(self): return _to_int(self.tr, self, "int")
    def long(self): return _to_int(self.tr, self, "long")
    def abs(self): return _abs(self.tr, self)
    def neg(self): return _neg(self.tr, self)
    def tanh(self): return _unary(self.tr, "tanh", self)
    def exp(self): return _unary(self.tr, "exp", self)
    def exp2(self): return _unary(self.tr, "exp2", self)
    def log(self): return _unary(self.tr, "log", self)
    def log2(self): return _unary(self.tr, "log2", self)
    def sigmoid(self): return _unary(self.tr, "sigmoid", self)
    def sqrt(self): return _unary(self.tr, "sqrt", self)
    def rsqrt(self): return _unary(self.tr, "rsqrt", self)
    def minimum(self, o): return _minmax(self.tr, "min", self, o)
    def maximum(self, o): return _minmax(self.tr, "max", self, o)
    def where(self, cond, other): return _where(self.tr, cond, self, other)
    def logical_not(self): return _not(self.tr, self)
    def logical_and(self, o): return _logic(self.tr, "&&", self, o)
    def logical_or(self, o): return _logic(self.tr, "||", self, o)

    def clamp(self, min=None, max=None):
        return _clamp(self.tr, self, min, max)
    clip = clamp

    def to(self, *args, **kwargs):
        dtype = kwargs.get("dtype", args[0] if args else None)
        name = str(dtype).replace("torch.", "")
        if name in ("float32", "float"):
            return _to_f32(self.tr, self)
        if name in ("int32", "int64", "int", "long"):
            return _to_int(self.tr, self, ".to(%s)" % dtype)
        if name == "bool" and self.ty == "bool":
            return self
        self.tr.fail(".to(%s)" % (dtype,))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return torch_call(func, args, kwargs or {})


# ---- building nodes --------------------------------------------------------

def _tr_of(*xs):
    """The trace of the first Value in xs, or in tuples and lists in xs
    (an index tuple)."""
    for x in xs:
        if isinstance(x, Value):
            return x.tr
        if isinstance(x, (tuple, list)):
            tr = _tr_of(*x)
            if tr is not None:
                return tr
    return None


def _lift(tr, x, what):
    """A Value, or a Python constant as a 'const' node; anything else (a
    whole tensor, None, a string) is an error."""
    if isinstance(x, Value):
        if x.tr is not tr:
            raise TraceError("%s mixes values of another traced function"
                             % tr.who)
        return x
    if isinstance(x, (bool, getattr(sys.modules.get("numpy"), "bool_",
                                     bool))):
        return tr.node("const", (bool(x),), "bool", False)
    if isinstance(x, numbers.Integral):
        return tr.node("const", (int(x),), "i32", False)
    if isinstance(x, numbers.Real):
        x = float(x)
        if math.isnan(x):
            tr.fail("a NaN constant in %s" % what)
        return tr.node("const", (x,), "f32", False)
    if _is_tensor(x):
        tr.fail("a captured tensor as a whole in %s (shape %s); index it "
                "with traced integers, as bias[h, q_idx]"
                % (what, tuple(x.shape)))
    tr.fail("a %s in %s" % (type(x).__name__, what))


def _is_tensor(x):
    return not isinstance(x, Value) and hasattr(x, "shape") and \
        hasattr(x, "dtype")


def _cvt_f32(tr, v):
    if v.ty == "f32":
        return v
    if v.op == "const":
        if v.ty == "bool":
            tr.fail("a bool constant as a number")
        return tr.node("const", (float(v.args[0]),), "f32", False)
    if v.ty == "bool":
        return _select(tr, v, tr.node("const", (1.0,), "f32", False),
                       tr.node("const", (0.0,), "f32", False))
    return tr.node("cvt", (v,), "f32", v.tile)


def _int_const(tr, v):
    if v.op == "const" and v.ty == "i32" and \
            not _I32_MIN <= v.args[0] <= _I32_MAX:
        tr.fail("the integer constant %d, which does not fit in i32"
                % v.args[0])
    return v


def _num(tr, v, what):
    if v.ty == "bool":
        tr.fail("%s on a bool (a comparison or mask); choose numbers with "
                "torch.where(cond, a, b) or convert with .float()" % what)
    return _int_const(tr, v)


def _promote(tr, a, b, what):
    """a and b as Values of one numeric type: i32 if both are, else f32."""
    a, b = _num(tr, _lift(tr, a, what), what), \
        _num(tr, _lift(tr, b, what), what)
    if a.ty == b.ty:
        return a, b
    return _cvt_f32(tr, a), _cvt_f32(tr, b)


def _bin(tr, op, a, b, ty):
    return tr.node(op, (a, b), ty, a.tile or b.tile)


def _arith(tr, op, a, b):
    a, b = _promote(tr, a, b, "'%s'" % op)
    return _bin(tr, op, a, b, a.ty)


def _div(tr, a, b):
    """a / b.  By a nonzero constant it is a * (1 / b), the reciprocal
    rounded once: within an ulp of the quotient (exact where b is a power
    of 2), without the IEEE division's reciprocal on the MUFU and its
    correction steps, which a mod pays at every score (Triton, under
    compiled FlexAttention, divides approximately too)."""
    a, b = _promote(tr, a, b, "'/'")
    a, b = _cvt_f32(tr, a), _cvt_f32(tr, b)
    if b.op == "const" and b.args[0] != 0 and math.isfinite(b.args[0]) \
            and math.isfinite(1.0 / b.args[0]):
        return _bin(tr, "*", a, tr.node("const", (1.0 / b.args[0],), "f32",
                                        False), "f32")
    return _bin(tr, "/", a, b, "f32")


def _neg(tr, a):
    a = _num(tr, _lift(tr, a, "unary -"), "unary -")
    if a.op == "const":
        return tr.node("const", (-a.args[0],), a.ty, False)
    return tr.node("neg", (a,), a.ty, a.tile)


def _abs(tr, a):
    a = _num(tr, _lift(tr, a, "abs"), "abs")
    return tr.node("abs", (a,), a.ty, a.tile)


def _cmp(tr, op, a, b):
    a, b = _lift(tr, a, "'%s'" % op), _lift(tr, b, "'%s'" % op)
    if a.ty == "bool" or b.ty == "bool":
        if a.ty != b.ty or op not in ("==", "!="):
            tr.fail("'%s' between %s and %s" % (op, a.ty, b.ty))
        return _logic(tr, "^" if op == "!=" else "==", a, b)
    a, b = _promote(tr, a, b, "'%s'" % op)
    return _bin(tr, op, a, b, "bool")


def _bool(tr, x, what):
    x = _lift(tr, x, what)
    if x.ty != "bool":
        tr.fail("%s on %s (bitwise operations on integers)" % (what, x.ty))
    return x


def _logic(tr, op, a, b):
    what = {"&&": "&", "||": "|", "^": "^", "==": "=="}[op]
    a, b = _bool(tr, a, "'%s'" % what), _bool(tr, b, "'%s'" % what)
    if op == "^":       # a != b: exactly one
        return _logic(tr, "||", _logic(tr, "&&", a, _not(tr, b)),
                      _logic(tr, "&&", _not(tr, a), b))
    if op == "==":
        return _logic(tr, "||", _logic(tr, "&&", a, b),
                      _logic(tr, "&&", _not(tr, a), _not(tr, b)))
    for x, y in ((a, b), (b, a)):       # fold constants: x & true is x
        if x.op == "const":
            return y if x.args[0] == (op == "&&") else x
    return _bin(tr, op, a, b, "bool")


def _not(tr, a):
    a = _bool(tr, a, "'~'")
    if a.op == "const":
        return tr.node("const", (not a.args[0],), "bool", False)
    if a.op == "!":
        return a.args[0]
    return tr.node("!", (a,), "bool", a.tile)


def _select(tr, p, a, b):
    if p.op == "const":
        return a if p.args[0] else b
    if a.ty == "bool":      # a choice of bools is logic
        return _logic(tr, "||", _logic(tr, "&&", p, a),
                      _logic(tr, "&&", _not(tr, p), b))
    return tr.node("select", (p, a, b), a.ty, p.tile or a.tile or b.tile)


def _where(tr, cond, a, b):
    p = _bool(tr, cond, "torch.where's condition")
    a, b = _lift(tr, a, "torch.where"), _lift(tr, b, "torch.where")
    if a.ty == "bool" or b.ty == "bool":
        if a.ty != b.ty:
            tr.fail("torch.where between %s and %s" % (a.ty, b.ty))
    else:
        a, b = _promote(tr, a, b, "torch.where")
    return _select(tr, p, a, b)


def _minmax(tr, op, a, b):
    a, b = _promote(tr, a, b, "torch.%simum" % op)
    return tr.node(op, (a, b), a.ty, a.tile or b.tile)


def _clamp(tr, x, lo, hi):
    x = _num(tr, _lift(tr, x, "torch.clamp"), "torch.clamp")
    if lo is None and hi is None:
        tr.fail("torch.clamp without min or max")
    if lo is not None:
        x = _minmax(tr, "max", x, lo)
    if hi is not None:
        x = _minmax(tr, "min", x, hi)
    return x


def _unary(tr, fn, x):
    x = _cvt_f32(tr, _num(tr, _lift(tr, x, "torch." + fn), "torch." + fn))
    call = lambda name, v: tr.node(name, (v,), "f32", v.tile)  # noqa: E731
    f32 = lambda c: tr.node("const", (c,), "f32", False)     # noqa: E731
    if fn == "exp":     # e^x = 2^(x log2 e)
        return call("exp2", _bin(tr, "*", x, f32(_LOG2E), "f32"))
    if fn == "log":
        return _bin(tr, "*", call("log2", x), f32(_LN2), "f32")
    if fn == "sigmoid":
        e = call("exp2", _bin(tr, "*", x, f32(-_LOG2E), "f32"))
        return call("rcp", _bin(tr, "+", f32(1.0), e, "f32"))
    return call(fn, x)


def _to_f32(tr, x):
    return _cvt_f32(tr, _lift(tr, x, ".float()"))


def _to_int(tr, x, what):
    x = _lift(tr, x, what)
    if x.ty != "i32":
        tr.fail("%s of %s (fagen converts only integers to float)"
                % (what, x.ty))
    return x


def _like(tr, x, fill):
    x = _lift(tr, x, "torch.*_like")
    ty = "f32" if isinstance(fill, float) else x.ty
    if ty == "bool":
        return tr.node("const", (bool(fill),), "bool", False)
    return tr.node("const", (float(fill) if ty == "f32" else int(fill),),
                   ty, False)


# ---- torch functions -------------------------------------------------------

def _is_method(func):
    qn = getattr(func, "__qualname__", "") or ""
    return qn.split(".")[0] in ("Tensor", "TensorBase", "_TensorBase")


def _func_name(func):
    try:
        from torch.overrides import resolve_name
        name = resolve_name(func)
        if name:
            return name
    except Exception:   # no torch, or an object it does not know
        pass
    name = getattr(func, "__name__", repr(func))
    return ("torch.Tensor." if _is_method(func) else "torch.") + name


_BINARY = {"add": "+", "__add__": "+", "__radd__": "r+",
           "sub": "-", "__sub__": "-", "__rsub__": "r-",
           "mul": "*", "__mul__": "*", "__rmul__": "r*",
           "div": "/", "true_divide": "/", "__truediv__": "/",
           "__rtruediv__": "r/", "lt": "<", "__lt__": "<", "le": "<=",
           "__le__": "<=", "gt": ">", "__gt__": ">", "ge": ">=",
           "__ge__": ">=", "eq": "==", "__eq__": "==", "ne": "!=",
           "__ne__": "!=", "logical_and": "&", "__and__": "&",
           "__rand__": "r&", "logical_or": "|", "__or__": "|",
           "__ror__": "r|", "logical_xor": "^", "__xor__": "^",
           "minimum": "min", "maximum": "max"}
_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b,
        "*": lambda a, b: a * b, "/": lambda a, b: a / b,
        "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
        "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
        "&": lambda a, b: a & b, "|": lambda a, b: a | b,
        "^": lambda a, b: a ^ b}
_UNARIES = ("tanh", "exp", "exp2", "log", "log2", "sigmoid", "sqrt",
            "rsqrt")


def torch_call(func, args, kwargs):
    """A torch function or Tensor method called with traced arguments."""
    tr = _tr_of(*args, *kwargs.values())
    name = getattr(func, "__name__", "")
    if tr is None:
        if name in _READS:      # a tensor's values become constants
            _READ[0] += 1
        return func(*args, **kwargs)
    if name == "__getitem__" and not isinstance(args[0], Value):
        return index(args[0], args[1])
    what = _func_name(func)
    bad = sorted(k for k in kwargs if k not in ("min", "max", "dtype"))
    if bad:
        tr.fail("%s with %s=" % (what, bad[0]))
    if name in _BINARY and len(args) == 2:
        op, a, b = _BINARY[name], args[0], args[1]
        if op.startswith("r"):
            op, a, b = op[1:], b, a
        if op in ("min", "max"):
            return _minmax(tr, op, _lift(tr, a, what), b)
        if not isinstance(a, Value):
            a = _lift(tr, a, what)      # a whole tensor: an error
        return _OPS[op](a, b)
    if name in ("neg", "negative", "__neg__") and len(args) == 1:
        return _neg(tr, args[0])
    if name in ("abs", "absolute", "__abs__") and len(args) == 1:
        return _abs(tr, args[0])
    if name in ("logical_not", "__invert__", "bitwise_not") and \
            len(args) == 1:
        return _not(tr, args[0])
    if name in _UNARIES and len(args) == 1:
        return _unary(tr, name, args[0])
    if name == "where" and len(args) == 3:
        c, a, b = (args[1], args[0], args[2]) if _is_method(func) else args
        return _where(tr, c, a, b)
    if name in ("clamp", "clip") and 1 <= len(args) <= 3:
        lo = args[1] if len(args) > 1 else kwargs.get("min")
        hi = args[2] if len(args) > 2 else kwargs.get("max")
        return _clamp(tr, args[0], lo, hi)
    if name in ("float", "to", "int", "long") and isinstance(args[0], Value):
        return getattr(args[0], name)(*args[1:], **kwargs)
    if name in ("zeros_like", "ones_like") and len(args) == 1:
        return _like(tr, args[0], 0 if name == "zeros_like" else 1)
    if name == "full_like" and len(args) == 2 and \
            isinstance(args[1], (int, float)):
        return _like(tr, args[0], args[1])
    if name in ("min", "max"):
        tr.fail("%s (for two values use torch.minimum/torch.maximum)"
                % what)
    tr.fail(what)


# ---- captured tensors ------------------------------------------------------

def _dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def _tensor_key(t):
    try:
        return ("ptr", t.data_ptr(), tuple(t.shape), tuple(t.stride()),
                str(t.dtype), str(t.device))
    except AttributeError:      # not a torch tensor (the unit tests' fakes)
        return ("id", id(t))


def index(t, idx):
    """t[idx], t a captured tensor and idx traced integers: a load from a
    global of the mod file (a gather when an index is a tile)."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    tr = _tr_of(*idx)
    if tr is None:
        return t[idx]
    shape = tuple(int(d) for d in t.shape)
    if len(idx) != len(shape):
        raise TraceError(
            "%s indexes a captured tensor of shape %s with %d indices: "
            "fagen needs one integer per dimension (no slices, None or "
            "...)" % (tr.who, shape, len(idx)))
    dt = _DTYPES.get(_dtype_name(t))
    if dt is None:
        raise TraceError(
            "%s indexes a captured %s tensor; fagen reads float32, "
            "bfloat16, float16, int32, int64 (as int32) and bool tensors"
            % (tr.who, t.dtype))
    if any(d < 1 for d in shape) or math.prod(shape) > _I32_MAX:
        raise TraceError("%s indexes a captured tensor of shape %s: fagen "
                         "needs 1 to 2^31 - 1 elements" % (tr.who, shape))
    ix = []
    for i, e in enumerate(idx):
        if isinstance(e, slice) or e is None or e is Ellipsis:
            raise TraceError("%s indexes a captured tensor with %r: fagen "
                             "needs one integer per dimension"
                             % (tr.who, e))
        e = _lift(tr, e, "an index")
        if e.ty != "i32":
            raise TraceError("%s indexes a captured tensor with a %s "
                             "(index %d): indices are integers"
                             % (tr.who, e.ty, i))
        ix.append(_int_const(tr, e))
    key = _tensor_key(t)
    for cap in tr.captures:
        if cap[4] == key:
            name = cap[0]
            break
    else:
        name = "FX%d" % len(tr.captures)
        tr.captures.append([name, t, dt[0], dt[1], key, shape])
    tile = any(e.tile for e in ix)
    v = tr.node("load", tuple(ix), "i32" if dt[0] == "i32" else "f32",
                tile, name)
    if not tile:
        tr.loads.append((tr.who, name, shape, tuple(ix)))
    if _dtype_name(t) == "bool":
        return _cmp(tr, "!=", v, 0)
    return v


def _mode_class():
    """A TorchFunctionMode that routes torch calls with traced arguments,
    and captured tensors indexed by them, to the tracer (None without
    torch: the caller has not imported it, so nothing calls torch)."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "overrides"):
        return None

    class Mode(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return torch_call(func, args, kwargs or {})

    return Mode


# ---- printing --------------------------------------------------------------

def _const_text(v):
    c = v.args[0]
    if v.ty == "bool":
        return "true" if c else "false"
    if v.ty == "f32":
        return repr(float(c))      # exact: repr round-trips the double
    return str(c)


def _text(v, kids):
    """v's text and precedence, given its arguments' (text, prec)."""
    op = v.op
    if op == "const":
        t = _const_text(v)
        return t, _UNARY if t.startswith("-") else 13
    if op == "param":
        return v.text, 13
    if op == "load":
        return "%s[%s]" % (v.text, ", ".join(t for t, _ in kids)), 13
    if op in ("neg", "!"):
        (t, p), = kids
        return ("-" if op == "neg" else "!") + (
            "(%s)" % t if p <= _UNARY else t), _UNARY
    if op in _PREC:
        prec = _PREC[op]
        (lt, lp), (rt, rp) = kids
        lt = "(%s)" % lt if lp < prec else lt
        # a - (-x), not a - -x
        rt = "(%s)" % rt if rp <= prec or rt.startswith("-") else rt
        return "%s %s %s" % (lt, op, rt), prec
    args = ", ".join(t for t, _ in kids)
    if op == "cvt":
        return "cvt(%s, f32)" % args, 13
    return "%s(%s)" % (op, args), 13


def render_inline(v):
    """v's text, helpers first (for messages)."""
    helpers = []
    last = render(v, "_", (), helpers)
    return " ".join(helpers + [last[len("mod _() = "):-1]])


def _order(root):
    """The nodes below root, children before parents, and how many times
    each is used."""
    order, uses, seen = [], {}, set()
    stack = [(root, False)]
    while stack:
        v, done = stack.pop()
        if done:
            order.append(v)
            continue
        if id(v) in seen:
            continue
        seen.add(id(v))
        stack.append((v, True))
        for a in reversed(v.args):
            if isinstance(a, Value):
                uses[id(a)] = uses.get(id(a), 0) + 1
                stack.append((a, False))
    return order, uses


def render(root, name, params, helpers):
    """`mod name(params) = ...;` for root, after the helper mods it needs
    (appended to helpers, numbered on from len(helpers))."""
    order, uses = _order(root)
    call = "(%s)" % ", ".join(params)
    out = {}
    for v in order:
        kids = [out[id(a)] for a in v.args if isinstance(a, Value)]
        t, p = _text(v, kids)
        if uses.get(id(v), 0) > 1 and len(t) > _HELPER_MIN:
            hname = "_t%d" % len(helpers)
            helpers.append("mod %s%s = %s;" % (hname, call, t))
            t, p = hname + call, 13
        out[id(v)] = (t, p)
    return "mod %s%s = %s;" % (name, call, out[id(root)][0])


# ---- tracing a mod ---------------------------------------------------------

def _params(tr, names):
    types = {"s": ("f32", True), "b": ("i32", False), "h": ("i32", False),
             "q": ("i32", True), "k": ("i32", True)}
    return [tr.node("param", (), types[n][0], types[n][1], n)
            for n in names]


def trace(fn, kind, who, captures, loads):
    """Calls fn (a score_mod or mask_mod) on traced arguments: the result
    as a Value, or None when it is the identity (score_mod returning its
    score, mask_mod returning True)."""
    names = SCORE_PARAMS if kind == "score_mod" else MASK_PARAMS
    tr = _Trace("%s: %s" % (who, kind), captures, loads)
    args = _params(tr, names)
    mode = _mode_class()
    if mode is None:
        r = fn(*args)
    else:
        with mode():
            r = fn(*args)
    if _is_tensor(r) and getattr(r, "dim", lambda: 1)() == 0:
        r = r.item()                # a constant tensor (torch.ones(()))
    r = _lift(tr, r, "the result")
    if kind == "mask_mod":
        if r.ty != "bool":
            raise TraceError("%s returns %s; a mask_mod returns a bool "
                             "(True: attend), e.g. q_idx >= kv_idx"
                             % (tr.who, r.ty))
        return None if r.op == "const" and r.args[0] else r
    if r.ty == "bool":
        raise TraceError("%s returns a bool; a score_mod returns the "
                         "score (masks go in a mask_mod)" % tr.who)
    r = _cvt_f32(tr, _int_const(tr, r))
    return None if r is args[0] else r


class Plan:
    """A traced score_mod and mask_mod: text (the mod file, fagen's
    compile-cache key), tensors [(name, tensor)] (the captured tensors,
    as captured: flex.py converts int64 and bool ones to int32),
    has_score_mod, has_mask_mod."""

    def __init__(self, text, captures, loads, has_score, has_mask):
        self.text = text
        self.tensors = [(c[0], c[1]) for c in captures]
        self.has_score_mod, self.has_mask_mod = has_score, has_mask
        self._captures, self._loads = captures, loads

    def __repr__(self):
        return "fagen flex plan:\n" + self.text

    def check_bounds(self, batch, heads):
        """Scalar loads (indices of b, h and constants only) have no
        bounds check in the kernel: prove them in bounds for b < batch,
        h < heads, or raise IndexError."""
        env = {"b": (0, batch - 1), "h": (0, heads - 1)}
        for who, name, shape, ix in self._loads:
            for i, (e, d) in enumerate(zip(ix, shape)):
                lo, hi = _interval(e, env)
                if lo < 0 or hi >= d:
                    raise IndexError(
                        "%s reads a captured tensor of shape %s at index "
                        "%d in [%s, %s], outside [0, %d) for B=%d, H=%d"
                        % (who, shape, i, lo, hi, d, batch, heads))


def _interval(v, env):
    """[lo, hi] of an integer Value of b, h and constants (inf: unknown)."""
    inf = math.inf
    if v.op == "const":
        return v.args[0], v.args[0]
    if v.op == "param":
        return env.get(v.text, (-inf, inf))
    r = [_interval(a, env) for a in v.args
         if isinstance(a, Value) and a.ty == "i32"]
    if v.op == "+":
        return r[0][0] + r[1][0], r[0][1] + r[1][1]
    if v.op == "-":
        return r[0][0] - r[1][1], r[0][1] - r[1][0]
    if v.op == "neg":
        return -r[0][1], -r[0][0]
    if v.op == "*":
        if inf in map(abs, r[0] + r[1]):
            return -inf, inf
        ps = [x * y for x in r[0] for y in r[1]]
        return min(ps), max(ps)
    if v.op in ("min", "max"):
        f = min if v.op == "min" else max
        return f(r[0][0], r[1][0]), f(r[0][1], r[1][1])
    if v.op == "abs":
        lo, hi = r[0]
        return (0 if lo <= 0 <= hi else min(abs(lo), abs(hi)),
                max(abs(lo), abs(hi)))
    if v.op == "select":
        return min(r[0][0], r[1][0]), max(r[0][1], r[1][1])
    return -inf, inf        # a loaded value: unknown


# ---- the plan cache -------------------------------------------------------
#
# Tracing costs 50 to 300 us of Python a call, as much as a short kernel.
# A plan is reused while its mods' fingerprint is the same: each mod's code
# and, recursively, what it can read (its defaults, closure cells and the
# globals its code names): numbers, strings, tensors (by identity, shape,
# dtype and device: the kernel reads their values when it runs), torch and
# math, and functions of those.  A mod that reads anything else (an
# object's attributes, a user module) is traced at every call, and so is
# one whose trace turned a tensor's values into constants (.item(),
# float(t)), which the fingerprint does not see.

_PLANS = {}             # fingerprint -> Plan, oldest first
_PLANS_MAX = 64
_READ = [0]             # tensor values read at trace time, so far
_READS = frozenset(("item", "tolist", "numpy", "__bool__", "__float__",
                    "__int__", "__index__", "__complex__", "__format__",
                    "__repr__", "__str__", "__array__"))
_STABLE = frozenset(("math", "torch", "operator", "builtins", "numbers"))


def remember(cache, most, key, value):
    """cache[key] = value, the oldest entry out past most entries (the
    plan, block-table and conversion caches)."""
    if len(cache) >= most:
        del cache[next(iter(cache))]
    cache[key] = value


class _NoKey(Exception):
    """What a mod reads has no fingerprint: trace it at every call."""


def _fingerprint(x, seen):
    if x is None or isinstance(x, (bool, int, float, complex, str, bytes)):
        return (type(x).__name__, x)
    if _is_tensor(x):
        return ("tensor", id(x), tuple(x.shape), str(x.dtype),
                str(getattr(x, "device", "")))
    if isinstance(x, (tuple, list)):
        return (type(x).__name__,) + tuple(_fingerprint(y, seen) for y in x)
    if isinstance(x, dict):
        return ("dict",) + tuple((_fingerprint(k, seen),
                                  _fingerprint(v, seen))
                                 for k, v in x.items())
    if isinstance(x, types.ModuleType):
        if x.__name__.split(".")[0] in _STABLE:
            return ("module", x.__name__)
        raise _NoKey
    lib = getattr(x, "__module__", None) if callable(x) else \
        type(x).__module__
    if isinstance(x, types.BuiltinFunctionType) or \
            str(lib or "").split(".")[0] in _STABLE:
        return ("lib", id(x)) if callable(x) else ("lib", repr(x))
    if isinstance(x, types.FunctionType):
        if id(x) in seen:
            return ("again", id(x))
        seen.add(id(x))
        g = x.__globals__
        return ("fn", x.__code__, _fingerprint(x.__defaults__, seen),
                _fingerprint(x.__kwdefaults__, seen),
                tuple(_fingerprint(c.cell_contents, seen)
                      for c in x.__closure__ or ()),
                tuple((n, _fingerprint(g[n], seen))
                      for n in _names(x.__code__) if n in g))
    raise _NoKey


def _names(code):
    """The global (and attribute) names code and its inner code use."""
    out = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out += _names(c)
    return out


def make_plan(score_mod, mask_mod, who="fagen.flex_attention"):
    """score_mod and mask_mod (either may be None) traced into one mod
    file: a Plan, from the cache when the mods' fingerprint is known."""
    try:
        key = (who, _fingerprint(score_mod, set()),
               _fingerprint(mask_mod, set()))
        plan = _PLANS.get(key)
    except Exception:   # noqa: BLE001 -- _NoKey, an empty closure cell,
        key = plan = None   # anything odd: no key, the trace says more
    if plan is not None:
        return plan
    read = _READ[0]
    plan = _make_plan(score_mod, mask_mod, who)
    if key is not None and _READ[0] == read:
        remember(_PLANS, _PLANS_MAX, key, plan)
    return plan


def _make_plan(score_mod, mask_mod, who):
    captures, loads, helpers, mods = [], [], [], []
    has = []
    for fn, kind, params in ((score_mod, "score_mod", SCORE_PARAMS),
                             (mask_mod, "mask_mod", MASK_PARAMS)):
        r = None if fn is None else trace(fn, kind, who, captures, loads)
        has.append(r is not None)
        if r is not None:
            mods.append(render(r, kind, params, helpers))
    lines = ["global %s : %s[%s];" % (c[0], c[2], ", ".join(map(str, c[5])))
             for c in captures]
    text = "\n".join(lines + helpers + mods)
    return Plan(text + "\n" if text else "", captures, loads, has[0], has[1])
