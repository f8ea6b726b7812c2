"""Read/write forms of shared state for the DPOR audit (tests/core/test_dpor_form_audit.py).

Each FORM builds ``(reset, get, put)``: closures that read and write one shared int
through one mechanism (an attribute, an item, a C callable, an alias ...), all in
traced code, this file. Each CUSTOM program gives its own two actors:
``(reset, actor A's operations, actor B's operations, check(ctx_a, ctx_b))``.
Taken from the session-14 soundness audit's table (our own harness), less the
forms that need an untraced library installed next to it.
"""

# ruff: noqa: E741, B007, B009, B010, B018, B905, E501, F821, RUF015, UP033
# (the forms are spelled as the audit wrote them: a fix would change the form under test)

from __future__ import annotations

import array
import collections
import copy
import functools
import itertools
import logging
import operator
import os
import sys
import threading
import types
import weakref

FORMS = {}
CUSTOM = {}


def form(name):
    def deco(fn):
        FORMS[name] = fn
        return fn

    return deco


def custom(name):
    def deco(fn):
        CUSTOM[name] = fn
        return fn

    return deco


class Box:
    pass


# ---------------------------------------------------------------- controls
@form("control: instance attr")
def _():
    o = Box()

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        o.x = v

    return reset, get, put


@form("control: dict item")
def _():
    d = {}

    def reset():
        d["k"] = 0

    def get():
        return d["k"]

    def put(v):
        d["k"] = v

    return reset, get, put


# ---------------------------------------------------------------- classes
@form("class attr C.x")
def _():
    class C:
        x = 0

    def reset():
        C.x = 0

    def get():
        return C.x

    def put(v):
        C.x = v

    return reset, get, put


@form("class attr read via instance o.x, write C.x")
def _():
    class C:
        x = 0

    o = C()

    def reset():
        C.x = 0

    def get():
        return o.x

    def put(v):
        C.x = v

    return reset, get, put


@form("class attr read via subclass Sub.x, write Base.x")
def _():
    class Base:
        x = 0

    class Sub(Base):
        pass

    def reset():
        Base.x = 0

    def get():
        return Sub.x

    def put(v):
        Base.x = v

    return reset, get, put


@form("type(self).x")
def _():
    class C:
        x = 0

        def get(self):
            return type(self).x

        def put(self, v):
            type(self).x = v

    o = C()

    def reset():
        C.x = 0

    return reset, o.get, o.put


@form("classmethod cls.x")
def _():
    class C:
        x = 0

        @classmethod
        def get(cls):
            return cls.x

        @classmethod
        def put(cls, v):
            cls.x = v

    def reset():
        C.x = 0

    return reset, C.get, C.put


@form("setattr(C,'x') / getattr(C,'x')")
def _():
    class C:
        x = 0

    def reset():
        setattr(C, "x", 0)

    def get():
        return getattr(C, "x")

    def put(v):
        setattr(C, "x", v)

    return reset, get, put


@form("C.__dict__['x'] read, C.x write")
def _():
    class C:
        x = 0

    def reset():
        C.x = 0

    def get():
        return C.__dict__["x"]

    def put(v):
        C.x = v

    return reset, get, put


@form("__slots__ attr")
def _():
    class S:
        __slots__ = ("x",)

    o = S()

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        o.x = v

    return reset, get, put


@form("property over _x")
def _():
    class P:
        def __init__(self):
            self._x = 0

        @property
        def x(self):
            return self._x

        @x.setter
        def x(self, v):
            self._x = v

    o = P()

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        o.x = v

    return reset, get, put


@form("data descriptor storing in its own dict")
def _():
    class Field:
        def __init__(self):
            self.values = {}

        def __get__(self, inst, owner):
            return self.values.get(id(inst), 0)

        def __set__(self, inst, v):
            self.values[id(inst)] = v

    class C:
        x = Field()

    o = C()

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        o.x = v

    return reset, get, put


@form("__getattr__ proxy read, target write")
def _():
    class Proxy:
        def __init__(self, t):
            self._t = t

        def __getattr__(self, name):
            return getattr(self._t, name)

    t = Box()
    p = Proxy(t)

    def reset():
        t.x = 0

    def get():
        return p.x

    def put(v):
        t.x = v

    return reset, get, put


@form("o.__dict__ alias item write, o.x read")
def _():
    o = Box()
    dd = o.__dict__

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        dd["x"] = v

    return reset, get, put


@form("o.__dict__.update(x=v) write, o.x read")
def _():
    o = Box()

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        o.__dict__.update(x=v)

    return reset, get, put


@form("vars(o).get('x') read, o.x write")
def _():
    o = Box()

    def reset():
        o.x = 0

    def get():
        return vars(o).get("x")

    def put(v):
        o.x = v

    return reset, get, put


