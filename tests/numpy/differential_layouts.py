# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal's layouts against NumPy's, case by generated case.

Runs the layout oracle (tests/helpers/layout_oracle.cpp, gpuhal's Layout
behind a line protocol) and NumPy side by side over random cases: shapes up
to 4-D with zero and one sizes; dense, strided, negative, zero and permuted
strides; slices with steps and out-of-range bounds; integer indices; order
letters in both cases and invalid ones. For each operation (creation with
an order letter, creation with strides, indexing, reshape, ravel, the
strides of *_like, transpose) the rule is:

- where NumPy returns a view, gpuhal's shape, strides, offset from the
  allocation and contiguity flags equal NumPy's;
- where NumPy must copy (reshape with copy=False refuses; ravel returns a
  copy), gpuhal says ERROR_REQUIRES_COPY;
- where NumPy raises, gpuhal raises the matching status (IndexError and
  AxisError: ERROR_INDEX_OUT_OF_RANGE; ValueError and TypeError:
  ERROR_INVALID_VALUE, ERROR_INVALID_SHAPE or ERROR_SIZE_OVERFLOW).

Deliberate differences are listed in DELIBERATE, by name, with the reason;
every other difference fails the run. Usage:

    differential_layouts.py ORACLE [--cases N] [--seed S]
