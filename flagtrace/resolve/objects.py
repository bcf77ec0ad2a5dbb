"""Objects: evaluating an expression, attributes of modules, classes and
instances (fields stored anywhere in the program), what calls return, and what
flows through containers and iteration."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from flagtrace.generators import ITER_BUILTINS
from flagtrace.model import (
    AttrExpr,
    CallExpr,
    CallKind,
    CallSite,
    ConstExpr,
    ContainerExpr,
    ContainerKind,
    DecoratorKind,
    Expr,
    FunctionRefExpr,
    NameExpr,
    OpaqueExpr,
    ParamKind,
    ScopeKind,
    SubscriptExpr,
    SuperExpr,
)
from flagtrace.resolve.program import Stored
from flagtrace.resolve.state import STATIC, STORES, TAINTED, FieldStore, ResolverBase
from flagtrace.resolve.values import (
    ANY_VALUE,
    ANYTHING,
    BUILTIN,
    CLASS,
    CONTAINER,
    EMPTY,
    EXTERNAL,
    FUNCTION,
    GENERATOR,
    INSTANCE,
    MODULE,
    SUPER,
    WIDE,
    ElementsExpr,
    Same,
    Value,
    Values,
    key_text,
    library_attribute,
    looks_like_class,
    ordered,
)
from flagtrace.versions import ENTRY

_PROPERTIES = frozenset({DecoratorKind.PROPERTY, DecoratorKind.PROPERTY_SETTER})
#: builtins that return their first argument when used as decorators
PASSTHROUGH_BUILTINS = frozenset({"staticmethod", "classmethod", "property"})
#: library functions whose result is an instance of a known library class.
#:
#: Why: ``logger = logging.getLogger(__name__)`` is in most modules of every
#: package, and a library function's result is otherwise unknown: each
#: ``logger.info(...)`` was dispatched by name to every analysed method called
#: ``info`` (1,616 such calls on SGLang 0.5.9, and on torch ``log.exception``
#: reached a compiler class's ``exception``). A ``logging.Logger`` is library
#: code; an analysed subclass of it still gets its methods (``external_dispatch``).
LIBRARY_RESULTS = {
    "logging.getLogger": "logging.Logger",
    "logging.getLoggerClass": "logging.Logger",
}
#: methods of a dict (or list) that return what it holds under their first argument
#: (``values`` returns a view that iterates as the container does)
CONTAINER_GETTERS = frozenset({"get", "pop", "setdefault", "values"})


class Objects(ResolverBase):
    def eval(self, qn: str, expr: Stored) -> Values:
        """The values ``expr`` may have when evaluated in scope ``qn``."""
        t = type(expr)
        if t is NameExpr:
            assert isinstance(expr, NameExpr)
            return self.local_value(qn, expr) if expr.at >= 0 else self.lookup(qn, expr.name)
        if t is AttrExpr:
            assert isinstance(expr, AttrExpr)
            return self._attribute_of(qn, expr)
        if t is CallExpr:
            assert isinstance(expr, CallExpr)
            return self.call_result(qn, expr.site)
        if t is FunctionRefExpr:
            assert isinstance(expr, FunctionRefExpr)
            target = self.p.scopes.get(expr.qualname)
            if target is not None and target.kind is ScopeKind.CLASS:
                return frozenset({(CLASS, expr.qualname, 0)})
            return frozenset({(FUNCTION, expr.qualname, 0)})
        if t is ContainerExpr:
            assert isinstance(expr, ContainerExpr)
            if expr.origin not in self.run_memo.containers:
                self.run_memo.containers[expr.origin] = (qn, expr)
            return frozenset({(CONTAINER, expr.origin, 0)})
        if t is SubscriptExpr:
            assert isinstance(expr, SubscriptExpr)
            if expr.at >= 0:
                stored = self.stored_item(qn, expr)
                if stored is not None:
                    return stored
            key = key_text(expr.key)
            bases = self.eval(qn, expr.base)
            containers = frozenset(b for b in bases if b[0] is CONTAINER)
            # an item of a library value or of anything is that value again
            externals = [b for b in bases if b[0] is EXTERNAL or b[0] is ANYTHING]
            items = self._items_of(containers, key, qn)
            return items.union(externals) if externals else items
        if t is OpaqueExpr:
            assert isinstance(expr, OpaqueExpr)
            out: set[Value] = set()
            for part in expr.parts:
                out |= self.eval(qn, part)
            return frozenset(out)
        if t is ElementsExpr:
            assert isinstance(expr, ElementsExpr)
            values = self.eval(qn, expr.value)
            if values and all(v[0] is CONTAINER for v in values):  # ``for x in REGISTRY``
                return self._items_of(values, None, qn)
            return frozenset(self._elements(set(values), qn))
        if t is SuperExpr:
            cls = self.p.enclosing_class(qn)
            return frozenset({(SUPER, cls, 0)}) if cls else EMPTY
        return EMPTY

    # ------------------------------------------------------------ attributes

    def _attribute_of(self, qn: str, expr: AttrExpr) -> Values:
        """``expr.base.attr`` in scope ``qn``, memoised for the round when the
        answer is complete (no lookup met itself while computing it).

        Why: a field's value is computed once per class and attribute, but the
        store expressions behind it are evaluated again for every class asked
        about. On transformers a classmethod factory's ``cls`` stands for ~800
        model classes and ``from_dict`` returns ~1,250 config classes, so
        ``self.config.encoder`` (600 values) was evaluated again inside each of
        ~740 nested field lookups of ``_attn_implementation``: 13M attribute
        lookups for one call site. Every lookup below a complete answer is
        memoised, so recomputing it later in the round gives the same answer, or a
        smaller one where the recomputation meets a lookup under way further up
        its new stack and is cut; the memo keeps the complete one. An answer that
        was cut is recomputed, as before.
        """
        memo = self.memo
        key = (qn, Same(expr))
        found = memo.attributes.get(key)
        if found is not None:
            memo.note(("attr", *key), found)
            return found

        def compute() -> Values:
            out: set[Value] = set()
            for base in ordered(self.eval(qn, expr.base)):
                out |= self.attribute(base, expr.attr, qn)
            return frozenset(out)

        return memo.solve(memo.attributes, key, ("attr", *key), compute, EMPTY)

    def attribute(self, value: Value, attr: str, from_qn: str) -> Values:
        """``value.attr``."""
        kind, name, _ = value
        if kind is MODULE:
            return self.module_attribute(name, attr)
        if kind is CLASS:
            out: set[Value] = set()
            for v in ordered(self.class_attribute(name, attr)):  # is_classmethod recurses
                if v[0] is FUNCTION and self.is_classmethod(v[1]):
                    out.add((FUNCTION, v[1], 1))
                else:
                    out.add(v)
            return frozenset(out)
        if kind is INSTANCE:
            if attr == "__class__":  # the class of the instance: this one or a subclass
                return self.class_and_subclasses(name)
            return self.instance_attribute(name, attr)
        if kind is SUPER:
            out = set()
            for alternative in self.alternative_bases(name):
                out |= {
                    (FUNCTION, v[1], 1)
                    if v[0] is FUNCTION and not self.is_staticmethod(v[1])
                    else v
                    for v in ordered(self.class_attribute(alternative, attr))
                }
            if out:
                return frozenset(out)
            mro = self.mro(name)
            for cls in mro[1:]:
                members = self.own_member(cls, attr)
                if members:
                    out |= {
                        (FUNCTION, v[1], 1)
                        if v[0] is FUNCTION and not self.is_staticmethod(v[1])
                        else v
                        for v in ordered(members)
                    }
                    break
            else:
                for ext in self.run_memo.external_bases.get(name, ()):
                    out.add((EXTERNAL, f"{ext}.{attr}", 0))
                    break
            return frozenset(out)
        if kind is EXTERNAL:
            return library_attribute(name, attr)
        if kind is ANYTHING:
            return WIDE
        return EMPTY

    def instance_attribute(self, cls: str, attr: str) -> Values:
        """``obj.attr`` for an instance of ``cls``: what any code stores to that
        field of such instances, class members (methods bound, properties as
        what they return), annotations, or the library base's attribute."""
        key = (cls, attr)
        found = self.memo.fields.get(key)
        if found is not None:
            self.memo.note(("field", cls, attr), found)
            return found
        return self.memo.solve(
            self.memo.fields,
            key,
            ("field", cls, attr),
            lambda: self._instance_attribute(cls, attr),
            EMPTY,
        )

    def _instance_attribute(self, cls: str, attr: str) -> Values:
        out: set[Value] = set()
        mro = self.mro(cls)
        for scope_qn, value, ann in self._field_stores(mro, attr):
            out |= self.eval(scope_qn, value)
            if ann:
                out |= self.annotation_values(scope_qn, ann)
        for v in ordered(self.class_attribute(cls, attr)):
            if v[0] is FUNCTION:
                kinds = self.decorator_kinds(v[1])
                if DecoratorKind.STATICMETHOD in kinds:
                    out.add(v)
                elif kinds & _PROPERTIES:
                    out |= self.returns(v[1])
                else:
                    out.add((FUNCTION, v[1], 1))
            else:
                out.add(v)
        for owner in mro:
            for ann in self.p.annotations.get((owner, attr), ()):
                out |= self.annotation_values(owner, ann)
        # a field none of ours binds: the library base's attribute
        external = self.run_memo.external_bases.get(cls, ())
        if external:
            self.memo.if_empty(
                ("field", cls, attr), out, frozenset({(EXTERNAL, f"{external[0]}.{attr}", 0)})
            )
        return frozenset(out)

    def _field_stores(self, mro: tuple[str, ...], attr: str) -> list[FieldStore]:
        """The stores ``base.attr = value`` whose base holds an instance of a
        class in ``mro``, each once."""
        by_class = self._fields_by_class(attr)
        if by_class is None:  # being built further up the stack: scan
            mro_set = set(mro)
            return [
                (scope_qn, value, ann)
                for scope_qn, base, value, ann in self.p.field_assigns.get(attr, ())
                if any(
                    b[0] is INSTANCE and b[1] in mro_set for b in self._field_base(scope_qn, base)
                )
            ]
        seen: set[int] = set()
        stores = []
        for owner in mro:
            for store in by_class.get(owner, ()):
                if id(store) not in seen:
                    seen.add(id(store))
                    stores.append(store)
        return stores

    def _fields_by_class(self, attr: str) -> dict[str, list[FieldStore]] | None:
        """The stores ``base.attr = value`` by the class of the instances ``base``
        holds, built once per round and attribute (the scan over every store of
        the attribute, for every class asked about, dominated resolution); None
        while it is being built (a base that reads the same attribute)."""
        memo = self.memo
        index = memo.fields_by_class.get(attr)
        busy = ("fields by class", attr)
        if index is not None:
            memo.note(busy, index)
            return index
        if busy in memo.open:
            memo.taint()
            return None

        def compute() -> dict[str, list[FieldStore]]:
            index: dict[str, list[FieldStore]] = defaultdict(list)
            for scope_qn, base, value, ann in self.p.field_assigns.get(attr, ()):
                store = (scope_qn, value, ann)
                classes = {b[1] for b in self._field_base(scope_qn, base) if b[0] is INSTANCE}
                for cls in sorted(classes):
                    index[cls].append(store)
            return index

        nothing: dict[str, list[FieldStore]] = {}
        return memo.solve(memo.fields_by_class, attr, busy, compute, nothing)

    def _field_base(self, scope_qn: str, base: Expr) -> Values:
        key = (scope_qn, Same(base))
        found = self.memo.field_bases.get(key)
        if found is not None:
            self.memo.note(("field base", *key), found)
            return found
        return self.memo.solve(
            self.memo.field_bases,
            key,
            ("field base", *key),
            lambda: self.eval(scope_qn, base),
            EMPTY,
        )

    # ------------------------------------------------------------ calls

    def returns(self, qn: str) -> Values:
        """What calling function ``qn`` returns (a generator function: its generator)."""
        found = self.memo.returns.get(qn)
        if found is not None:
            self.memo.note(("ret", qn), found)
            return found
        return self.memo.solve(self.memo.returns, qn, ("ret", qn), lambda: self._returns(qn), EMPTY)

    def _returns(self, qn: str) -> Values:
        out: set[Value] = set()
        scope = self.p.scopes.get(qn)
        if scope is not None:
            if scope.is_generator:
                out.add((GENERATOR, qn, 0))
            else:
                for r in scope.returns:
                    out |= self.eval(qn, r)
            if scope.returns_annotation and scope.parent is not None:
                out |= self.annotation_values(scope.parent, scope.returns_annotation)
        return frozenset(out)

    def passthrough(self, fn: str) -> tuple[frozenset[str], tuple[Stored, ...]] | None:
        """The parameters ``fn`` returns unchanged (``return fun`` where only the
        parameter's own binding reaches), and its other return expressions; None
        when it returns no parameter so, or is a generator. For the run: it
        depends on the function's code only."""
        memo = self.run_memo.passthrough
        if fn in memo:
            return memo[fn]
        found: tuple[frozenset[str], tuple[Stored, ...]] | None = None
        scope = self.p.scopes.get(fn)
        if scope is not None and not scope.is_generator:
            plain = {
                p.name
                for p in scope.params
                if p.kind in (ParamKind.POSITIONAL, ParamKind.KEYWORD_ONLY)
            }
            params: set[str] = set()
            others: list[Stored] = []
            for r in scope.returns:
                if type(r) is NameExpr and r.name in plain and self._unchanged(fn, r):
                    params.add(r.name)
                else:
                    others.append(r)
            if params:
                found = (frozenset(params), tuple(others))
        memo[fn] = found
        return found

    def _unchanged(self, fn: str, read: NameExpr) -> bool:
        """Does the read of parameter ``read.name`` in ``fn`` see only what the
        caller passed? Its own binding reaches it alone, or (a table entry of
        None: the read is flow-insensitive) nothing in ``fn`` or a scope nested
        in it binds the name again (an assignment, a loop or ``with`` target,
        an import, a ``nonlocal`` store)."""
        scope = self.p.scopes[fn]
        if not 0 <= read.at < len(scope.reaching):
            return False
        reach = scope.reaching[read.at]
        if reach is not None:
            return reach == (ENTRY,)
        if self.p.imports.get((fn, read.name)):
            return False
        nested = [fn]
        while nested:  # fn and every scope nested in it
            qn = nested.pop()
            if self.p.assigns.get((qn, read.name)):
                return False
            inner = self.p.scopes.get(qn)
            if inner is not None:
                nested.extend(inner.children)
        return True

    def _returns_at(self, qn: str, site: CallSite, fn: str, bound: int) -> Values:
        """What calling ``fn`` at ``site`` (in scope ``qn``) returns: ``returns(fn)``,
        except that a parameter ``fn`` returns unchanged is what this site passes,
        not every argument any site passed. Why: a decorator such as
        ``def inner_fn(fun): ...; return fun`` made every class it decorated
        stand for up to 48 others (``MAX_VALUES``), and each call of one of them
        reached all of their ``__init__``s. A parameter the site does not pass
        (its default, ``*args``) and bound methods keep the general answer."""
        passthrough = None if bound else self.passthrough(fn)
        if passthrough is None:
            return self.returns(fn)
        params, others = passthrough
        arg_values = [self.eval(qn, arg.value) for arg in site.args]
        passed: dict[str, set[Value]] = {}
        for (_, name), values in self.bind_arguments(fn, site, None, arg_values):
            passed.setdefault(name, set()).update(values)
        if not params <= passed.keys():
            return self.returns(fn)
        out: set[Value] = set()
        for name in sorted(params):
            out |= passed[name]
        for r in others:
            out |= self.eval(fn, r)
        scope = self.p.scopes[fn]
        if scope.returns_annotation and scope.parent is not None:
            out |= self.annotation_values(scope.parent, scope.returns_annotation)
        return frozenset(out)

    def call_result(self, qn: str, index: int) -> Values:
        """What call site ``index`` of scope ``qn`` returns."""
        key = (qn, index)
        found = self.memo.call_results.get(key)
        if found is not None:
            self.memo.note(("call", qn, index), found)
            return found
        return self.memo.solve(
            self.memo.call_results,
            key,
            ("call", qn, index),
            lambda: self._call_result(qn, index),
            EMPTY,
        )

    def _call_result(self, qn: str, index: int) -> Values:
        out: set[Value] = set()
        site = self.p.scopes[qn].calls[index]
        targets, _ = self.callee_values(qn, index, site)
        decorator = site.kind is CallKind.DECORATOR
        for value, _res, _recv in targets:
            kind, name, bound = value
            if kind is FUNCTION:
                out |= self._returns_at(qn, site, name, bound)
            elif kind is CLASS:
                out.add((INSTANCE, name, 0))
            elif kind is INSTANCE:
                for _callee, _, _, fn in self.call_targets(value):
                    if fn is not None:
                        out |= self.returns(fn)
            elif kind is EXTERNAL:
                if decorator and site.args:
                    out |= self.eval(qn, site.args[0].value)
                elif looks_like_class(name):
                    # an instance of a library class: ext.Cls().fun -> ext.Cls.fun
                    out.add(value)
                elif name in LIBRARY_RESULTS:
                    out.add((EXTERNAL, LIBRARY_RESULTS[name], 0))
            elif kind is ANYTHING:
                out.add(ANY_VALUE)  # what calling anything returns: anything
            elif kind is BUILTIN:
                if name == "type" and len(site.args) == 1:  # ``type(self)``
                    for v in ordered(self.eval(qn, site.args[0].value)):
                        if v[0] is INSTANCE:
                            out |= self.class_and_subclasses(v[1])
                elif name in PASSTHROUGH_BUILTINS and site.args:
                    out |= self.eval(qn, site.args[0].value)
                elif name in ITER_BUILTINS and site.args:  # ``iter(g)`` is ``g``
                    out |= _generators(self.eval(qn, site.args[0].value))
        func = site.func
        if isinstance(func, AttrExpr) and func.attr in CONTAINER_GETTERS:
            args = [a.value for a in site.args]
            out |= self._container_lookup(
                qn, func, args[0] if args else None, args[1] if len(args) > 1 else None
            )
        if isinstance(func, AttrExpr) and func.attr in ("__iter__", "__aiter__"):
            # a generator is its own iterator: the ``__next__`` a ``for`` makes
            # after this resumes it (``flagtrace.generators``)
            out |= _generators(self.eval(qn, func.base))
        if decorator and not targets and site.args:
            out |= self.eval(qn, site.args[0].value)
        return frozenset(out)

    def class_and_subclasses(self, cls: str) -> Values:
        """What ``type(obj)`` or ``obj.__class__`` may be for an instance of ``cls``:
        ``cls`` or any analysed subclass (an instance typed ``cls`` may be of a
        subclass; ``Approximation.CLASSMETHOD_FACTORY``)."""
        return frozenset({(CLASS, cls, 0), *((CLASS, sub, 0) for sub in self.subclasses(cls))})

    # ------------------------------------------------------------ containers

    def _container_lookup(
        self, qn: str, func: AttrExpr, key: Expr | None, default: Expr | None
    ) -> Values:
        """``d.get(k)``, ``d.pop(k)``, ``d.setdefault(k, v)``: the values ``d``
        holds under ``k`` (every value for a key that is no literal: a registry
        looked up by name); ``d.values()`` iterates as ``d`` does."""
        out: set[Value] = set()
        for base in ordered(self.eval(qn, func.base)):
            if base[0] is not CONTAINER:
                continue
            if func.attr == "values":
                out.add(base)
            else:
                out |= self.container_items(base[1], key_text(key), qn)
                if default is not None:  # ``d.get(k, fallback)``: the fallback too
                    out |= self.eval(qn, default)
        return frozenset(out)

    def container_items(self, origin: str, key: str | None, reader: str | None = None) -> Values:
        """Values stored in a container display under ``key`` (None: any key).
        ``reader`` is the scope that asks: when a later round stores more into
        the container, its call sites are resolved again (``rounds``)."""
        if reader is not None:
            self.container_readers[origin].add(reader)
        contents = self._container_contents(origin)
        if key is not None and key in contents:
            # not memoised: a key's items join those stored under unknown keys, so
            # each answer would copy those (16.7M values kept on SGLang 0.5.23)
            return frozenset(contents[key] | contents.get("*", set()))
        memo = self.memo
        found = memo.container_values.get(origin)
        if found is not None:
            memo.note(("items", origin), found)
            return found

        def compute() -> Values:
            out: set[Value] = set()
            for values in self._container_contents(origin).values():
                out |= values
            return frozenset(out)

        return memo.solve(memo.container_values, origin, ("items", origin), compute, EMPTY)

    def _items_of(self, containers: Values, key: str | None, reader: str | None) -> Values:
        """``container_items`` of every container in ``containers`` (container
        values only), joined; the join memoised for the round once none of them is
        being filled. Why: a registry read through a variable that holds dozens
        of lists (``for cls in MODELS``) joined the same hundreds of items again
        at each read, the next cost of SGLang 0.5.23's last rounds."""
        if not containers:
            return EMPTY
        if len(containers) == 1:
            for only in containers:
                return self.container_items(only[1], key, reader)
        if reader is not None:  # a reader, whether or not the join is memoised
            for c in containers:
                self.container_readers[c[1]].add(reader)
        memo = self.memo
        found = memo.container_joins.get((containers, key))
        if found is not None:
            memo.note(("join", (containers, key)), found)
            return found

        def compute() -> Values:
            out: set[Value] = set()
            for c in ordered(containers):
                out |= self.container_items(c[1], key)
            return frozenset(out)

        join = (containers, key)
        return memo.solve(memo.container_joins, join, ("join", join), compute, EMPTY)

    def _container_contents(self, origin: str) -> dict[str, set[Value]]:
        found = self.memo.container_contents.get(origin)
        if found is not None:
            self.memo.note(("contents", origin), found)
            return found
        return self.memo.solve(
            self.memo.container_contents,
            origin,
            ("contents", origin),
            lambda: self._fill_contents(origin),
            {},
        )

    def _fill_contents(self, origin: str) -> dict[str, set[Value]]:
        """A display's items by key, and what the round's stores put into it."""
        contents: dict[str, set[Value]] = defaultdict(set)
        qn, expr = self.run_memo.containers[origin]
        keys: tuple[Expr | None, ...] = (
            expr.keys if expr.keys else tuple(ConstExpr(str(i)) for i in range(len(expr.items)))
        )
        if expr.kind is ContainerKind.SET:
            keys = (None,) * len(expr.items)
        for k, item in zip(keys, expr.items, strict=False):
            slot = key_text(k) if k is not None else "*"
            contents[slot or "*"] |= self.eval(qn, item)
        self.memo.note((STORES, origin), self.memo.store_versions.get(origin, 0))
        for key, values in self.memo.container_stores.get(origin, {}).items():
            contents[key] |= values
        return contents

    def collect_stores(self, records: dict[int, list[Any]] | None = None) -> int:
        """``d[k] = v``, ``d.update(...)``, ``l.append(v)``: what flows into
        containers, gathered once at the start of a round.

        ``records``: per store (its index in ``Program.container_stores``), what
        evaluating its value and container read and what they were, kept from one
        round's collecting to the next while the memo records (as the rounds keep
        a call site's): a store whose reads all answer as they did is not
        evaluated again. Why: collecting evaluated every store again at every
        round, 8.7 and 13.7 s of SGLang 0.5.23's last two rounds. Returns how
        many stores were taken from their records."""
        stores: dict[str, dict[str, set[Value]]] = defaultdict(lambda: defaultdict(set))
        memo = self.memo
        reused = 0
        if not memo.recording:
            records = None
        for index, (qn, base, key, value) in enumerate(self.p.container_stores):
            record = records.get(index) if records is not None else None
            if record is not None and memo.holds(record):
                values, bases = record[-1]
                reused += 1
            elif records is not None:
                memo.frames.append([STATIC])
                try:
                    values, bases = self._store_operands(qn, base, value)
                finally:
                    read = memo.frames.pop()
                if read[0] is TAINTED or memo.last:
                    records.pop(index, None)
                else:
                    read.append((values, bases))
                    records[index] = read
            else:
                values, bases = self._store_operands(qn, base, value)
            if not values:
                continue
            for b in ordered(bases):
                if b[0] is not CONTAINER:
                    continue
                if key == "**":  # update(other_display): merge its keys
                    for v in ordered(values):
                        if v[0] is CONTAINER:
                            for k2, vs in self._container_contents(v[1]).items():
                                stores[b[1]][k2] |= vs
                    continue
                stores[b[1]][key or "*"] |= values
        self.memo.container_stores = stores
        self.memo.container_contents = {}
        self.memo.container_values = {}
        self.memo.container_joins = {}
        return reused

    def _store_operands(self, qn: str, base: Expr, value: Stored) -> tuple[Values, Values]:
        """A container store's values, and (only if there are any) its containers."""
        values = self.eval(qn, value)
        return values, self.eval(qn, base) if values else EMPTY

    def _elements(self, values: set[Value], reader: str | None = None) -> set[Value]:
        """What iterating over ``values`` yields (``reader``: see ``container_items``)."""
        out: set[Value] = set()
        containers = frozenset(v for v in values if v[0] is CONTAINER)
        for v in ordered(values):
            kind, name, _ = v
            if kind is CONTAINER:
                continue  # last, joined: containers sort after what is evaluated here
            if kind is GENERATOR:
                out |= self.generator_values(name)
            elif kind is INSTANCE:
                for it in ordered(self.class_attribute(name, "__iter__")):
                    if it[0] is not FUNCTION:
                        continue
                    for obj in ordered(self.returns(it[1])):
                        if obj[0] is INSTANCE:
                            for nxt in ordered(self.class_attribute(obj[1], "__next__")):
                                if nxt[0] is FUNCTION:
                                    out |= self.returns(nxt[1])
                        elif obj[0] is GENERATOR:
                            out |= self.generator_values(obj[1])
            else:
                out.add(v)
        if containers:
            out |= self._items_of(containers, None, reader)
        return out

    def generator_values(self, qn: str) -> Values:
        scope = self.p.scopes.get(qn)
        if scope is None:
            return EMPTY
        out: set[Value] = set()
        for y in scope.yields:
            out |= self.eval(qn, y)
        return frozenset(out)


def _generators(values: Values) -> Values:
    """The generator objects among ``values``."""
    return frozenset(v for v in values if v[0] is GENERATOR)