@form("SimpleNamespace attr")
def _():
    o = types.SimpleNamespace(x=0)

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        o.x = v

    return reset, get, put


@form("weakref.proxy write, o.x read")
def _():
    o = Box()
    p = weakref.proxy(o)

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        p.x = v

    return reset, get, put


@form("weakref.proxy read, o.x write")
def _():
    o = Box()
    p = weakref.proxy(o)

    def reset():
        o.x = 0

    def get():
        return p.x

    def put(v):
        o.x = v

    return reset, get, put


@form("functools.partial(setattr,o,'x') / partial(getattr)")
def _():
    o = Box()
    w = functools.partial(setattr, o, "x")
    r = functools.partial(getattr, o, "x")

    def reset():
        o.x = 0

    def get():
        return r()

    def put(v):
        w(v)

    return reset, get, put


@form("operator.attrgetter read, o.x write")
def _():
    o = Box()
    g = operator.attrgetter("x")

    def reset():
        o.x = 0

    def get():
        return g(o)

    def put(v):
        o.x = v

    return reset, get, put


@form("operator.methodcaller('update') write, d['k'] read")
def _():
    d = {}

    def reset():
        d["k"] = 0

    def get():
        return d["k"]

    def put(v):
        operator.methodcaller("update", k=v)(d)

    return reset, get, put


@form("operator.itemgetter read, d['k'] write")
def _():
    d = {}
    g = operator.itemgetter("k")

    def reset():
        d["k"] = 0

    def get():
        return g(d)

    def put(v):
        d["k"] = v

    return reset, get, put


@form("operator.setitem write")
def _():
    d = {}

    def reset():
        d["k"] = 0

    def get():
        return d["k"]

    def put(v):
        operator.setitem(d, "k", v)

    return reset, get, put


@form("functools.partial(d.update) write")
def _():
    d = {}
    upd = functools.partial(d.update)

    def reset():
        d["k"] = 0

    def get():
        return d["k"]

    def put(v):
        upd(k=v)

    return reset, get, put


@form("list(map(l.append,..)) write, len(l) read")
def _():
    l = []

    def reset():
        l.clear()

    def get():
        return len(l)

    def put(v):
        list(map(l.append, range(v)))

    return reset, get, put


@form("map(setattr) consumed by list")
def _():
    o = Box()

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        list(map(setattr, [o], ["x"], [v]))

    return reset, get, put


# ---------------------------------------------------------------- globals/closures
@form("module global via global stmt (this module)")
def _():
    def reset():
        global G1
        G1 = 0

    def get():
        return G1

    def put(v):
        global G1
        G1 = v

    return reset, get, put


@form("globals()['G2'] write, G2 read")
def _():
    def reset():
        globals()["G2"] = 0

    def get():
        return G2

    def put(v):
        globals()["G2"] = v

    return reset, get, put


@form("exec/eval on a shared dict")
def _():
    ns = {}

    def reset():
        ns["k"] = 0

    def get():
        return eval("k", ns)

    def put(v):
        exec(f"k = {v}", ns)

    return reset, get, put


@form("nonlocal cell")
def _():
    n = 0

    def reset():
        nonlocal n
        n = 0

    def get():
        return n

    def put(v):
        nonlocal n
        n = v

    return reset, get, put


@form("cell_contents write, nonlocal read")
def _():
    n = 0

    def get():
        return n

    cell = get.__closure__[0]

    def reset():
        cell.cell_contents = 0

    def put(v):
        cell.cell_contents = v

    return reset, get, put


@form("function attribute f.x")
def _():
    def f():
        pass

    def reset():
        f.x = 0

    def get():
        return f.x

    def put(v):
        f.x = v

    return reset, get, put


@form("sys.modules entry item")
def _():
    key = "_soundaudit_slot"

    def reset():
        sys.modules[key] = 0

    def get():
        return sys.modules[key]

    def put(v):
        sys.modules[key] = v

    return reset, get, put


@form("os.environ write, os.getenv read")
def _():
    def reset():
        os.environ["SOUNDAUDIT_X"] = "0"

    def get():
        return int(os.getenv("SOUNDAUDIT_X"))

    def put(v):
        os.environ["SOUNDAUDIT_X"] = str(v)

    return reset, get, put


@form("os.environ item read/write")
def _():
    def reset():
        os.environ["SOUNDAUDIT_Y"] = "0"

    def get():
        return int(os.environ["SOUNDAUDIT_Y"])

    def put(v):
        os.environ["SOUNDAUDIT_Y"] = str(v)

    return reset, get, put


@form("logging.disable write, isEnabledFor read")
def _():
    lg = logging.getLogger("soundaudit.dis")
    lg.setLevel(logging.DEBUG)

    def reset():
        logging.disable(logging.NOTSET)

    def get():
        return 0 if lg.isEnabledFor(logging.INFO) else 1

    def put(v):
        logging.disable(logging.CRITICAL if v else logging.NOTSET)

    return reset, get, put