"""
import argparse
import random
import subprocess
import sys

import numpy as np

ORDERS = ["C", "F", "A", "K", "c", "f", "a", "k", "X"]
DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.complex128}

# Where gpuhal deliberately answers otherwise than NumPy: name -> why. A case
# that differs is excused only by the rule that names it (see excused()).
DELIBERATE = {
}

VALUE_STATUSES = {"ERROR_INVALID_VALUE", "ERROR_INVALID_SHAPE", "ERROR_SIZE_OVERFLOW"}


class Case:
    def __init__(self, op, order, itemsize, shape, strides, args=""):
        self.op, self.order, self.itemsize = op, order, itemsize
        self.shape, self.strides, self.args = shape, strides, args

    def line(self):
        def lst(v):
            return " ".join([str(len(v))] + [str(x) for x in v])

        text = f"{self.op} {self.order} {self.itemsize} {lst(self.shape)} {lst(self.strides)}"
        return text + (" " + self.args if self.args else "")


# ---- generating cases ----------------------------------------------------------


def gen_shape(rng, max_ndim=4):
    ndim = rng.randint(0, max_ndim)
    return [rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 7]) if rng.random() > 0.06 else 0 for _ in range(ndim)]


def gen_strides(rng, shape, itemsize):
    """Explicit strides: dense C or F, then scaled, negated, zeroed or permuted."""
    n = len(shape)
    acc, dense = itemsize, [0] * n
    axes = list(range(n)) if rng.random() < 0.5 else list(range(n - 1, -1, -1))
    for d in reversed(axes):
        dense[d] = acc
        acc *= max(shape[d], 1)
    strides = []
    for s in dense:
        r = rng.random()
        if r < 0.1:
            s = 0
        elif r < 0.3:
            s *= rng.choice([2, 3])
        elif r < 0.4:
            s = itemsize * rng.randint(1, 9)
        if rng.random() < 0.25:
            s = -s
        strides.append(s)
    if rng.random() < 0.3:
        rng.shuffle(strides)
    if rng.random() < 0.3:  # untouched dense strides, C or F, for the contiguous paths
        strides = dense
    return strides


def gen_base(rng, dense_ok=True):
    itemsize = rng.choice([1, 2, 4, 8, 16])
    shape = gen_shape(rng)
    strides = [] if dense_ok and rng.random() < 0.35 else gen_strides(rng, shape, itemsize)
    return itemsize, shape, strides


def gen_order(rng, common="C"):
    return common if rng.random() < 0.3 else rng.choice(ORDERS)


def gen_bound(rng, length):
    return "_" if rng.random() < 0.3 else str(rng.randint(-length - 3, length + 3))


def gen_index(rng, shape):
    count = len(shape) + (1 if rng.random() < 0.05 else 0)
    count = rng.randint(0, count)
    tokens = []
    for d in range(count):
        length = shape[d] if d < len(shape) else 1
        if rng.random() < 0.3:
            tokens.append(f"i{rng.randint(-length - 2, length + 1)}")
        else:
            step = 0 if rng.random() < 0.02 else rng.choice([1, 1, 2, 3, -1, -2, -3])
            tokens.append(f"s{gen_bound(rng, length)}:{gen_bound(rng, length)}:{step}")
    return tokens


def gen_new_shape(rng, size):
    if size == 0:
        out = [rng.choice([0, 1, 2, 3]) for _ in range(rng.randint(1, 4))]
        if 0 not in out:
            out[rng.randrange(len(out))] = 0
    else:
        out, left = [], size
        for p in [2, 3, 5, 7]:
            while left % p == 0:
                out.append(p)
                left //= p
        out.append(left)
        rng.shuffle(out)
        # merge some neighbours, sprinkle ones
        while len(out) > 1 and rng.random() < 0.4:
            i = rng.randrange(len(out) - 1)
            out[i : i + 2] = [out[i] * out[i + 1]]
        for _ in range(rng.randint(0, 2)):
            out.insert(rng.randint(0, len(out)), 1)
        out = out[:6] if len(out) <= 6 else [size]
    if rng.random() < 0.15:
        # NumPy takes any negative value as the unknown size, not only -1.
        out[rng.randrange(len(out))] = -1 if rng.random() < 0.5 else -rng.randint(2, 9)
        if rng.random() < 0.1:
            out[rng.randrange(len(out))] = -rng.randint(1, 3)  # maybe a second unknown: refused
    if rng.random() < 0.05:
        out[rng.randrange(len(out))] += 1
    return out


def gen_axes(rng, ndim):
    if rng.random() < 0.15:
        return []
    axes = list(range(ndim))
    rng.shuffle(axes)
    axes = [a - ndim if rng.random() < 0.3 else a for a in axes]
    r = rng.random()
    if r < 0.04 and axes:
        axes[0] = axes[-1]  # repeated (or the same when ndim == 1)
    elif r < 0.08:
        axes.append(0)  # too many
    elif r < 0.12 and axes:
        axes[rng.randrange(len(axes))] = rng.choice([ndim, -ndim - 1])  # out of range
    return axes


def generate(rng, op):
    if op == "make_order":
        itemsize, shape, _ = gen_base(rng)
        if rng.random() < 0.03 and shape:
            shape[rng.randrange(len(shape))] = -rng.randint(1, 3)
        return Case("make", gen_order(rng), itemsize, shape, [])
    if op == "make_strides":
        itemsize, shape, strides = gen_base(rng, dense_ok=False)
        # With explicit strides the order letter is not used (Numba's
        # device_array accepts C, F and A there, and ignores it).
        return Case("make", rng.choice("CFA"), itemsize, shape, strides)
    itemsize, shape, strides = gen_base(rng)
    if op == "index":
        toks = gen_index(rng, shape)
        return Case("index", "C", itemsize, shape, strides, " ".join([str(len(toks))] + toks))
    if op == "reshape":
        ns = gen_new_shape(rng, int(np.prod(shape)) if shape else 1)
        return Case("reshape", gen_order(rng), itemsize, shape, strides, " ".join(map(str, [len(ns)] + ns)))
    if op == "ravel":
        return Case("ravel", gen_order(rng), itemsize, shape, strides)
    if op == "like":
        return Case("like", gen_order(rng, "K"), itemsize, shape, strides)
    if op == "transpose":
        axes = gen_axes(rng, len(shape))
        return Case("transpose", "C", itemsize, shape, strides, " ".join(map(str, [len(axes)] + axes)))
    raise ValueError(op)


# ---- NumPy's answers ------------------------------------------------------------


class Raised:
    def __init__(self, exc):
        self.exc = exc

    def statuses(self):
        if isinstance(self.exc, np.exceptions.AxisError) or isinstance(self.exc, IndexError):
            return {"ERROR_INDEX_OUT_OF_RANGE"}
        if isinstance(self.exc, ValueError) and "copy" in str(self.exc):
            return {"ERROR_REQUIRES_COPY"}
        if isinstance(self.exc, (ValueError, TypeError)):
            return VALUE_STATUSES
        raise self.exc


class Copied:
    """NumPy returned a copy: gpuhal must say ERROR_REQUIRES_COPY."""


def layout_of(arr, buf):
    start = buf.__array_interface__["data"][0]
    out = {
        "shape": list(arr.shape),
        "strides": list(arr.strides),
        "offset": arr.__array_interface__["data"][0] - start,
        "c": bool(arr.flags.c_contiguous),
        "f": bool(arr.flags.f_contiguous),
    }
    if arr.size:
        low, high = np.lib.array_utils.byte_bounds(arr)
        out["span"] = (low - start, high - start)
    return out


def numpy_base(case, base_offset):
    dtype = DTYPES[case.itemsize]
    shape = case.shape
    strides = case.strides or list(np.empty(shape, dtype=dtype).strides)
    reach = sum(abs(s) * (d - 1) for s, d in zip(strides, shape) if d > 0)
    buf = np.zeros(base_offset + reach + case.itemsize + 64, dtype=np.uint8)
    base = np.ndarray(shape, dtype=dtype, buffer=buf, offset=base_offset, strides=strides)
    return base, buf


def numpy_answer(case, base_offset):
    dtype = DTYPES[case.itemsize]
    try:
        if case.op == "make" and not case.strides:
            arr = np.empty(case.shape, dtype=dtype, order=case.order)
            return layout_of(arr, arr)  # dense: element 0 at offset 0, the span is nbytes
        base, buf = numpy_base(case, base_offset)
        if case.op == "make":
            return layout_of(base, buf)
        if case.op == "index":
            idx = []
            for tok in case.args.split()[1:]:
                if tok[0] == "i":
                    idx.append(int(tok[1:]))
                else:
                    a, b, c = tok[1:].split(":")
                    idx.append(slice(None if a == "_" else int(a), None if b == "_" else int(b), int(c)))
            return layout_of(base[tuple(idx) + (Ellipsis,)], buf)
        if case.op == "reshape":
            ns = [int(x) for x in case.args.split()[1:]]
            return layout_of(np.reshape(base, ns, order=case.order, copy=False), buf)
        if case.op == "ravel":
            r = base.ravel(order=case.order)
            return Copied() if r.flags.owndata else layout_of(r, buf)
        if case.op == "like":
            r = np.empty_like(base, order=case.order)
            out = layout_of(r, r)
            out.pop("span", None)  # a new allocation: where gpuhal's element 0 lies is its own
            return dict(out, offset=0)
        if case.op == "transpose":
            axes = [int(x) for x in case.args.split()[1:]]
            return layout_of(base.transpose(axes) if axes else base.transpose(), buf)
    except (ValueError, TypeError, IndexError) as e:
        return Raised(e)
    raise ValueError(case.op)


# ---- comparing ------------------------------------------------------------------


def parse_answer(text):
    tok = text.split()
    if tok[0] == "err":
        out = {"status": tok[2], "message": " ".join(tok[3:])}
        if tok[1] != "-":
            out["base_offset"] = int(tok[1])
        return out
    base_offset, ndim = int(tok[1]), int(tok[2])
    v = [int(x) for x in tok[3:]]
    return {
        "base_offset": base_offset,
        "shape": v[:ndim],
        "strides": v[ndim : 2 * ndim],
        "offset": v[2 * ndim],
        "c": bool(v[2 * ndim + 1]),
        "f": bool(v[2 * ndim + 2]),
        "span": (v[2 * ndim + 3], v[2 * ndim + 4]),
    }


def difference(case, ours, theirs):
    """None when they agree, else a description."""
    if isinstance(theirs, Raised):
        want = theirs.statuses()
        if "status" in ours and ours["status"] in want:
            return None
        return f"NumPy raised {type(theirs.exc).__name__}: {theirs.exc}; gpuhal: {ours}"
    if isinstance(theirs, Copied):
        if ours.get("status") == "ERROR_REQUIRES_COPY":
            return None
        return f"NumPy copies; gpuhal: {ours}"
    if "status" in ours:
        return f"NumPy: {theirs}; gpuhal raised {ours['status']} {ours['message']}"
    for key in ("shape", "strides", "offset", "c", "f", "span"):
        if key in theirs and ours[key] != theirs[key]:
            return f"{key}: NumPy {theirs[key]}, gpuhal {ours[key]} (NumPy {theirs}; gpuhal {ours})"
    return None


def excused(case, ours, theirs):
    """The name of the deliberate difference that explains this case, if any."""
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("oracle")
    ap.add_argument("--cases", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=20261124)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    proc = subprocess.Popen([args.oracle], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    ops = ["make_order", "make_strides", "index", "reshape", "ravel", "like", "transpose"]
    failures, excuses, tallies = [], {}, {}
    for op in ops:
        tally = tallies.setdefault(op, {"cases": 0, "views": 0, "errors": 0, "copies": 0})
        for _ in range(args.cases):
            case = generate(rng, op)
            proc.stdin.write(case.line() + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                sys.exit(f"layout oracle stopped at: {case.line()}")
            ours = parse_answer(line)
            theirs = numpy_answer(case, ours.get("base_offset", 0))
            tally["cases"] += 1
            kind = "errors" if isinstance(theirs, Raised) else "copies" if isinstance(theirs, Copied) else "views"
            tally[kind] += 1
            diff = difference(case, ours, theirs)
            if diff is None:
                continue
            name = excused(case, ours, theirs)
            if name:
                excuses[name] = excuses.get(name, 0) + 1
                continue
            failures.append(f"{op}: `{case.line()}`: {diff}")
    proc.stdin.close()
    proc.wait()
    print(f"NumPy {np.__version__}, seed {args.seed}")
    for op in ops:
        t = tallies[op]
        print(f"  {op:13} {t['cases']} cases: {t['views']} views, {t['copies']} copies, {t['errors']} errors")
    for name, count in sorted(excuses.items()):
        print(f"  deliberate difference '{name}': {count} cases ({DELIBERATE[name]})")
    if failures:
        per_op = {}
        for f in failures:
            per_op[f.split(":")[0]] = per_op.get(f.split(":")[0], 0) + 1
        print(f"{len(failures)} differences from NumPy ({per_op}); the first ones:")
        for f in failures[:25]:
            print("  " + f)
        return 1
    print("no unexplained difference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