@form("logger parent setLevel, child getEffectiveLevel")
def _():
    parent = logging.getLogger("soundaudit.par")
    child = logging.getLogger("soundaudit.par.child")

    def reset():
        parent.setLevel(10)

    def get():
        return 1 if child.getEffectiveLevel() == 20 else 0

    def put(v):
        parent.setLevel(20 if v else 10)

    return reset, get, put


@form("functools.singledispatch register vs call")
def _():
    @functools.singledispatch
    def f(x):
        return 0

    state = {"registered": False}

    def reset():
        if state["registered"]:
            f.register(int, lambda x: 0)

    def get():
        return f(5)

    def put(v):
        state["registered"] = True
        f.register(int, lambda x, v=v: v)

    return reset, get, put


# ---------------------------------------------------------------- containers
@form("list item l[0]")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return l[0]

    def put(v):
        l[0] = v

    return reset, get, put


@form("dict(d) copy read")
def _():
    d = {}

    def reset():
        d["k"] = 0

    def get():
        return dict(d)["k"]

    def put(v):
        d["k"] = v

    return reset, get, put


@form("{**d} unpack read")
def _():
    d = {}

    def reset():
        d["k"] = 0

    def get():
        return {**d}["k"]

    def put(v):
        d["k"] = v

    return reset, get, put


@form("list(l)/tuple(l) read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return tuple(l)[0]

    def put(v):
        l[0] = v

    return reset, get, put


@form("sum(l) read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return sum(l)

    def put(v):
        l[0] = v

    return reset, get, put


@form("max(l)/sorted(l) read")
def _():
    l = [0, -1]

    def reset():
        l[0] = 0

    def get():
        return sorted(l)[-1]

    def put(v):
        l[0] = v

    return reset, get, put


@form("str.join(l) read")
def _():
    l = ["0"]

    def reset():
        l[0] = "0"

    def get():
        return int("".join(l))

    def put(v):
        l[0] = str(v)

    return reset, get, put


@form("mine.extend(shared) read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        mine = []
        mine.extend(l)
        return mine[0]

    def put(v):
        l[0] = v

    return reset, get, put


@form("[*l] unpack / a, = l read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        (a,) = l
        return a

    def put(v):
        l[0] = v

    return reset, get, put


@form("list(map(str, l)) read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return int(list(map(str, l))[0])

    def put(v):
        l[0] = v

    return reset, get, put


@form("list(filter(None, l)) read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return len(list(filter(None, l)))

    def put(v):
        l[0] = v

    return reset, get, put


@form("x in l read (contains)")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return 1 if 1 in l else 0

    def put(v):
        l[0] = v

    return reset, get, put


@form("l == other compare read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return 1 if l == [1] else 0

    def put(v):
        l[0] = v

    return reset, get, put


@form("dict keys view (made once) read")
def _():
    d = {}
    view = d.keys()

    def reset():
        d.pop("k", None)

    def get():
        return 1 if "k" in view else 0

    def put(v):
        d["k"] = v

    return reset, get, put


@form("dict items view len read")
def _():
    d = {}
    view = d.items()

    def reset():
        d.clear()

    def get():
        return len(view)

    def put(v):
        d["k"] = v

    return reset, get, put


@form("MappingProxyType read")
def _():
    d = {}
    mp = types.MappingProxyType(d)

    def reset():
        d["k"] = 0

    def get():
        return mp["k"]

    def put(v):
        d["k"] = v

    return reset, get, put


@form("ChainMap write, underlying dict read")
def _():
    d = {}
    cm = collections.ChainMap(d)

    def reset():
        d["k"] = 0

    def get():
        return d["k"]

    def put(v):
        cm["k"] = v

    return reset, get, put


@form("ChainMap read, underlying dict write")
def _():
    d = {}
    cm = collections.ChainMap({}, d)

    def reset():
        d["k"] = 0

    def get():
        return cm["k"]

    def put(v):
        d["k"] = v

    return reset, get, put


@form("UserDict write, .data read")
def _():
    ud = collections.UserDict()

    def reset():
        ud.data["k"] = 0

    def get():
        return ud.data["k"]

    def put(v):
        ud["k"] = v

    return reset, get, put


@form("defaultdict insert via dd[k], len read")
def _():
    dd = collections.defaultdict(int)

    def reset():
        dd.clear()

    def get():
        return len(dd)

    def put(v):
        for i in range(v):
            dd[i]

    return reset, get, put


@form("Counter[k] += 1")
def _():
    c = collections.Counter()

    def reset():
        c.clear()

    def get():
        return c["k"]

    def put(v):
        c["k"] = v

    return reset, get, put


@form("Counter.update write, c['k'] read")
def _():
    c = collections.Counter()

    def reset():
        c.clear()

    def get():
        return c["k"]

    def put(v):
        c.update({"k": v - c["k"]})

    return reset, get, put


@form("OrderedDict.move_to_end write, next(iter) read")
def _():
    od = collections.OrderedDict()

    def reset():
        od.clear()
        od[0] = None
        od[1] = None

    def get():
        return next(iter(od))

    def put(v):
        od.move_to_end(0)

    return reset, get, put


@form("deque.rotate write, dq[0] read")
def _():
    dq = collections.deque()

    def reset():
        dq.clear()
        dq.extend([0, 1])

    def get():
        return dq[0]

    def put(v):
        dq.rotate(1)

    return reset, get, put


@form("array.array item")
def _():
    a = array.array("i", [0])

    def reset():
        a[0] = 0

    def get():
        return a[0]

    def put(v):
        a[0] = v

    return reset, get, put


@form("bytearray item")
def _():
    b = bytearray(1)

    def reset():
        b[0] = 0

    def get():
        return b[0]

    def put(v):
        b[0] = v

    return reset, get, put


@form("memoryview write, bytearray read")
def _():
    b = bytearray(1)
    mv = memoryview(b)

    def reset():
        b[0] = 0

    def get():
        return b[0]

    def put(v):
        mv[0] = v

    return reset, get, put


@form("bytearray write, memoryview read")
def _():
    b = bytearray(1)
    mv = memoryview(b)

    def reset():
        b[0] = 0

    def get():
        return mv[0]

    def put(v):
        b[0] = v

    return reset, get, put


@form("array via memoryview write")
def _():
    a = array.array("i", [0])
    mv = memoryview(a)

    def reset():
        a[0] = 0

    def get():
        return a[0]

    def put(v):
        mv[0] = v

    return reset, get, put


@form("set |= on a local alias")
def _():
    s = set()

    def reset():
        s.clear()

    def get():
        return len(s)

    def put(v):
        t = s
        t |= set(range(v))

    return reset, get, put


@form("list += on a local alias")
def _():
    l = []

    def reset():
        l.clear()

    def get():
        return len(l)

    def put(v):
        t = l
        t += list(range(v))

    return reset, get, put


@form("dict |= on a local alias")
def _():
    d = {}

    def reset():
        d.clear()

    def get():
        return len(d)

    def put(v):
        t = d
        t |= {i: i for i in range(v)}

    return reset, get, put


@form("list *= on a local alias")
def _():
    l = [0]

    def reset():
        l[:] = [0]

    def get():
        return len(l) - 1

    def put(v):
        t = l
        t *= v + 1

    return reset, get, put


@form("del d[k] write, k in d read")
def _():
    d = {}

    def reset():
        d["k"] = 1

    def get():
        return 0 if "k" in d else 1

    def put(v):
        if v:
            del d["k"]

    return reset, get, put


@form("d.setdefault write, d.get read")
def _():
    d = {}

    def reset():
        d.clear()

    def get():
        return d.get("k", 0)

    def put(v):
        d.setdefault("k", v)

    return reset, get, put


@form("l.sort write, l[0] read")
def _():
    l = [1, 0]

    def reset():
        l[:] = [0, 1]

    def get():
        return l[0]

    def put(v):
        l.sort(reverse=bool(v))

    return reset, get, put


@form("heapq push/pop")
def _():
    import heapq

    h = []

    def reset():
        h.clear()

    def get():
        return len(h)

    def put(v):
        for i in range(v):
            heapq.heappush(h, i)

    return reset, get, put


@form("bisect.insort write, len read")
def _():
    import bisect

    l = []

    def reset():
        l.clear()

    def get():
        return len(l)

    def put(v):
        for i in range(v):
            bisect.insort(l, i)

    return reset, get, put


@form("copy.copy read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return copy.copy(l)[0]

    def put(v):
        l[0] = v

    return reset, get, put


@form("threading.local shared (one thread)")
def _():
    loc = threading.local()

    def reset():
        loc.x = 0

    def get():
        return loc.x

    def put(v):
        loc.x = v

    return reset, get, put


@form("queue.Queue put vs len(q.queue)")
def _():
    import queue

    q = queue.Queue()

    def reset():
        while not q.empty():
            q.get_nowait()

    def get():
        return len(q.queue)

    def put(v):
        for i in range(v):
            q.put(i)

    return reset, get, put


@form("random.seed write, random.random read")
def _():
    import random

    first = random.Random(1).random()

    def reset():
        random.seed(0)

    def get():
        return 1 if random.random() == first else 0

    def put(v):
        random.seed(1 if v else 0)

    return reset, get, put


@form("shared iterator: for x in it: break consumes")
def _():
    box = {}

    def reset():
        box["it"] = iter(range(10))

    def get():
        for x in box["it"]:
            return x

    def put(v):
        for x in box["it"]:
            break

    return reset, get, put


@form("shared generator: next(gen)")
def _():
    box = {}

    def gen():
        i = 0
        while True:
            yield i
            i += 1

    def reset():
        box["g"] = gen()

    def get():
        return next(box["g"])

    def put(v):
        g = box["g"]
        for _ in range(v):
            next(g)

    return reset, get, put


@form("shared generator: gen.send(None)")
def _():
    box = {}

    def gen():
        i = 0
        while True:
            yield i
            i += 1

    def reset():
        box["g"] = gen()

    def get():
        return box["g"].send(None)

    def put(v):
        for _ in range(v):
            box["g"].send(None)

    return reset, get, put


@form("shared iterator: zip(it) consumed by next")
def _():
    box = {}

    def reset():
        box["it"] = iter(range(10))

    def get():
        return next(box["it"])

    def put(v):
        next(zip(box["it"]))

    return reset, get, put


# ---------------------------------------------------------------- custom programs
@custom("lru_cache check-then-act (computed twice)")
def _():
    calls = []

    @functools.lru_cache(maxsize=None)
    def load(k):
        calls.append(k)
        return k

    def reset():
        calls.clear()
        load.cache_clear()

    def a1(c):
        load(1)

    def b1(c):
        load(1)

    def check(ca, cb):
        assert len(calls) == 1, calls

    return reset, [a1], [b1], check


@custom("functools.cache check-then-act, probed via cache_info")
def _():
    @functools.cache
    def load(k):
        return k

    def reset():
        load.cache_clear()

    def a1(c):
        load(1)

    def b1(c):
        c.misses = load.cache_info().misses

    def check(ca, cb):
        assert cb.misses == 1, cb.misses

    return reset, [a1], [b1], check


@custom("Class.count += 1 (one statement)")
def _():
    class C:
        count = 0

    def reset():
        C.count = 0

    def a1(c):
        C.count += 1

    def check(ca, cb):
        assert C.count == 2, C.count

    return reset, [a1], [a1], check


@custom("l[0] += 1 (one statement)")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def a1(c):
        l[0] += 1

    def check(ca, cb):
        assert l[0] == 2, l

    return reset, [a1], [a1], check


@custom("check-then-act: if k not in d: d[k] = new list")
def _():
    d = {}
    made = []

    def reset():
        d.clear()
        made.clear()

    def look(c):
        c.missing = "k" not in d

    def act(c):
        if c.missing:
            d["k"] = c
            made.append(c)

    def check(ca, cb):
        assert len(made) == 1, made

    return reset, [look, act], [look, act], check


@custom("dataclasses.replace read, field write")
def _():
    import dataclasses

    @dataclasses.dataclass
    class D:
        x: int = 0

    o = D()

    def reset():
        o.x = 0

    def a1(c):
        o.x = 1

    def b1(c):
        c.seen = dataclasses.replace(o).x

    def check(ca, cb):
        assert cb.seen == 1, cb.seen

    return reset, [a1], [b1], check


# ---------------------------------------------------------------- round 2: keys, subclasses
@form("dict item, key from attribute d[o.k]")
def _():
    d = {}
    o = Box()
    o.k = "k"

    def reset():
        d["k"] = 0

    def get():
        return d[o.k]

    def put(v):
        d[o.k] = v

    return reset, get, put


@form("dict item, key from call d[id(o)]")
def _():
    d = {}
    o = Box()

    def reset():
        d[id(o)] = 0

    def get():
        return d[id(o)]

    def put(v):
        d[id(o)] = v

    return reset, get, put


@form("list item, index arithmetic l[i + 1]")
def _():
    l = [0, 0]
    i = 0

    def reset():
        l[1] = 0

    def get():
        return l[i + 1]

    def put(v):
        l[i + 1] = v

    return reset, get, put


@form("list item, index from attribute l[o.i]")
def _():
    l = [0]
    o = Box()
    o.i = 0

    def reset():
        l[0] = 0

    def get():
        return l[o.i]

    def put(v):
        l[o.i] = v

    return reset, get, put


@form("self.d[self.k] (method)")
def _():
    class C:
        def __init__(self):
            self.d = {}
            self.k = "k"

        def get(self):
            return self.d[self.k]

        def put(self, v):
            self.d[self.k] = v

    o = C()

    def reset():
        o.d["k"] = 0

    return reset, o.get, o.put


@form("dict subclass item")
def _():
    class D(dict):
        pass

    d = D()

    def reset():
        d["k"] = 0

    def get():
        return d["k"]

    def put(v):
        d["k"] = v

    return reset, get, put


@form("list subclass item")
def _():
    class L(list):
        pass

    l = L([0])

    def reset():
        l[0] = 0

    def get():
        return l[0]

    def put(v):
        l[0] = v

    return reset, get, put


@form("OrderedDict item")
def _():
    d = collections.OrderedDict()

    def reset():
        d["k"] = 0

    def get():
        return d["k"]

    def put(v):
        d["k"] = v

    return reset, get, put


@form("defaultdict item (existing key)")
def _():
    d = collections.defaultdict(int)

    def reset():
        d["k"] = 0

    def get():
        return d["k"]

    def put(v):
        d["k"] = v

    return reset, get, put


@form("deque item dq[0]")
def _():
    dq = collections.deque([0])

    def reset():
        dq[0] = 0

    def get():
        return dq[0]

    def put(v):
        dq[0] = v

    return reset, get, put


@form("user __getitem__/__setitem__ class over a dict")
def _():
    class Reg:
        def __init__(self):
            self._d = {}

        def __getitem__(self, k):
            return self._d[k]

        def __setitem__(self, k, v):
            self._d[k] = v

    r = Reg()

    def reset():
        r["k"] = 0

    def get():
        return r["k"]

    def put(v):
        r["k"] = v

    return reset, get, put


@form("set add/discard, membership read")
def _():
    s = set()

    def reset():
        s.clear()

    def get():
        return 1 if "k" in s else 0

    def put(v):
        if v:
            s.add("k")

    return reset, get, put


@form("list slice assign l[:] = / l[:] read")
def _():
    l = [0]

    def reset():
        l[:] = [0]

    def get():
        return l[:][0]

    def put(v):
        l[:] = [v]

    return reset, get, put


@form("del o.x / hasattr read")
def _():
    o = Box()

    def reset():
        o.x = 1

    def get():
        return 0 if hasattr(o, "x") else 1

    def put(v):
        if v:
            del o.x

    return reset, get, put


@form("tuple of lists: t[0][0]")
def _():
    t = ([0],)

    def reset():
        t[0][0] = 0

    def get():
        return t[0][0]

    def put(v):
        t[0][0] = v

    return reset, get, put


@form("nested dict d['a']['b']")
def _():
    d = {"a": {}}

    def reset():
        d["a"]["b"] = 0

    def get():
        return d["a"]["b"]

    def put(v):
        d["a"]["b"] = v

    return reset, get, put


@form("getattr(o, name) with a computed name")
def _():
    o = Box()
    names = ["x"]

    def reset():
        o.x = 0

    def get():
        return getattr(o, names[0])

    def put(v):
        setattr(o, names[0], v)

    return reset, get, put


@form("str key built by f-string d[f'k{i}']")
def _():
    d = {}
    i = 1

    def reset():
        d["k1"] = 0

    def get():
        return d[f"k{i}"]

    def put(v):
        d[f"k{i}"] = v

    return reset, get, put


# ---------------------------------------------------------------- round 3: bases that are not plain loads
@form("base from a call: state().x")
def _():
    o = Box()

    def state():
        return o

    def reset():
        o.x = 0

    def get():
        return state().x

    def put(v):
        state().x = v

    return reset, get, put


@form("base from a call: table()['k']")
def _():
    d = {}

    def table():
        return d

    def reset():
        d["k"] = 0

    def get():
        return table()["k"]

    def put(v):
        table()["k"] = v

    return reset, get, put


@form("base from a subscript with computed index: objs[i+0].x")
def _():
    o = Box()
    objs = [o]
    i = 0

    def reset():
        o.x = 0

    def get():
        return objs[i + 0].x

    def put(v):
        objs[i + 0].x = v

    return reset, get, put


@form("base from `or`: (a or b).x")
def _():
    o = Box()
    none = None

    def reset():
        o.x = 0

    def get():
        return (none or o).x

    def put(v):
        (none or o).x = v

    return reset, get, put


@form("base from conditional expr: (o if flag else p).x")
def _():
    o = Box()
    flag = True

    def reset():
        o.x = 0

    def get():
        return (o if flag else None).x

    def put(v):
        (o if flag else None).x = v

    return reset, get, put


@form("walrus / chained: o.child.x")
def _():
    o = Box()
    o.child = Box()

    def reset():
        o.child.x = 0

    def get():
        return o.child.x

    def put(v):
        o.child.x = v

    return reset, get, put


@form("base via method returning self: o.me().x")
def _():
    class M:
        def me(self):
            return self

    o = M()

    def reset():
        o.x = 0

    def get():
        return o.me().x

    def put(v):
        o.me().x = v

    return reset, get, put


@form("list comprehension read [v for v in l]")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return [v for v in l][0]

    def put(v):
        l[0] = v

    return reset, get, put


@form("augmented o.x += via put only (o.x += 1 path)")
def _():
    o = Box()

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        o.x += v - o.x

    return reset, get, put


# ---------------------------------------------------------------- round 4: iteration helpers, formatting
@form("for i, x in enumerate(l) read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        for i, x in enumerate(l):
            return x

    def put(v):
        l[0] = v

    return reset, get, put


@form("for a, b in zip(l, l) read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        for a, b in zip(l, l):
            return a

    def put(v):
        l[0] = v

    return reset, get, put


@form("for x in reversed(l) read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        for x in reversed(l):
            return x

    def put(v):
        l[0] = v

    return reset, get, put


@form("for x in itertools.chain(l) read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        for x in itertools.chain(l):
            return x

    def put(v):
        l[0] = v

    return reset, get, put


@form("generator expression sum(x for x in l) read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return sum(x for x in l)

    def put(v):
        l[0] = v

    return reset, get, put


@form("repr(l) read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return 1 if repr(l) == "[1]" else 0

    def put(v):
        l[0] = v

    return reset, get, put


@form("f-string f'{l}' read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return 1 if f"{l}" == "[1]" else 0

    def put(v):
        l[0] = v

    return reset, get, put


@form("any(l) / max(l) read")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return max(l)

    def put(v):
        l[0] = v

    return reset, get, put


@form("o.__class__ swap, isinstance read")
def _():
    class A:
        pass

    class B:
        pass

    o = A()

    def reset():
        o.__class__ = A

    def get():
        return 1 if isinstance(o, B) else 0

    def put(v):
        o.__class__ = B if v else A

    return reset, get, put


@form("del o.x, getattr(o,'x',None) read")
def _():
    o = Box()

    def reset():
        o.x = 1

    def get():
        return 1 if getattr(o, "x", None) is None else 0

    def put(v):
        if v:
            del o.x

    return reset, get, put


@form("o.x = None write, hasattr read (no del)")
def _():
    class H:
        pass

    o = H()

    def reset():
        if "x" in o.__dict__:
            del o.__dict__["x"]

    def get():
        return 1 if hasattr(o, "x") else 0

    def put(v):
        o.x = v

    return reset, get, put


@form("o.__dict__.setdefault write, o.x read")
def _():
    o = Box()

    def reset():
        o.__dict__.pop("x", None)

    def get():
        return getattr(o, "x", 0)

    def put(v):
        o.__dict__.setdefault("x", v)

    return reset, get, put


@form("instance attr read via class-level default")
def _():
    class C:
        x = 0

    o = C()

    def reset():
        o.__dict__.pop("x", None)

    def get():
        return o.x

    def put(v):
        o.x = v

    return reset, get, put


@form("dict.get with attribute key d.get(o.k)")
def _():
    d = {}
    o = Box()
    o.k = "k"

    def reset():
        d["k"] = 0

    def get():
        return d.get(o.k)

    def put(v):
        d[o.k] = v

    return reset, get, put


# ---------------------------------------------------------------- round 5: lazy init
def _lazy(probe):
    class Conn:
        pass

    made = []
    o = Box()

    def reset():
        o.__dict__.pop("conn", None)
        made.clear()

    def look(c):
        c.missing = probe(o)

    def act(c):
        if c.missing:
            o.conn = Conn()
            made.append(1)

    def check(ca, cb):
        assert len(made) == 1, f"made {len(made)}"

    return reset, [look, act], [look, act], check


@custom("lazy init: if not hasattr(o, 'conn')")
def _():
    return _lazy(lambda o: not hasattr(o, "conn"))


@custom("lazy init: if getattr(o, 'conn', None) is None")
def _():
    return _lazy(lambda o: getattr(o, "conn", None) is None)


@custom("lazy init: try o.conn except AttributeError")
def _():
    def probe(o):
        try:
            o.conn
            return False
        except AttributeError:
            return True

    return _lazy(probe)


@custom("lazy init: 'conn' not in o.__dict__")
def _():
    return _lazy(lambda o: "conn" not in o.__dict__)


@custom("lazy init: o.conn is None (attr preset)")
def _():
    reset0, a, b, check = _lazy(lambda o: o.conn is None)

    def reset():
        reset0()
        a[0].__globals__

    return reset0, a, b, check


# ---------------------------------------------------------------- round 6: C extension objects
@form("ctypes c_int .value")
def _():
    import ctypes

    c = ctypes.c_int(0)

    def reset():
        c.value = 0

    def get():
        return c.value

    def put(v):
        c.value = v

    return reset, get, put


@form("io.StringIO write / getvalue")
def _():
    import io

    buf = io.StringIO()

    def reset():
        buf.seek(0)
        buf.truncate()

    def get():
        return len(buf.getvalue())

    def put(v):
        buf.write("x" * v)

    return reset, get, put


@form("WeakValueDictionary item")
def _():
    class V:
        def __init__(self, n):
            self.n = n

    keep = [V(0), V(1), V(2), V(3)]
    wd = weakref.WeakValueDictionary()

    def reset():
        wd["k"] = keep[0]

    def get():
        return wd["k"].n

    def put(v):
        wd["k"] = keep[v]

    return reset, get, put


@form("str.format_map(d) read")
def _():
    d = {}

    def reset():
        d["k"] = 0

    def get():
        return int("{k}".format_map(d))

    def put(v):
        d["k"] = v

    return reset, get, put


@form("decimal context prec")
def _():
    import decimal

    ctx = decimal.Context(prec=5)

    def reset():
        ctx.prec = 5

    def get():
        return ctx.prec - 5

    def put(v):
        ctx.prec = 5 + v

    return reset, get, put


@custom("cached_property computed twice")
def _():
    made = []

    class C:
        @functools.cached_property
        def conn(self):
            made.append(1)
            return object()

    box = {}

    def reset():
        box["o"] = C()
        made.clear()

    def a1(c):
        box["o"].conn

    def check(ca, cb):
        assert len(made) == 1, made

    return reset, [a1], [a1], check


# ---------------------------------------------------------------- session 15: unnamed callables
@form("make_setter()(v): a C callable made by a Python function")
def _():
    o = Box()

    def make_setter():
        return functools.partial(setattr, o, "x")

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        make_setter()(v)

    return reset, get, put


@form("setter(*args): packed arguments")
def _():
    o = Box()
    setter = functools.partial(setattr, o, "x")

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        packed = (v,)
        setter(*packed)

    return reset, get, put


@form("list(islice(get(), 1)) read, l[0] write")
def _():
    l = [0]

    def shared():
        return l

    def reset():
        l[0] = 0

    def get():
        return list(itertools.islice(shared(), 1))[0]

    def put(v):
        l[0] = v

    return reset, get, put


@form("ns = C.__dict__; ns['x'] read, C.x write")
def _():
    class C:
        x = 0

    def reset():
        C.x = 0

    def get():
        namespace = C.__dict__
        return namespace["x"]

    def put(v):
        C.x = v

    return reset, get, put


# ---------------------------------------------------------------- session 16: merged values
@form("(pa if c else pb)(v): one of two C callables")
def _():
    o = Box()
    chosen = [True]
    set_x = functools.partial(setattr, o, "x")
    set_y = functools.partial(setattr, o, "y")

    def reset():
        o.x = 0

    def get():
        return o.x

    def put(v):
        (set_x if chosen[0] else set_y)(v)

    return reset, get, put


@form("sum(l or []) read, l[0] write")
def _():
    l = [0]

    def reset():
        l[0] = 0

    def get():
        return sum(l or [])

    def put(v):
        l[0] = v

    return reset, get, put


@form("for x in (o.items if c else []) read, o.items[0] write")
def _():
    o = Box()
    o.items = [0]
    chosen = [True]

    def reset():
        o.items[0] = 0

    def get():
        total = 0
        for item in o.items if chosen[0] else []:
            total += item
        return total

    def put(v):
        o.items[0] = v

    return reset, get, put


# ---------------------------------------------------------------- session 17: callbacks mid-operation
@custom("list seen mid-sort (sort with a traced key)")
def _():
    items = [3, 1, 2]
    looked = []
    seen = []

    def rank(v):
        looked.append(v)
        return v

    def reset():
        items[:] = [3, 1, 2]
        looked.clear()
        seen.clear()

    def sort(c):
        items.sort(key=rank)

    def look(c):
        seen.append(len(items))

    def check(ca, cb):
        assert seen == [3], seen

    return reset, [sort], [look], check


@custom("x in list with a traced __eq__ while the list shifts")
def _():
    looked = []

    class Named:
        def __init__(self, name):
            self.name = name

        def __eq__(self, other):
            looked.append(0)
            return isinstance(other, Named) and other.name == self.name

        __hash__ = None

    first, wanted = Named("first"), Named("wanted")
    members = []
    seen = []

    def reset():
        members[:] = [first, wanted]
        looked.clear()
        seen.clear()

    def scan(c):
        seen.append(Named("wanted") in members)

    def drop(c):
        members.remove(first)

    def check(ca, cb):
        assert seen == [True], seen

    return reset, [scan], [drop], check


@custom("defaultdict with a traced factory, two inserts")
def _():
    made = []

    def bucket():
        made.append(1)
        return []

    table = collections.defaultdict(bucket)

    def reset():
        table.clear()
        made.clear()

    def add(c):
        table["k"].append(1)

    def check(ca, cb):
        assert len(table["k"]) == 2, dict(table)

    return reset, [add], [add], check
